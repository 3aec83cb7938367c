import { randomUUID } from 'node:crypto';
import { Collection, Entity, Index, ManyToOne, OneToMany, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Device } from './device.js';
import { Organization } from './organization.js';

/*
 * Patching, owned by the patching domain: the patches an organization's agents reported (one row per
 * organization, source and the source's identifier), each device's status of them (the device's last
 * patch report), and the approval decisions taken on them.
 */

/** A patch (an update, a package version) known to an organization, from its agents' reports. */
@Entity()
@Unique({ properties: ['orgId', 'source', 'externalId'] })
@Index({ properties: ['orgId', 'createdAt', 'id'] })
export class Patch extends BaseEntity<'severity' | 'kbNumber' | 'packageName' | 'version' | 'vendor' | 'releaseDate' | 'cveIds' | 'cvssScore' | 'enrichedAt' | 'approvalStatus' | 'deferUntil' | 'deviceStatuses'> {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  /** `microsoft`, `apple`, `linux`, `third_party`, `custom` */
  @Property({ type: 'string', length: 20 })
  source!: string;

  /** the source's identifier of the patch (a KB's update id, a package and version) */
  @Property({ type: 'string', length: 200 })
  externalId!: string;

  @Property({ type: 'string', length: 500 })
  title!: string;

  /** `critical`, `important`, `moderate`, `low`, `unknown` */
  @Property({ type: 'string', length: 20 })
  severity: string = 'unknown';

  @Property({ type: 'string', length: 50, nullable: true })
  kbNumber: string | null = null;

  @Property({ type: 'string', length: 300, nullable: true })
  packageName: string | null = null;

  @Property({ type: 'string', length: 200, nullable: true })
  version: string | null = null;

  @Property({ type: 'string', length: 200, nullable: true })
  vendor: string | null = null;

  /** a calendar date, `YYYY-MM-DD` */
  @Property({ type: 'date', nullable: true })
  releaseDate: string | null = null;

  /** filled by enrichment from a public vulnerability database (not yet) */
  @Property({ type: 'json' })
  cveIds: string[] = [];

  @Property({ type: 'double', nullable: true })
  cvssScore: number | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  enrichedAt: Date | null = null;

  /** the last decision: `pending`, `approved`, `declined`, `deferred` (a deferral past `deferUntil` reads as pending) */
  @Property({ type: 'string', length: 20 })
  approvalStatus: string = 'pending';

  @Property({ type: 'timestamptz', nullable: true })
  deferUntil: Date | null = null;

  @OneToMany(() => PatchDeviceStatus, (status) => status.patchId)
  deviceStatuses = new Collection<PatchDeviceStatus>(this);
}

/** A device's status of a patch, as its last patch report said. */
@Entity()
@Unique({ properties: ['deviceId', 'patchId'] })
@Index({ properties: ['patchId', 'status'] })
export class PatchDeviceStatus {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Patch, { mapToPk: true, fieldName: 'patch_id', deleteRule: 'cascade' })
  patchId!: string;

  @ManyToOne(() => Device, { mapToPk: true, fieldName: 'device_id', deleteRule: 'cascade' })
  deviceId!: string;

  /** `missing`, `installed`, `failed`, `pending_reboot` */
  @Property({ type: 'string', length: 20 })
  status!: string;

  @Property({ type: 'timestamptz' })
  reportedAt!: Date;
}

/** One approval decision on a patch (the latest is the patch's `approvalStatus`). */
@Entity()
@Index({ properties: ['orgId', 'decidedAt', 'id'] })
@Index({ properties: ['patchId'] })
export class PatchApproval {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @ManyToOne(() => Patch, { mapToPk: true, fieldName: 'patch_id', deleteRule: 'cascade' })
  patchId!: string;

  /** `approved`, `declined`, `deferred` */
  @Property({ type: 'string', length: 20 })
  status!: string;

  /** the user who decided; null for an API key or a policy */
  @Property({ type: 'uuid', nullable: true })
  decidedBy: string | null = null;

  /** the patch policy that decided; null for a manual decision */
  @Property({ type: 'uuid', nullable: true })
  policyId: string | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  deferUntil: Date | null = null;

  @Property({ type: 'string', length: 1000, nullable: true })
  note: string | null = null;

  @Property({ type: 'timestamptz' })
  decidedAt!: Date;
}

/** An auto-approval rule: a patch matches when every field given holds. */
export interface PatchAutoApproveRule {
  sources?: string[];
  severities?: string[];
  minAgeDays?: number;
}

/** When approved patches are installed: at once, or at a cron's times in an IANA time zone. */
export interface PatchPolicySchedule {
  type: string;
  cron?: string;
  timezone?: string;
}

/**
 * An organization's patch policy: the devices it targets (its sites, groups or devices; null: every
 * device), the rules by which it approves their pending patches, and when and how they are installed.
 */
@Entity()
@Unique({ properties: ['orgId', 'name'] })
@Index({ properties: ['orgId', 'createdAt', 'id'] })
export class PatchPolicy extends BaseEntity<'enabled' | 'targets'> {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'boolean' })
  enabled: boolean = true;

  @Property({ type: 'json', nullable: true })
  targets: { siteIds?: string[]; groupIds?: string[]; deviceIds?: string[] } | null = null;

  @Property({ type: 'json' })
  autoApprove!: PatchAutoApproveRule[];

  @Property({ type: 'json' })
  schedule!: PatchPolicySchedule;

  /** `never`, `if_required`, `always` */
  @Property({ type: 'string', length: 20 })
  rebootBehavior!: string;
}
