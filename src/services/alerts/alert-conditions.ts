import { z } from 'zod';
import { ALERT_SEVERITIES, METRIC_OPERATORS, type AlertCondition, type AlertRule } from '../../../entities/alert.js';
import type { DeviceFacts } from '../devices/api.js';
import { enumValues } from '../../validation.js';
import type { Target } from '../devices/api.js';

// The conditions of alert rules and templates: their one input shape, and their evaluation against
// what is known of a device (pure functions: evaluation runs in memory on every heartbeat).

export const AlertSeveritySchema = z
  .enum(ALERT_SEVERITIES)
  .meta({ title: 'AlertSeverity', description: 'How serious an alert is, from critical down to info; a rule gives its alerts one, and policies choose the alerts they handle by it' })
  .register(enumValues, {
    critical: 'The gravest: needs attention at once.',
    high: 'Serious: needs attention soon.',
    medium: 'Needs attention in the normal course of work.',
    low: 'Minor: no hurry.',
    info: 'For information: nothing needs doing.',
  });
const ConditionTypeSchema = z
  .enum(['metric', 'offline', 'agent_silent', 'watchdog'])
  .meta({ title: 'AlertConditionType', description: 'What one condition of an alert rule or template watches on a device' })
  .register(enumValues, {
    metric: 'A heartbeat metric (`metric`) compared with `threshold` by `operator`, held for `durationSeconds` if given.',
    offline: 'The device is offline, for at least `durationSeconds` since its last heartbeat if given.',
    agent_silent: 'The main agent has gone silent while its watchdog still reports.',
    watchdog: 'The watchdog reports the given `status`.',
  });
const OperatorSchema = z
  .enum(METRIC_OPERATORS)
  .meta({ title: 'MetricOperator', description: 'How a metric condition compares the reported value with its threshold: gt >, gte >=, lt <, lte <=' })
  .register(enumValues, {
    gt: 'The value is greater than the threshold (>).',
    gte: 'The value is greater than or equal to the threshold (>=).',
    lt: 'The value is less than the threshold (<).',
    lte: 'The value is less than or equal to the threshold (<=).',
  });
const MAX_DURATION_SECONDS = 7 * 24 * 3600;

const conditionShape = {
  type: ConditionTypeSchema.describe('what the condition watches'),
  metric: z.string().trim().min(1).max(100).optional().describe('metric conditions: a heartbeat metric, e.g. cpuPercent, ramPercent, diskPercent'),
  operator: OperatorSchema.optional().describe('metric conditions: how the metric compares to the threshold'),
  threshold: z.number().finite().optional().describe('metric conditions: the value compared with'),
  durationSeconds: z.number().int().min(0).max(MAX_DURATION_SECONDS).optional().describe('metric and offline conditions: how long it must hold (offline: counted from the last heartbeat)'),
  status: z.string().trim().min(1).max(50).optional().describe('watchdog conditions: the watchdog status that raises the alert'),
};
const NEEDS: Record<z.output<typeof ConditionTypeSchema>, string[]> = { metric: ['metric', 'operator', 'threshold'], offline: [], agent_silent: [], watchdog: ['status'] };
const ALLOWS: Record<z.output<typeof ConditionTypeSchema>, string[]> = {
  metric: ['metric', 'operator', 'threshold', 'durationSeconds'],
  offline: ['durationSeconds'],
  agent_silent: [],
  watchdog: ['status'],
};

/** One flat shape for every type (GraphQL inputs have no unions); each type's fields are checked here. */
const ConditionInputSchema = z
  .strictObject(conditionShape)
  .superRefine((condition, check) => {
    for (const field of NEEDS[condition.type]) {
      if ((condition as Record<string, unknown>)[field] === undefined) check.addIssue({ code: 'custom', path: [field], message: `${condition.type} conditions need ${field}` });
    }
    for (const [field, value] of Object.entries(condition)) {
      if (field !== 'type' && value !== undefined && !ALLOWS[condition.type].includes(field)) check.addIssue({ code: 'custom', path: [field], message: `${condition.type} conditions take no ${field}` });
    }
  })
  .meta({ title: 'AlertConditionInput', description: 'metric {metric, operator, threshold, durationSeconds?}, offline {durationSeconds?}, agent_silent {}, or watchdog {status}' });
export const AlertConditionViewSchema = z.object(conditionShape).meta({ title: 'AlertCondition', description: 'One condition of a rule; every condition of a rule must hold' });
export const ConditionsSchema = z.array(ConditionInputSchema).min(1).max(20);

/** A condition as stored: only its type's fields. */
export function normalizeCondition(condition: z.output<typeof ConditionInputSchema>): AlertCondition {
  return Object.fromEntries(Object.entries(condition).filter(([k, v]) => v !== undefined && (k === 'type' || ALLOWS[condition.type].includes(k)))) as AlertCondition;
}

// ── conditions against a device ─────────────────────────────────────────────────────────────────

const COMPARE = { gt: (a: number, b: number) => a > b, gte: (a: number, b: number) => a >= b, lt: (a: number, b: number) => a < b, lte: (a: number, b: number) => a <= b };

type Verdict = { holds: boolean | null; reason: string };
// Shared answers: every heartbeat evaluates every rule that watches its device, and most conditions do not hold.
const UNDECIDED: Verdict = { holds: null, reason: '' };
const NOT_HOLDING: Verdict = { holds: false, reason: '' };
const holding = (holds: boolean, reason: () => string): Verdict => (holds ? { holds, reason: reason() } : NOT_HOLDING);

/** Whether one condition holds now (null: undecided), and in words why it does (worded only when it holds). */
function conditionHolds(condition: AlertCondition, facts: DeviceFacts): Verdict {
  switch (condition.type) {
    case 'metric': {
      if (facts.metrics === undefined) return UNDECIDED;
      const value = facts.metrics?.[condition.metric];
      const holds = typeof value === 'number' && Number.isFinite(value) && COMPARE[condition.operator](value, condition.threshold);
      return holding(holds, () => `${condition.metric} ${String(value)} ${condition.operator} ${condition.threshold}`);
    }
    case 'offline':
      return holding(facts.status === 'offline', () => `offline since ${facts.lastSeenAt.toISOString()}`);
    case 'agent_silent':
      if (facts.mainAgentSilentSince === undefined) return UNDECIDED;
      return holding(facts.mainAgentSilentSince !== null, () => `main agent silent since ${facts.mainAgentSilentSince?.toISOString()}`);
    case 'watchdog':
      if (facts.watchdogStatus === undefined) return UNDECIDED;
      return holding(facts.watchdogStatus === condition.status, () => `watchdog ${facts.watchdogStatus}`);
  }
}

/** Every condition holds (true), one does not (false), or one is undecided and none fails (null). */
export function ruleHolds(rule: Pick<AlertRule, 'conditions'>, facts: DeviceFacts): Verdict {
  let undecided = false;
  const reasons: string[] = [];
  for (const condition of rule.conditions) {
    const { holds, reason } = conditionHolds(condition, facts);
    if (holds === false) return NOT_HOLDING;
    if (holds === null) undecided = true;
    else reasons.push(reason);
  }
  return { holds: undecided ? null : true, reason: reasons.join('; ') };
}

/** When the rule fires if its conditions keep holding from `now`: offline durations count from the last heartbeat. */
export function dueAt(rule: Pick<AlertRule, 'conditions'>, facts: DeviceFacts, now: Date): Date {
  let due = now.getTime();
  for (const condition of rule.conditions) {
    if (condition.type !== 'metric' && condition.type !== 'offline') continue;
    const start = condition.type === 'offline' ? Math.min(facts.lastSeenAt.getTime(), now.getTime()) : now.getTime();
    due = Math.max(due, start + (condition.durationSeconds ?? 0) * 1000);
  }
  return new Date(due);
}

/** A rule's target (`targetType`/`targetId`, its public shape) as the common target; ids are stored lower-cased. */
export function ruleTarget(rule: Pick<AlertRule, 'targetType' | 'targetId' | 'orgId'>): Target {
  switch (rule.targetType) {
    case 'organization':
      return { orgId: rule.orgId };
    case 'site':
      return { orgId: rule.orgId, siteIds: [rule.targetId] };
    case 'group':
      return { orgId: rule.orgId, groupIds: [rule.targetId] };
    case 'device':
      return { orgId: rule.orgId, deviceIds: [rule.targetId] };
  }
}

