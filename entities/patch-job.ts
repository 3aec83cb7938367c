import { randomUUID } from 'node:crypto';
import { Collection, Entity, Index, ManyToOne, OneToMany, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Device } from './device.js';
import { Organization } from './organization.js';
import { PatchPolicy } from './patch.js';

/*
 * Patch install jobs, owned by the patching domain: what a patch policy sends its devices to install
 * (one job per run of the policy, one row per device with the patches it was given), and when each
 * cron policy last fired.
 */

/** A run of a patch policy's installs; at most one unfinished (scheduled or running) per policy. */
@Entity()
@Index({ properties: ['orgId', 'createdAt', 'id'] })
@Unique({ name: 'patch_job_one_open_per_policy', expression: `create unique index "patch_job_one_open_per_policy" on "patch_job" ("policy_id") where "status" in ('scheduled', 'running')` })
export class PatchJob extends BaseEntity<'status' | 'rerun' | 'completedAt' | 'devices'> {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  /** null once the policy is deleted */
  @ManyToOne(() => PatchPolicy, { mapToPk: true, fieldName: 'policy_id', nullable: true, deleteRule: 'set null' })
  policyId!: string | null;

  /** `scheduled`, `running`, `completed`, `partial`, `failed`, `cancelled` */
  @Property({ type: 'string', length: 20 })
  status: string = 'scheduled';

  /** the policy's at the job's start: `never`, `if_required`, `always` */
  @Property({ type: 'string', length: 20 })
  rebootBehavior!: string;

  /** a trigger came while the job was unfinished: the policy runs again once it ends */
  @Property({ type: 'boolean' })
  rerun: boolean = false;

  @Property({ type: 'timestamptz', nullable: true })
  completedAt: Date | null = null;

  @OneToMany(() => PatchJobDevice, (device) => device.jobId)
  devices = new Collection<PatchJobDevice>(this);
}

/** One device of a job: the patches it was given and where its install stands. */
@Entity()
@Unique({ properties: ['jobId', 'deviceId'] })
@Index({ properties: ['deviceId'] })
@Index({ properties: ['commandId'] })
@Index({ properties: ['status'] })
export class PatchJobDevice {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => PatchJob, { mapToPk: true, fieldName: 'job_id', deleteRule: 'cascade' })
  jobId!: string;

  @ManyToOne(() => Device, { mapToPk: true, fieldName: 'device_id', deleteRule: 'cascade' })
  deviceId!: string;

  /** `pending` (command queued), `deferred` (a maintenance window defers patching), `sent`, `completed`, `failed` */
  @Property({ type: 'string', length: 20 })
  status!: string;

  @Property({ type: 'json' })
  patchIds!: string[];

  /** its install_patches command, once queued */
  @Property({ type: 'uuid', nullable: true })
  commandId: string | null = null;

  /** when that command times out unanswered */
  @Property({ type: 'timestamptz', nullable: true })
  timeoutAt: Date | null = null;

  @Property({ type: 'timestamptz', onUpdate: () => new Date() })
  updatedAt: Date = new Date();
}

/** The last instant of a cron patch policy's schedule that fired (so a tick fires each instant once). */
@Entity()
export class PatchScheduleFire {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => PatchPolicy, { mapToPk: true, fieldName: 'policy_id', deleteRule: 'cascade', unique: true })
  policyId!: string;

  @Property({ type: 'timestamptz' })
  firedFor!: Date;
}
