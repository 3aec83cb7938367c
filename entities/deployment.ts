import { randomUUID } from 'node:crypto';
import { Entity, Index, ManyToOne, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Device } from './device.js';
import { Organization } from './organization.js';

/*
 * The deployments domain's tables: staged rollouts (a change handed to an organization's devices wave
 * by wave) and each targeted device's place and progress in one.
 */

export const ROLLOUT_TYPES = ['script', 'software', 'policy', 'agent_version'] as const;
export type RolloutType = (typeof ROLLOUT_TYPES)[number];
export const ROLLOUT_STATUSES = ['draft', 'ready', 'running', 'paused', 'completed', 'cancelled'] as const;
export type RolloutStatus = (typeof ROLLOUT_STATUSES)[number];
export const PAUSE_REASONS = ['manual', 'failure_threshold', 'success_threshold'] as const;
export type PauseReason = (typeof PAUSE_REASONS)[number];
export const ROLLOUT_DEVICE_STATUSES = ['pending', 'running', 'succeeded', 'failed', 'cancelled'] as const;
export type RolloutDeviceStatus = (typeof ROLLOUT_DEVICE_STATUSES)[number];

/** How the devices are cut into waves: shares of them, or numbers of them. */
export type WavePlan = { percent: number }[] | { count: number }[];

/** What a rollout hands out, by type. */
export type RolloutPayload = { scriptId: string; parameters?: Record<string, unknown> } | { catalogId: string; versionId: string } | { policyId: string } | { version: string };

/** A staged rollout of one change to an organization's devices. */
@Entity()
@Index({ properties: ['orgId', 'createdAt', 'id'] })
@Index({ properties: ['status'] })
export class Rollout extends BaseEntity<'status' | 'pauseReason' | 'currentWave' | 'acceptedFailures' | 'acceptedWave' | 'startedAt' | 'completedAt' | 'createdBy'> {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'string', length: 20 })
  type!: RolloutType;

  @Property({ type: 'json' })
  payload!: RolloutPayload;

  /** `{deviceIds?, groupIds?, siteIds?}` of the organization */
  @Property({ type: 'json' })
  targets!: { deviceIds?: string[]; groupIds?: string[]; siteIds?: string[] };

  @Property({ type: 'json' })
  waves!: WavePlan;

  @Property({ type: 'integer' })
  successThresholdPercent!: number;

  @Property({ type: 'integer' })
  failureThresholdPercent!: number;

  @Property({ type: 'string', length: 20 })
  status: RolloutStatus = 'draft';

  @Property({ type: 'string', length: 20, nullable: true })
  pauseReason: PauseReason | null = null;

  /** the last wave started; 0 before the start */
  @Property({ type: 'integer' })
  currentWave: number = 0;

  /** failures a resume accepted: the failure threshold counts only those beyond them */
  @Property({ type: 'integer' })
  acceptedFailures: number = 0;

  /** a wave a resume let pass short of the success threshold; 0 for none */
  @Property({ type: 'integer' })
  acceptedWave: number = 0;

  @Property({ type: 'uuid', nullable: true })
  createdBy: string | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  startedAt: Date | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  completedAt: Date | null = null;
}

/** A targeted device: its wave (from 1), its place in the rollout's order, and how its change went. */
@Entity()
@Unique({ properties: ['rolloutId', 'deviceId'] })
@Index({ properties: ['rolloutId', 'position'] })
@Index({ properties: ['commandId'] })
@Index({ properties: ['deviceId'] })
export class RolloutDevice {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Rollout, { mapToPk: true, fieldName: 'rollout_id', deleteRule: 'cascade' })
  rolloutId!: string;

  @ManyToOne(() => Device, { mapToPk: true, fieldName: 'device_id', deleteRule: 'cascade' })
  deviceId!: string;

  @Property({ type: 'integer' })
  wave!: number;

  /** the device's place in the rollout's stable order (by device id), from 0 */
  @Property({ type: 'integer' })
  position!: number;

  @Property({ type: 'string', length: 20 })
  status: RolloutDeviceStatus = 'pending';

  /** the command that carries its change (script, software), once queued */
  @Property({ type: 'uuid', nullable: true })
  commandId: string | null = null;

  /** why it failed, or what it settled as (a policy's compliance status) */
  @Property({ type: 'string', length: 500, nullable: true })
  reason: string | null = null;

  /** when its change was handed out (policy and agent versions: results older than this do not count) */
  @Property({ type: 'timestamptz', nullable: true })
  startedAt: Date | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  finishedAt: Date | null = null;
}
