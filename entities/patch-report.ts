import { Entity, Index, ManyToOne, Property } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Organization } from './organization.js';

/** The filters a compliance report was asked with, and the requester's reach (the sites they saw) at the time. */
export interface PatchReportScope {
  /** the requester's sites: null when they saw the whole organization */
  siteIds: string[] | null;
  siteId?: string;
  deviceId?: string;
  source?: string;
  severity?: string;
}

/**
 * A patch compliance report (CSV or PDF), owned by the patching domain: asked by one principal of an
 * organization, built by a job, its file kept in the row until it expires.
 */
@Entity()
@Index({ properties: ['expiresAt'] })
@Index({ properties: ['status', 'createdAt'] })
@Index({ properties: ['orgId', 'requestedBy'] })
export class PatchReport extends BaseEntity<'status' | 'error' | 'content' | 'sizeBytes' | 'startedAt' | 'attempts' | 'completedAt'> {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  /** the user or API key that asked (the only one who reads it) */
  @Property({ type: 'uuid' })
  requestedBy!: string;

  /** `csv`, `pdf` */
  @Property({ type: 'string', length: 10 })
  format!: string;

  /** `queued`, `running`, `completed`, `failed` */
  @Property({ type: 'string', length: 20 })
  status: string = 'queued';

  @Property({ type: 'json' })
  scope!: PatchReportScope;

  /** why it failed */
  @Property({ type: 'string', length: 500, nullable: true })
  error: string | null = null;

  /** the file, once completed */
  @Property({ type: 'blob', nullable: true, lazy: true })
  content: Buffer | null = null;

  @Property({ type: 'integer', nullable: true })
  sizeBytes: number | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  startedAt: Date | null = null;

  /** builds started: a report that keeps killing its build stops being retried */
  @Property({ type: 'integer', default: 0 })
  attempts: number = 0;

  @Property({ type: 'timestamptz', nullable: true })
  completedAt: Date | null = null;

  /** after this the report reads as gone and the due work deletes it */
  @Property({ type: 'timestamptz' })
  expiresAt!: Date;
}
