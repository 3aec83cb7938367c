import { randomUUID } from 'node:crypto';
import { Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Device } from './device.js';
import { Organization } from './organization.js';

/*
 * The policies domain's tables: an organization's configuration policies (rules over inventory and
 * agent checks), each device's latest evaluation against each policy, and the remediation commands
 * the policies queued.
 */

/** What a rule asks of a device, as stored (the fields its type uses; `remediation` when it has one). */
export interface ConfigurationRule {
  type: string;
  name?: string;
  minVersion?: string;
  osType?: string;
  version?: string;
  path?: string;
  key?: string;
  expected?: string | number | boolean;
  remediation?: { type: string; catalogId?: string; versionId?: string; scriptId?: string; parameters?: Record<string, unknown> };
}

export interface PolicyViolation {
  ruleIndex: number;
  type: string;
  message: string;
}

@Entity()
@Index({ properties: ['orgId', 'createdAt', 'id'] })
export class ConfigurationPolicy extends BaseEntity<'description' | 'targets' | 'status' | 'lastEvaluatedAt'> {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'text', nullable: true })
  description: string | null = null;

  /** the selectors named (sites, groups, devices); null: every device of the organization */
  @Property({ type: 'json', nullable: true })
  targets: { siteIds?: string[]; groupIds?: string[]; deviceIds?: string[] } | null = null;

  @Property({ type: 'json' })
  rules!: ConfigurationRule[];

  /** `active`, `inactive` */
  @Property({ type: 'string', length: 20 })
  status: string = 'inactive';

  /** when it was last evaluated on its devices (activation, by hand, the interval) */
  @Property({ type: 'timestamptz', nullable: true })
  lastEvaluatedAt: Date | null = null;
}

/** A device's latest evaluation against a policy (a device the policy targets, or one it was applied to). */
@Entity()
@Unique({ properties: ['policyId', 'deviceId'] })
@Index({ properties: ['deviceId'] })
@Index({ properties: ['pendingCommandId'] })
export class ConfigurationPolicyDevice {
  [OptionalProps]?: 'id' | 'applied' | 'status' | 'settledStatus' | 'violations' | 'evaluationId' | 'pendingCommandId' | 'evaluatedAt';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => ConfigurationPolicy, { mapToPk: true, fieldName: 'policy_id', deleteRule: 'cascade' })
  policyId!: string;

  @ManyToOne(() => Device, { mapToPk: true, fieldName: 'device_id', deleteRule: 'cascade' })
  deviceId!: string;

  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  /** applied by hand (`applyPolicy`): evaluated with the policy's targets even outside them */
  @Property({ type: 'boolean' })
  applied: boolean = false;

  /** `compliant`, `non_compliant`, `pending`; null before its first evaluation */
  @Property({ type: 'string', length: 20, nullable: true })
  status: string | null = null;

  /** the last settled status (`compliant`, `non_compliant`): the transitions that emit events are from it */
  @Property({ type: 'string', length: 20, nullable: true })
  settledStatus: string | null = null;

  @Property({ type: 'json' })
  violations: PolicyViolation[] = [];

  @Property({ type: 'uuid', nullable: true })
  evaluationId: string | null = null;

  /** the `policy_check` command awaited while `pending` */
  @Property({ type: 'uuid', nullable: true })
  pendingCommandId: string | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  evaluatedAt: Date | null = null;
}

/** A remediation command a policy queued, matched by its command id when the command ends. */
@Entity()
@Index({ properties: ['policyId', 'deviceId'] })
export class ConfigurationPolicyRemediation {
  [OptionalProps]?: 'status';

  @PrimaryKey({ type: 'uuid' })
  commandId!: string;

  @ManyToOne(() => ConfigurationPolicy, { mapToPk: true, fieldName: 'policy_id', deleteRule: 'cascade' })
  policyId!: string;

  @ManyToOne(() => Device, { mapToPk: true, fieldName: 'device_id', deleteRule: 'cascade' })
  deviceId!: string;

  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @Property({ type: 'integer' })
  ruleIndex!: number;

  /** the command's type (`uninstall_software`, `install_software`, `start_service`, `run_script`) */
  @Property({ type: 'string', length: 50 })
  type!: string;

  /** `queued`, then the command's final status */
  @Property({ type: 'string', length: 20 })
  status: string = 'queued';

  @Property({ type: 'timestamptz' })
  createdAt!: Date;
}
