import { Entity, Index, ManyToOne, Property, Unique } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Organization } from './organization.js';
import { Site } from './site.js';

/** `maintenance`: an active maintenance occurrence covers the device (presence is still kept in `lastSeenAt`). */
export const DEVICE_STATUSES = ['pending', 'online', 'offline', 'updating', 'maintenance', 'decommissioned'] as const;
export type DeviceStatus = (typeof DEVICE_STATUSES)[number];
export const OS_TYPES = ['windows', 'macos', 'linux'] as const;
export type OsType = (typeof OS_TYPES)[number];

/**
 * A managed machine and its agent. The agent authenticates with `authToken`, stored only as a hash;
 * a new enrollment of the same `machineId` replaces the token instead of adding a device.
 */
@Entity()
@Unique({ properties: ['orgId', 'machineId'] })
// Keyset pages per sort: (sort column, id) under the tenant filter.
@Index({ properties: ['orgId', 'hostname', 'id'] })
@Index({ properties: ['orgId', 'lastSeenAt', 'id'] })
@Index({ properties: ['orgId', 'enrolledAt', 'id'] })
@Index({ properties: ['status', 'lastSeenAt'] })
export class Device extends BaseEntity<
  | 'siteId'
  | 'status'
  | 'osType'
  | 'osVersion'
  | 'architecture'
  | 'agentVersion'
  | 'machineId'
  | 'hardwareInfo'
  | 'metrics'
  | 'tokenHash'
  | 'autoUpdate'
  | 'watchdogStatus'
  | 'mainAgentSilentSince'
  | 'lastSeenAt'
  | 'enrolledAt'
  | 'statusChangedAt'
  | 'decommissionedAt'
  | 'updatingToVersion'
  | 'pinnedAgentVersion'
  | 'tags'
> {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @ManyToOne(() => Site, { mapToPk: true, fieldName: 'site_id', deleteRule: 'set null', nullable: true })
  @Index()
  siteId: string | null = null;

  /** the id the agent calls itself by in /agents/:agentId routes */
  @Property({ type: 'uuid' })
  @Unique()
  agentId!: string;

  @Property({ type: 'string', length: 255 })
  hostname!: string;

  @Property({ type: 'string', length: 20 })
  status: DeviceStatus = 'pending';

  @Property({ type: 'string', length: 20, nullable: true })
  osType: OsType | null = null;

  @Property({ type: 'string', length: 100, nullable: true })
  osVersion: string | null = null;

  @Property({ type: 'string', length: 50, nullable: true })
  architecture: string | null = null;

  @Property({ type: 'string', length: 50, nullable: true })
  agentVersion: string | null = null;

  @Property({ type: 'string', length: 255, nullable: true })
  machineId: string | null = null;

  @Property({ type: 'json', nullable: true })
  hardwareInfo: Record<string, unknown> | null = null;

  /** the last heartbeat's metrics */
  @Property({ type: 'json', nullable: true })
  metrics: Record<string, unknown> | null = null;

  @Property({ type: 'string', length: 64, nullable: true, hidden: true })
  @Unique()
  tokenHash: string | null = null;

  @Property({ type: 'boolean' })
  autoUpdate = true;

  @Property({ type: 'string', length: 50, nullable: true })
  watchdogStatus: string | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  mainAgentSilentSince: Date | null = null;

  // Never null, so keyset pages sort them without NULL cases: a provisioned device not yet claimed
  // (status `pending`) carries its creation time here, and the view shows null.
  @Property({ type: 'timestamptz' })
  lastSeenAt: Date = new Date();

  @Property({ type: 'timestamptz' })
  enrolledAt: Date = new Date();

  @Property({ type: 'timestamptz' })
  statusChangedAt: Date = new Date();

  @Property({ type: 'timestamptz', nullable: true })
  decommissionedAt: Date | null = null;

  /** free-form labels (groups filter on them) */
  @Property({ type: 'json' })
  tags: string[] = [];

  /** while `updating`: the version whose first heartbeat ends the update */
  @Property({ type: 'string', length: 50, nullable: true })
  updatingToVersion: string | null = null;

  /** a registered agent build the device is offered as `upgradeTo` until it runs it (a staged rollout's), instead of the promoted one */
  @Property({ type: 'string', length: 50, nullable: true })
  pinnedAgentVersion: string | null = null;
}
