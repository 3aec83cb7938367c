import { randomUUID } from 'node:crypto';
import { Entity, Index, ManyToOne, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { Device } from './device.js';
import { Organization } from './organization.js';

/*
 * Security posture, owned by the security domain: what each device's agent last reported of its
 * protections (the inventory's `security` part), and the threats its antivirus detected.
 */

export interface AntivirusState {
  product: string;
  enabled: boolean;
  upToDate: boolean;
}

export interface PasswordPolicyState {
  minLength: number;
  complexity: boolean;
}

/** A device's protections, as its agent last reported them (one row per device, replaced by each report). */
@Entity()
@Unique({ properties: ['deviceId'] })
@Index({ properties: ['orgId'] })
export class DeviceSecurityState {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Device, { mapToPk: true, fieldName: 'device_id', deleteRule: 'cascade' })
  deviceId!: string;

  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @Property({ type: 'json', nullable: true })
  antivirus: AntivirusState | null = null;

  @Property({ type: 'boolean', nullable: true })
  firewallEnabled: boolean | null = null;

  @Property({ type: 'boolean', nullable: true })
  encryptionEnabled: boolean | null = null;

  @Property({ type: 'json', nullable: true })
  passwordPolicy: PasswordPolicyState | null = null;

  /** the names of the device's local administrators */
  @Property({ type: 'json' })
  localAdmins: string[] = [];

  @Property({ type: 'timestamptz' })
  reportedAt!: Date;
}

/** A threat a device's antivirus detected, and what was done about it since. */
@Entity()
@Unique({ properties: ['deviceId', 'externalId'] })
@Index({ properties: ['orgId', 'detectedAt', 'id'] })
// the sweep of actions whose command went unanswered
@Index({ properties: ['status', 'updatedAt'] })
export class SecurityThreat {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @ManyToOne(() => Device, { mapToPk: true, fieldName: 'device_id', deleteRule: 'cascade' })
  deviceId!: string;

  /** the antivirus's identifier of the detection */
  @Property({ type: 'string', length: 200 })
  externalId!: string;

  @Property({ type: 'string', length: 500 })
  name!: string;

  /** `critical`, `high`, `medium`, `low` */
  @Property({ type: 'string', length: 20 })
  severity!: string;

  @Property({ type: 'string', length: 2000, nullable: true })
  path: string | null = null;

  /** `detected`, `quarantining`, `quarantined`, `removing`, `removed`, `restoring`, `restored`, `failed` */
  @Property({ type: 'string', length: 20 })
  status: string = 'detected';

  @Property({ type: 'timestamptz' })
  detectedAt!: Date;

  @Property({ type: 'timestamptz' })
  updatedAt!: Date;
}

/** A scan a user asked a device's antivirus for (`security_scan` command), and what it found. */
@Entity()
@Index({ properties: ['deviceId', 'createdAt', 'id'] })
// the sweep of scans whose command went unanswered
@Index({ properties: ['status', 'createdAt'] })
export class SecurityScan {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @ManyToOne(() => Device, { mapToPk: true, fieldName: 'device_id', deleteRule: 'cascade' })
  deviceId!: string;

  /** `quick`, `full` */
  @Property({ type: 'string', length: 20 })
  type!: string;

  /** `queued`, `running`, `completed`, `failed` */
  @Property({ type: 'string', length: 20 })
  status: string = 'queued';

  /** the threats the scan reported (null until it completed) */
  @Property({ type: 'integer', nullable: true })
  threatsFound: number | null = null;

  /** the security_scan device command that carries it */
  @Property({ type: 'uuid', nullable: true })
  @Index()
  commandId: string | null = null;

  @Property({ type: 'uuid', nullable: true })
  createdBy: string | null = null;

  @Property({ type: 'timestamptz' })
  createdAt!: Date;

  @Property({ type: 'timestamptz', nullable: true })
  completedAt: Date | null = null;
}
