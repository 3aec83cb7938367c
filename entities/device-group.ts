import { randomUUID } from 'node:crypto';
import { Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Device } from './device.js';
import { Organization } from './organization.js';
import { Site } from './site.js';

export const DEVICE_GROUP_TYPES = ['static', 'dynamic'] as const;
export type DeviceGroupType = (typeof DEVICE_GROUP_TYPES)[number];
/** why a device is in a group: added by hand (static), matched by the filter, or pinned in (dynamic) */
export const GROUP_MEMBER_SOURCES = ['manual', 'filter', 'pin'] as const;
export type GroupMemberSource = (typeof GROUP_MEMBER_SOURCES)[number];
export const GROUP_PIN_MODES = ['include', 'exclude'] as const;
export type GroupPinMode = (typeof GROUP_PIN_MODES)[number];
export const GROUP_LOG_ACTIONS = ['joined', 'left'] as const;
export type GroupLogAction = (typeof GROUP_LOG_ACTIONS)[number];
export const GROUP_LOG_REASONS = ['manual', 'filter', 'pin', 'unpin', 'device_moved', 'device_decommissioned'] as const;
export type GroupLogReason = (typeof GROUP_LOG_REASONS)[number];

/**
 * A set of devices of one organization (optionally of one of its sites): `static` groups list their
 * devices by hand, `dynamic` ones hold the devices their `filter` matches, materialized in
 * `device_group_member` and kept current as devices change.
 */
@Entity()
@Unique({ properties: ['orgId', 'name'] })
export class DeviceGroup extends BaseEntity<'siteId' | 'description' | 'filter' | 'createdBy'> {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  /** a site-scoped group holds only devices of this site, and goes with it */
  @ManyToOne(() => Site, { mapToPk: true, fieldName: 'site_id', deleteRule: 'cascade', nullable: true })
  @Index()
  siteId: string | null = null;

  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'text', nullable: true })
  description: string | null = null;

  @Property({ type: 'string', length: 20 })
  type!: DeviceGroupType;

  /** dynamic groups: the typed filter (the service's `GroupFilterSchema`), never raw query operators */
  @Property({ type: 'json', nullable: true })
  filter: Record<string, unknown> | null = null;

  @Property({ type: 'uuid', nullable: true })
  createdBy: string | null = null;
}

/**
 * A device's standing in a group: a member (`source` set), and/or pinned in or out of a dynamic
 * group whatever its filter says. A row with an `exclude` pin and no `source` is not a member.
 */
@Entity()
@Unique({ properties: ['groupId', 'deviceId'] })
export class DeviceGroupMember extends BaseEntity<'source' | 'pin' | 'joinedAt'> {
  @ManyToOne(() => DeviceGroup, { mapToPk: true, fieldName: 'group_id', deleteRule: 'cascade' })
  groupId!: string;

  @ManyToOne(() => Device, { mapToPk: true, fieldName: 'device_id', deleteRule: 'cascade' })
  @Index()
  deviceId!: string;

  @Property({ type: 'string', length: 20, nullable: true })
  source: GroupMemberSource | null = null;

  @Property({ type: 'string', length: 20, nullable: true })
  pin: GroupPinMode | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  joinedAt: Date | null = null;
}

/** One device joining or leaving a group, and why (append-only). */
@Entity()
@Index({ properties: ['groupId', 'createdAt', 'id'] })
export class DeviceGroupLog {
  [OptionalProps]?: 'id' | 'createdAt' | 'actorId';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => DeviceGroup, { mapToPk: true, fieldName: 'group_id', deleteRule: 'cascade' })
  groupId!: string;

  @ManyToOne(() => Device, { mapToPk: true, fieldName: 'device_id', deleteRule: 'cascade' })
  @Index()
  deviceId!: string;

  /** the device's hostname when it happened */
  @Property({ type: 'string', length: 255 })
  hostname!: string;

  @Property({ type: 'string', length: 10 })
  action!: GroupLogAction;

  @Property({ type: 'string', length: 30 })
  reason!: GroupLogReason;

  /** the user or API key that caused it; null when a device change did */
  @Property({ type: 'uuid', nullable: true })
  actorId: string | null = null;

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();
}
