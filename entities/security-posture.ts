import { randomUUID } from 'node:crypto';
import { Entity, Index, ManyToOne, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Device } from './device.js';
import { Organization } from './organization.js';

/*
 * Security posture, owned by the security domain: the policies that set the thresholds a device's
 * score is measured against, each device's current score, its samples for trends, and the
 * recommendations its failing factors raise.
 */

export interface SecurityPolicySettings {
  passwordMinLength: number;
  maxLocalAdmins: number;
  /** stored for the threats side (quarantine on detection); nothing here acts on it */
  autoQuarantine: boolean;
}

/** An organization's security policy: the devices it targets (null: every device) and its thresholds. */
@Entity()
@Index({ properties: ['orgId', 'createdAt', 'id'] })
export class SecurityPolicy extends BaseEntity<'targets'> {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'json', nullable: true })
  targets: { siteIds?: string[]; groupIds?: string[]; deviceIds?: string[] } | null = null;

  @Property({ type: 'json' })
  settings!: SecurityPolicySettings;
}

export interface SecurityFactor {
  key: string;
  weight: number;
  earned: number;
}

/** A device's current security score and how it was earned (one row per device, replaced on each recompute). */
@Entity()
@Unique({ properties: ['deviceId'] })
@Index({ properties: ['orgId'] })
export class DeviceSecurityScore {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Device, { mapToPk: true, fieldName: 'device_id', deleteRule: 'cascade' })
  deviceId!: string;

  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @Property({ type: 'double' })
  score!: number;

  @Property({ type: 'json' })
  factors!: SecurityFactor[];

  @Property({ type: 'timestamptz' })
  computedAt!: Date;
}

/** A device's score as it changed (a row per change, the first score included), for trends. */
@Entity()
@Index({ properties: ['deviceId', 'recordedAt'] })
@Index({ properties: ['orgId', 'recordedAt'] })
export class SecurityScoreSample {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Device, { mapToPk: true, fieldName: 'device_id', deleteRule: 'cascade' })
  deviceId!: string;

  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @Property({ type: 'double' })
  score!: number;

  @Property({ type: 'timestamptz' })
  recordedAt!: Date;
}

/** What to do about one failing factor of one device (one row per device and factor, kept in sync on each recompute). */
@Entity()
@Unique({ properties: ['deviceId', 'factor'] })
@Index({ properties: ['orgId', 'createdAt', 'id'] })
export class SecurityRecommendation {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @ManyToOne(() => Device, { mapToPk: true, fieldName: 'device_id', deleteRule: 'cascade' })
  deviceId!: string;

  /** the score factor's key */
  @Property({ type: 'string', length: 40 })
  factor!: string;

  /** `open`, `completed`, `dismissed` */
  @Property({ type: 'string', length: 20 })
  status: string = 'open';

  @Property({ type: 'string', length: 200 })
  title!: string;

  @Property({ type: 'string', length: 1000 })
  message!: string;

  @Property({ type: 'timestamptz' })
  createdAt!: Date;

  @Property({ type: 'timestamptz' })
  updatedAt!: Date;
}
