import { randomUUID } from 'node:crypto';
import { Entity, Index, ManyToOne, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Device } from './device.js';
import { Organization } from './organization.js';
import type { SoftwareInstaller } from './software.js';

/*
 * Software deployments, owned by the software domain: a catalog version installed on (or uninstalled
 * from) an organization's devices, and each device's result.
 */

/** When a deployment's commands go out. */
export type SoftwareDeploymentSchedule = { type: 'now' } | { type: 'at'; at: string } | { type: 'maintenance_window' };

/** A catalog version sent to devices; the version's name and installers are kept, so later catalog changes do not change it. */
@Entity()
@Index({ properties: ['orgId', 'createdAt', 'id'] })
@Index({ properties: ['status'] })
export class SoftwareDeployment extends BaseEntity<'status' | 'completedAt' | 'dueAt' | 'createdBy'> {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  /** the package and version (no foreign keys: a deployment outlives the catalog rows it came from) */
  @Property({ type: 'uuid' })
  catalogId!: string;

  @Property({ type: 'uuid' })
  versionId!: string;

  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'string', length: 100 })
  version!: string;

  @Property({ type: 'json' })
  installers!: SoftwareInstaller[];

  /** `install` or `uninstall` */
  @Property({ type: 'string', length: 20 })
  action!: string;

  /** the selectors named (the common target's normal form); null: the whole organization */
  @Property({ type: 'json', nullable: true })
  targets: { siteIds?: string[]; groupIds?: string[]; deviceIds?: string[] } | null = null;

  @Property({ type: 'json' })
  schedule!: SoftwareDeploymentSchedule;

  /** not before this instant are commands queued (`at` schedules); null: at once */
  @Property({ type: 'timestamptz', nullable: true })
  dueAt: Date | null = null;

  /** `scheduled`, `running`, `completed`, `partial`, `failed`, `cancelled` */
  @Property({ type: 'string', length: 20 })
  status: string = 'scheduled';

  @Property({ type: 'uuid', nullable: true })
  createdBy: string | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  completedAt: Date | null = null;
}

/** One device of a deployment: its command and where it stands. */
@Entity()
@Unique({ properties: ['deploymentId', 'deviceId'] })
@Index({ properties: ['deploymentId', 'hostname', 'id'] })
@Index({ properties: ['commandId'] })
// What the due work reads each tick: results still waiting for their command.
@Index({ name: 'software_deployment_result_waiting', expression: `create index "software_deployment_result_waiting" on "software_deployment_result" ("deployment_id", "id") where "status" = 'pending' and "command_id" is null` })
export class SoftwareDeploymentResult {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => SoftwareDeployment, { mapToPk: true, fieldName: 'deployment_id', deleteRule: 'cascade' })
  deploymentId!: string;

  @ManyToOne(() => Device, { mapToPk: true, fieldName: 'device_id', deleteRule: 'cascade' })
  deviceId!: string;

  /** the device's hostname when the deployment was made */
  @Property({ type: 'string', length: 255 })
  hostname!: string;

  /** `pending`, `downloading`, `installing`, `succeeded`, `failed`, `skipped`, `cancelled` */
  @Property({ type: 'string', length: 20 })
  status!: string;

  /** why it was skipped or cancelled */
  @Property({ type: 'text', nullable: true })
  reason: string | null = null;

  /** its install_software / uninstall_software command; null until queued */
  @Property({ type: 'uuid', nullable: true })
  commandId: string | null = null;

  @Property({ type: 'integer', nullable: true })
  exitCode: number | null = null;

  @Property({ type: 'text', nullable: true })
  error: string | null = null;

  @Property({ type: 'timestamptz' })
  updatedAt!: Date;
}
