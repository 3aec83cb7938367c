import { Entity, Index, ManyToOne, Property, Unique } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Device } from './device.js';
import { Organization } from './organization.js';
import { Site } from './site.js';

/**
 * A secret an agent enrolls with, stored as a hash with a visible prefix. Null `expiresAt` and
 * `maxUsage` mean no expiry and no limit (mass deployment). A provisioning key claims `deviceId`.
 */
@Entity()
export class EnrollmentKey extends BaseEntity<'siteId' | 'expiresAt' | 'maxUsage' | 'usageCount' | 'createdBy' | 'deviceId' | 'lastUsedAt'> {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  @Index()
  orgId!: string;

  @ManyToOne(() => Site, { mapToPk: true, fieldName: 'site_id', deleteRule: 'cascade', nullable: true })
  siteId: string | null = null;

  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'string', length: 32 })
  @Unique()
  prefix!: string;

  @Property({ type: 'string', length: 64, hidden: true })
  @Unique()
  keyHash!: string;

  @Property({ type: 'timestamptz', nullable: true })
  expiresAt: Date | null = null;

  @Property({ type: 'integer', nullable: true })
  maxUsage: number | null = null;

  @Property({ type: 'integer' })
  usageCount = 0;

  @Property({ type: 'timestamptz', nullable: true })
  lastUsedAt: Date | null = null;

  @Property({ type: 'uuid', nullable: true })
  createdBy: string | null = null;

  /** a provisioning key: single use, and the enrollment takes over this pre-created device */
  @ManyToOne(() => Device, { mapToPk: true, fieldName: 'device_id', deleteRule: 'cascade', nullable: true })
  deviceId: string | null = null;
}
