import { randomUUID } from 'node:crypto';
import { Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Organization } from './organization.js';

export interface AlertPolicyTargets {
  siteIds?: string[];
  groupIds?: string[];
  deviceIds?: string[];
}

export interface EscalationStep {
  afterMinutes: number;
  channelIds: string[];
}

/**
 * Who hears of which alerts of an organization: the alerts of `severities` on the devices `targets`
 * names (its sites, groups or devices; null: every device) go to `channelIds` and, in the app, to
 * `notifyUserIds`; one still unacknowledged after a step's `afterMinutes` also goes to its channels.
 */
@Entity()
@Index({ properties: ['orgId', 'createdAt'] })
export class AlertPolicy extends BaseEntity<'targets' | 'notifyUserIds' | 'escalationSteps' | 'enabled' | 'createdBy'> {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'json' })
  severities!: string[];

  @Property({ type: 'json' })
  channelIds!: string[];

  @Property({ type: 'json', nullable: true })
  targets: AlertPolicyTargets | null = null;

  @Property({ type: 'json' })
  notifyUserIds: string[] = [];

  @Property({ type: 'json' })
  escalationSteps: EscalationStep[] = [];

  @Property({ type: 'boolean' })
  enabled = true;

  @Property({ type: 'uuid', nullable: true })
  createdBy: string | null = null;
}

export const ESCALATION_STATUSES = ['pending', 'escalated', 'cancelled'] as const;
export type EscalationStatus = (typeof ESCALATION_STATUSES)[number];

/**
 * One escalation step of a policy waiting on one alert: due at `dueAt` (the alert's trigger time plus
 * the step's minutes), it escalates unless the alert was acknowledged, resolved or suppressed by then.
 */
@Entity()
@Unique({ properties: ['alertId', 'policyId', 'step'] })
@Index({
  name: 'alert_escalation_due_index',
  expression: `create index "alert_escalation_due_index" on "alert_escalation" ("due_at") where "status" = 'pending'`,
})
export class AlertEscalation {
  [OptionalProps]?: 'id' | 'createdAt' | 'status' | 'settledAt';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  /** no foreign key to the alert table: escalations are settled against the alert as it is then */
  @Property({ type: 'uuid' })
  @Index()
  alertId!: string;

  @ManyToOne(() => AlertPolicy, { mapToPk: true, fieldName: 'policy_id', deleteRule: 'cascade' })
  policyId!: string;

  /** index into the policy's escalationSteps */
  @Property({ type: 'integer' })
  step!: number;

  @Property({ type: 'timestamptz' })
  dueAt!: Date;

  @Property({ type: 'string', length: 20 })
  status: EscalationStatus = 'pending';

  @Property({ type: 'timestamptz', nullable: true })
  settledAt: Date | null = null;

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();
}
