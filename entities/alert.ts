import { Entity, Index, ManyToOne, Property, Unique } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Device } from './device.js';
import { Organization } from './organization.js';
import { Site } from './site.js';

export const ALERT_SEVERITIES = ['critical', 'high', 'medium', 'low', 'info'] as const;
export type AlertSeverity = (typeof ALERT_SEVERITIES)[number];
export const ALERT_STATUSES = ['active', 'acknowledged', 'resolved', 'suppressed'] as const;
export type AlertStatus = (typeof ALERT_STATUSES)[number];
export const ALERT_TARGET_TYPES = ['organization', 'site', 'group', 'device'] as const;
export type AlertTargetType = (typeof ALERT_TARGET_TYPES)[number];
export const METRIC_OPERATORS = ['gt', 'gte', 'lt', 'lte'] as const;
export type MetricOperator = (typeof METRIC_OPERATORS)[number];

/** One condition of a rule, as the service's `AlertConditionSchema` validates it. */
export type AlertCondition =
  | { type: 'metric'; metric: string; operator: MetricOperator; threshold: number; durationSeconds?: number }
  | { type: 'offline'; durationSeconds?: number }
  | { type: 'agent_silent' }
  | { type: 'watchdog'; status: string };

/**
 * When every condition holds for a device the rule targets, the rule raises an alert for it.
 * `templateId` may name a built-in template (a constant of the service, no row), so it is no foreign key.
 */
@Entity()
@Index({ properties: ['orgId', 'createdAt', 'id'] })
export class AlertRule extends BaseEntity<'templateId' | 'cooldownMinutes' | 'autoResolve' | 'enabled' | 'createdBy'> {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'uuid', nullable: true })
  templateId: string | null = null;

  @Property({ type: 'string', length: 20 })
  targetType!: AlertTargetType;

  /** the organization, site, group or device the rule watches */
  @Property({ type: 'uuid' })
  targetId!: string;

  @Property({ type: 'json' })
  conditions!: AlertCondition[];

  @Property({ type: 'string', length: 10 })
  severity!: AlertSeverity;

  @Property({ type: 'integer' })
  cooldownMinutes = 0;

  @Property({ type: 'boolean' })
  autoResolve = true;

  @Property({ type: 'boolean' })
  enabled = true;

  @Property({ type: 'uuid', nullable: true })
  createdBy: string | null = null;
}

/** An organization's own rule template; the built-in ones are constants of the service. */
@Entity()
@Unique({ properties: ['orgId', 'name'] })
export class AlertTemplate extends BaseEntity<'description'> {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'text', nullable: true })
  description: string | null = null;

  @Property({ type: 'json' })
  conditions!: AlertCondition[];

  @Property({ type: 'string', length: 10 })
  severity!: AlertSeverity;
}

/**
 * Related alerts shown as one incident: alerts of one site (or one group) raised within a few minutes
 * of each other. `key` names what they share (`site:<id>`, `group:<id>`, `device:<id>`).
 */
@Entity()
@Index({ properties: ['orgId', 'key', 'lastAlertAt'] })
@Index({ properties: ['orgId', 'lastAlertAt', 'id'] })
export class AlertCorrelationGroup extends BaseEntity<'siteId' | 'alertCount'> {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @ManyToOne(() => Site, { mapToPk: true, fieldName: 'site_id', deleteRule: 'cascade', nullable: true })
  siteId: string | null = null;

  @Property({ type: 'string', length: 100 })
  key!: string;

  @Property({ type: 'string', length: 10 })
  severity!: AlertSeverity;

  @Property({ type: 'integer' })
  alertCount = 0;

  @Property({ type: 'timestamptz' })
  firstAlertAt!: Date;

  @Property({ type: 'timestamptz' })
  lastAlertAt!: Date;
}

/** The source of alerts that rules raise (`raiseAlert`'s `source` names the raising domain). */
export const RULE_SOURCE = 'alert_rule';

/**
 * An alert some domain raised (`source`: a rule, a monitor, …; `sourceId`: which one), usually about a
 * device. At most one unresolved alert per organization, source and `dedupKey` (the partial unique
 * index), so a condition that keeps holding never raises it twice.
 */
@Entity()
@Unique({
  name: 'alert_open_dedup_unique',
  expression: `create unique index "alert_open_dedup_unique" on "alert" ("org_id", "source", "dedup_key") where "status" <> 'resolved'`,
})
@Index({ properties: ['orgId', 'triggeredAt', 'id'] })
@Index({ properties: ['orgId', 'status'] })
@Index({ properties: ['ruleId', 'deviceId', 'resolvedAt'] })
@Index({ properties: ['orgId', 'source', 'dedupKey', 'resolvedAt'] })
@Index({
  name: 'alert_suppression_ends_index',
  expression: `create index "alert_suppression_ends_index" on "alert" ("suppressed_until") where "status" = 'suppressed' and "suppressed_until" is not null`,
})
export class Alert extends BaseEntity<
  | 'siteId'
  | 'deviceId'
  | 'ruleId'
  | 'sourceId'
  | 'status'
  | 'message'
  | 'acknowledgedAt'
  | 'acknowledgedBy'
  | 'resolvedAt'
  | 'resolvedBy'
  | 'resolutionNote'
  | 'suppressedUntil'
  | 'correlationGroupId'
> {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @ManyToOne(() => Site, { mapToPk: true, fieldName: 'site_id', deleteRule: 'set null', nullable: true })
  @Index()
  siteId: string | null = null;

  /** null for an alert about no one device (a raiser that watches something else) */
  @ManyToOne(() => Device, { mapToPk: true, fieldName: 'device_id', deleteRule: 'cascade', nullable: true })
  @Index()
  deviceId: string | null = null;

  /** kept when the rule is deleted, so the alert history stays */
  @ManyToOne(() => AlertRule, { mapToPk: true, fieldName: 'rule_id', deleteRule: 'set null', nullable: true })
  ruleId: string | null = null;

  /** the domain that raised it: `alert_rule`, `monitor`, … */
  @Property({ type: 'string', length: 40 })
  source!: string;

  /** the rule, monitor, … of `source` that raised it (no foreign key: any domain's); null for rule alerts whose rule was gone before sources were kept */
  @Property({ type: 'uuid', nullable: true })
  sourceId: string | null = null;

  /** what makes two raises the same alert, within the organization and source */
  @Property({ type: 'string', length: 255 })
  dedupKey!: string;

  @Property({ type: 'string', length: 10 })
  severity!: AlertSeverity;

  @Property({ type: 'string', length: 20 })
  status: AlertStatus = 'active';

  @Property({ type: 'string', length: 255 })
  title!: string;

  @Property({ type: 'text', nullable: true })
  message: string | null = null;

  @Property({ type: 'timestamptz' })
  triggeredAt!: Date;

  @Property({ type: 'timestamptz', nullable: true })
  acknowledgedAt: Date | null = null;

  @Property({ type: 'uuid', nullable: true })
  acknowledgedBy: string | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  resolvedAt: Date | null = null;

  /** the user or API key that resolved it; null when its condition cleared */
  @Property({ type: 'uuid', nullable: true })
  resolvedBy: string | null = null;

  @Property({ type: 'text', nullable: true })
  resolutionNote: string | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  suppressedUntil: Date | null = null;

  @ManyToOne(() => AlertCorrelationGroup, { mapToPk: true, fieldName: 'correlation_group_id', deleteRule: 'set null', nullable: true })
  @Index()
  correlationGroupId: string | null = null;
}

/**
 * Since when a rule's conditions have held for a device, while they hold and the rule has not fired:
 * written on the transitions only, so a steady heartbeat writes nothing.
 */
@Entity()
@Unique({ properties: ['ruleId', 'deviceId'] })
@Index({ properties: ['deviceId'] })
@Index({ properties: ['dueAt'] })
export class AlertConditionState extends BaseEntity {
  @ManyToOne(() => AlertRule, { mapToPk: true, fieldName: 'rule_id', deleteRule: 'cascade' })
  ruleId!: string;

  @ManyToOne(() => Device, { mapToPk: true, fieldName: 'device_id', deleteRule: 'cascade' })
  deviceId!: string;

  @Property({ type: 'timestamptz' })
  since!: Date;

  /** when the rule fires if the conditions keep holding */
  @Property({ type: 'timestamptz' })
  dueAt!: Date;
}
