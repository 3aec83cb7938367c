import { ArrayType, Entity, Index, ManyToOne, Property, Unique } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Organization } from './organization.js';
import { Site } from './site.js';

export const RECURRENCE_TYPES = ['once', 'daily', 'weekly', 'monthly'] as const;
export type RecurrenceType = (typeof RECURRENCE_TYPES)[number];
export const MAINTENANCE_WINDOW_STATUSES = ['active', 'cancelled'] as const;
export type MaintenanceWindowStatus = (typeof MAINTENANCE_WINDOW_STATUSES)[number];
/** scheduled → active → completed; scheduled or active → cancelled (docs/decisions.md). */
export const OCCURRENCE_STATUSES = ['scheduled', 'active', 'completed', 'cancelled'] as const;
export type OccurrenceStatus = (typeof OCCURRENCE_STATUSES)[number];

/** How a window repeats, in its time zone (the service's `RecurrenceSchema`). */
export interface Recurrence {
  type: RecurrenceType;
  /** weekly: 0–6, Sunday 0 */
  daysOfWeek?: number[];
  /** monthly: 1–31; months without that day are skipped */
  dayOfMonth?: number;
  /** a local date (YYYY-MM-DD) in the window's time zone: no occurrence starts after that day */
  until?: string;
}

/**
 * A recurring period during which targeted devices are under maintenance: its start is a local date-time
 * in `timezone`, so occurrences follow the zone's daylight-saving changes. Empty targets mean the whole
 * organization.
 */
@Entity()
export class MaintenanceWindow extends BaseEntity<'siteId' | 'status' | 'cancelledAt' | 'createdBy' | 'scheduledThrough'> {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  @Index()
  orgId!: string;

  /** the one site every target lies in, if any: site-limited callers see only their sites' windows */
  @ManyToOne(() => Site, { mapToPk: true, fieldName: 'site_id', deleteRule: 'cascade', nullable: true })
  @Index()
  siteId: string | null = null;

  @Property({ type: 'string', length: 255 })
  name!: string;

  /** an IANA time zone */
  @Property({ type: 'string', length: 64 })
  timezone!: string;

  /** the first occurrence's local start in `timezone`, `YYYY-MM-DDTHH:mm:ss` */
  @Property({ type: 'string', length: 19 })
  startsAt!: string;

  @Property({ type: 'integer' })
  durationMinutes!: number;

  @Property({ type: 'json' })
  recurrence!: Recurrence;

  @Property({ type: ArrayType, columnType: 'uuid[]' })
  targetSiteIds!: string[];

  @Property({ type: ArrayType, columnType: 'uuid[]' })
  targetGroupIds!: string[];

  @Property({ type: ArrayType, columnType: 'uuid[]' })
  targetDeviceIds!: string[];

  @Property({ type: 'boolean' })
  suppressAlerts!: boolean;

  @Property({ type: 'boolean' })
  deferUpdates!: boolean;

  @Property({ type: 'boolean' })
  deferPatching!: boolean;

  @Property({ type: 'string', length: 20 })
  status: MaintenanceWindowStatus = 'active';

  @Property({ type: 'timestamptz', nullable: true })
  cancelledAt: Date | null = null;

  /** occurrences exist as rows up to this instant (the scheduling horizon); later ones are computed when read */
  @Property({ type: 'timestamptz', nullable: true })
  scheduledThrough: Date | null = null;

  @Property({ type: 'uuid', nullable: true })
  createdBy: string | null = null;
}

/** One period of a window, as UTC instants; its start and end are scheduled as jobs. */
@Entity()
@Unique({ properties: ['windowId', 'startsAt'] })
@Index({ properties: ['status', 'startsAt'] })
@Index({ properties: ['orgId', 'status'] })
export class MaintenanceOccurrence extends BaseEntity<'siteId' | 'status' | 'startedAt' | 'endedAt'> {
  @ManyToOne(() => MaintenanceWindow, { mapToPk: true, fieldName: 'window_id', deleteRule: 'cascade' })
  windowId!: string;

  /** the window's, copied so that occurrence lists filter by tenant without a join */
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @ManyToOne(() => Site, { mapToPk: true, fieldName: 'site_id', deleteRule: 'cascade', nullable: true })
  siteId: string | null = null;

  @Property({ type: 'timestamptz' })
  startsAt!: Date;

  @Property({ type: 'timestamptz' })
  endsAt!: Date;

  @Property({ type: 'string', length: 20 })
  status: OccurrenceStatus = 'scheduled';

  /** when it actually began (by its schedule or by hand) */
  @Property({ type: 'timestamptz', nullable: true })
  startedAt: Date | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  endedAt: Date | null = null;
}
