import type { FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { ALERT_TARGET_TYPES, AlertConditionState, AlertRule } from '../../../entities/alert.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, loadOwned, requirePrincipal, targetOrgId, tenantWhere } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { publishOnCommit } from '../../events/pubsub.js';
import { badRequest, notFound } from '../../errors.js';
import { onePer } from '../../memo.js';
import { MAX_LIMIT, PageQuery, pageOptions, pageSchema, toPage, type Page } from '../../pagination.js';
import type { Runtime } from '../../runtime.js';
import { enumValues, parseInput, queryBoolean, timestamp, uuid } from '../../validation.js';
import { AlertConditionViewSchema, AlertSeveritySchema, ConditionsSchema, normalizeCondition, ruleHolds, ruleTarget } from './alert-conditions.js';
import { checkTargets, factsOf, findDevices, mayTarget } from '../devices/api.js';
import { templateById } from './alert-templates.js';
import { recordAudit } from '../audit/api.js';
import { applyChanges, providedFields } from '../shared/changes.js';

/*
 * Alert rules: what to watch (a target: the organization, a site, a group or a device) and when to
 * raise an alert (every condition holds, for the longest duration a condition asks for). Rules are
 * evaluated in memory on heartbeats and status changes (alert-evaluation.ts) from a per-instance
 * cache of each organization's enabled rules, dropped on every rule change on any instance.
 */

const RESOURCE = 'Alert rule';
const TargetTypeSchema = z
  .enum(ALERT_TARGET_TYPES)
  .meta({ title: 'AlertTargetType', description: 'What a rule watches: the devices of an organization, a site or a device group, or one device (named by targetId)' })
  .register(enumValues, {
    organization: 'Every device of the organization.',
    site: 'The devices of one site.',
    group: 'The members of one device group.',
    device: 'One device.',
  });

export const AlertRuleViewSchema = z
  .object({
    id: uuid().describe('the rule'),
    orgId: uuid().describe('the organization it belongs to'),
    name: z.string().describe('shown in alert titles'),
    templateId: uuid().nullable().describe('the template the rule was made from'),
    targetType: TargetTypeSchema,
    targetId: uuid().describe('the organization, site, group or device watched'),
    conditions: z.array(AlertConditionViewSchema).describe('every one must hold'),
    severity: AlertSeveritySchema.describe('the severity of its alerts'),
    cooldownMinutes: z.number().int().describe('after an alert of the rule resolves, how long before it may fire again for that device'),
    autoResolve: z.boolean().describe('resolve the alert when its conditions clear'),
    enabled: z.boolean().describe('a disabled rule raises nothing'),
    createdAt: timestamp().describe('when it was created'),
    updatedAt: timestamp().describe('when it last changed'),
  })
  .meta({ title: 'AlertRule', description: 'When every condition holds for a device the rule watches, an alert is raised for it' });
export type AlertRuleView = z.output<typeof AlertRuleViewSchema>;
export const AlertRulePageSchema = pageSchema(AlertRuleViewSchema, 'AlertRulePage');

export function ruleView(rule: AlertRule): AlertRuleView {
  return {
    id: rule.id,
    orgId: rule.orgId,
    name: rule.name,
    templateId: rule.templateId,
    targetType: rule.targetType,
    targetId: rule.targetId,
    conditions: rule.conditions,
    severity: rule.severity,
    cooldownMinutes: rule.cooldownMinutes,
    autoResolve: rule.autoResolve,
    enabled: rule.enabled,
    createdAt: rule.createdAt.toISOString(),
    updatedAt: rule.updatedAt.toISOString(),
  };
}

// ── the per-instance cache of enabled rules ─────────────────────────────────────────────────────

/** Published on every rule change: instances drop the organization's rules (and evaluation its device standings). */
export const RULES_TOPIC = 'alert_rules_changed';
// A NOTIFY missed while the listener reconnects is healed by this age at most.
const RULE_CACHE_TTL_MS = 60_000;

/** What evaluation needs of a rule, kept in memory. */
export type CachedRule = Pick<AlertRule, 'id' | 'orgId' | 'name' | 'targetType' | 'targetId' | 'conditions' | 'severity' | 'cooldownMinutes' | 'autoResolve'>;

class RuleCache {
  private readonly rules = new Map<string, { at: number; rules: Promise<CachedRule[]> }>();
  /** bumped on each drop, so a load that raced a change is not kept */
  private readonly generation = new Map<string, number>();

  constructor(private readonly runtime: Runtime) {
    runtime.pubsub.on(RULES_TOPIC, (payload) => this.forget((payload as { orgId: string }).orgId));
  }

  forget(orgId: string): void {
    this.rules.delete(orgId);
    this.generation.set(orgId, (this.generation.get(orgId) ?? 0) + 1);
  }

  of(orgId: string): Promise<CachedRule[]> {
    const now = Date.now();
    const cached = this.rules.get(orgId);
    if (cached && now - cached.at < RULE_CACHE_TTL_MS) return cached.rules;
    const generation = this.generation.get(orgId) ?? 0;
    const rules = this.runtime.orm.em
      .fork()
      .find(AlertRule, { orgId, enabled: true }, { fields: ['id', 'orgId', 'name', 'targetType', 'targetId', 'conditions', 'severity', 'cooldownMinutes', 'autoResolve'], disableIdentityMap: true })
      .then((rows) => rows.map((r) => ({ id: r.id, orgId: r.orgId, name: r.name, targetType: r.targetType, targetId: r.targetId, conditions: r.conditions, severity: r.severity, cooldownMinutes: r.cooldownMinutes, autoResolve: r.autoResolve })));
    if ((this.generation.get(orgId) ?? 0) === generation) this.rules.set(orgId, { at: now, rules });
    rules.catch(() => this.rules.get(orgId)?.rules === rules && this.rules.delete(orgId));
    return rules;
  }
}

const ruleCache = onePer((runtime: Runtime) => new RuleCache(runtime));

/** The organization's enabled rules, from this instance's cache. */
export function enabledRules(runtime: Runtime, orgId: string): Promise<CachedRule[]> {
  return ruleCache(runtime).of(orgId);
}

/** In the rule write's transaction: every instance drops the organization's rules once it commits (this one at once). */
async function rulesChanged(tx: RequestContext, orgId: string): Promise<void> {
  await publishOnCommit(tx.em, RULES_TOPIC, { orgId });
  tx.afterCommit(async () => ruleCache(tx.runtime).forget(orgId));
}

// ── rules ───────────────────────────────────────────────────────────────────────────────────────

const ruleName = z.string().trim().min(1).max(255);
const cooldown = z.number().int().min(0).max(7 * 24 * 60);

export const CreateAlertRuleSchema = z.strictObject({
  orgId: uuid().optional().describe('organization users: their own organization by default; others: required'),
  name: ruleName.describe('shown in alert titles'),
  templateId: uuid().optional().describe('a built-in or the organization’s template: its conditions and severity unless given here'),
  targetType: TargetTypeSchema.describe('what the rule watches'),
  targetId: uuid().describe('the organization, site, group or device to watch'),
  conditions: ConditionsSchema.optional().describe('required without a template'),
  severity: AlertSeveritySchema.optional().describe('required without a template'),
  cooldownMinutes: cooldown.optional().describe('0 by default'),
  autoResolve: z.boolean().optional().describe('true by default'),
  enabled: z.boolean().optional().describe('true by default'),
}).describe('A new alert rule of an organization: from a template, or with its own conditions and severity (given ones override the template’s).');
export type CreateAlertRuleInput = z.input<typeof CreateAlertRuleSchema>;

export const UpdateAlertRuleSchema = z.strictObject({
  name: ruleName.optional().describe('shown in alert titles'),
  targetType: TargetTypeSchema.optional().describe('with targetId'),
  targetId: uuid().optional().describe('with targetType'),
  conditions: ConditionsSchema.optional().describe('replaces every condition'),
  severity: AlertSeveritySchema.optional().describe('the severity of alerts raised from now on'),
  cooldownMinutes: cooldown.optional().describe('after an alert resolves, minutes before it may fire again for that device'),
  autoResolve: z.boolean().optional().describe('resolve alerts when their conditions clear'),
  enabled: z.boolean().optional().describe('a disabled rule raises nothing'),
}).describe('Changes to an alert rule; a field left out keeps its value. A change of conditions, target or enabled restarts the durations its conditions were holding for.');
export type UpdateAlertRuleInput = z.input<typeof UpdateAlertRuleSchema>;

export const AlertRuleListQuery = PageQuery.extend({
  orgId: uuid().optional().describe('only rules of this organization'),
  enabled: z.boolean().or(queryBoolean).optional().describe('only enabled (true) or disabled (false) rules'),
  severity: AlertSeveritySchema.optional().describe('only rules of this severity'),
}).strict();
export type AlertRuleListInput = z.input<typeof AlertRuleListQuery>;

/**
 * The caller may aim a rule of `orgId` at the target (`checkTargets`: 404 naming what it cannot see);
 * an organization target is the rule's own organization (404 `Organization not found` otherwise).
 */
async function checkRuleTarget(ctx: RequestContext, rule: Pick<AlertRule, 'orgId' | 'targetType' | 'targetId'>): Promise<void> {
  if (rule.targetType === 'organization' && rule.targetId.toLowerCase() !== rule.orgId) throw notFound('Organization');
  await checkTargets(ctx, ruleTarget({ ...rule, targetId: rule.targetId.toLowerCase() }));
}

async function accessibleRule(ctx: RequestContext, id: string, permission: 'alerts:read' | 'alerts:write'): Promise<AlertRule> {
  const rule = await loadOwned(ctx, AlertRule, id, permission, { resource: RESOURCE });
  // Users limited to some sites change only rules watching within their sites, as they make only such rules.
  if (permission === 'alerts:write' && !(await mayTarget(ctx, ruleTarget(rule)))) throw notFound(RESOURCE);
  return rule;
}

export async function listAlertRules(ctx: RequestContext, rawQuery: AlertRuleListInput): Promise<Page<AlertRuleView>> {
  const query = parseInput(AlertRuleListQuery, rawQuery);
  await authorize(ctx, 'alerts:read');
  const where: FilterQuery<AlertRule>[] = [(await tenantWhere<AlertRule>(ctx, { org: 'orgId', requestedOrgId: query.orgId })) ?? {}];
  if (query.enabled !== undefined) where.push({ enabled: query.enabled });
  if (query.severity) where.push({ severity: query.severity });
  const [rows, total] = await ctx.em.findAndCount(AlertRule, { $and: where }, { orderBy: { createdAt: 'asc', id: 'asc' }, ...pageOptions(query) });
  return toPage(rows.map(ruleView), total, query);
}

export async function getAlertRule(ctx: RequestContext, id: string): Promise<AlertRuleView> {
  return ruleView(await accessibleRule(ctx, id, 'alerts:read'));
}

export async function createAlertRule(ctx: RequestContext, rawInput: CreateAlertRuleInput): Promise<AlertRuleView> {
  const input = parseInput(CreateAlertRuleSchema, rawInput);
  const orgId = await targetOrgId(ctx, input.orgId);
  const principal = await authorize(ctx, 'alerts:write', { orgId, resource: 'Organization' });
  const template = input.templateId ? await templateById(ctx, orgId, input.templateId) : null;
  const conditions = input.conditions?.map(normalizeCondition) ?? template?.conditions;
  const severity = input.severity ?? template?.severity;
  if (!conditions) throw badRequest('conditions: required without a template', [{ path: 'conditions', message: 'required without a template' }]);
  if (!severity) throw badRequest('severity: required without a template', [{ path: 'severity', message: 'required without a template' }]);
  await checkRuleTarget(ctx, { orgId, targetType: input.targetType, targetId: input.targetId });
  return withTransaction(ctx, async (tx) => {
    const rule = tx.em.create(AlertRule, {
      orgId,
      name: input.name,
      templateId: template?.id ?? null,
      targetType: input.targetType,
      targetId: input.targetId.toLowerCase(),
      conditions,
      severity,
      cooldownMinutes: input.cooldownMinutes ?? 0,
      autoResolve: input.autoResolve ?? true,
      enabled: input.enabled ?? true,
      createdBy: principal.userId,
    });
    await tx.em.flush();
    await rulesChanged(tx, orgId);
    await recordAudit(tx, { action: 'alert_rule.create', resourceType: 'alert_rule', resourceId: rule.id, orgId, changes: providedFields({ ...input, orgId }), details: { name: rule.name } });
    return ruleView(rule);
  });
}

export async function updateAlertRule(ctx: RequestContext, id: string, rawInput: UpdateAlertRuleInput): Promise<AlertRuleView> {
  const input = parseInput(UpdateAlertRuleSchema, rawInput);
  const rule = await accessibleRule(ctx, id, 'alerts:write');
  requirePrincipal(ctx);
  if ((input.targetType === undefined) !== (input.targetId === undefined)) throw badRequest('targetType and targetId go together', [{ path: 'targetId', message: 'give targetType and targetId together' }]);
  if (input.targetType && input.targetId) await checkRuleTarget(ctx, { orgId: rule.orgId, targetType: input.targetType, targetId: input.targetId });
  return withTransaction(ctx, async (tx) => {
    const current = await tx.em.findOneOrFail(AlertRule, { id: rule.id }, { refresh: true });
    const changes = applyChanges(current, { ...input, targetId: input.targetId?.toLowerCase(), conditions: input.conditions?.map(normalizeCondition) });
    if (changes.length === 0) return ruleView(current);
    await tx.em.flush();
    // Conditions that started holding under what the rule was start again under what it is.
    if (changes.some((c) => ['conditions', 'targetType', 'targetId', 'enabled'].includes(c))) await tx.em.nativeDelete(AlertConditionState, { ruleId: current.id });
    await rulesChanged(tx, current.orgId);
    await recordAudit(tx, { action: 'alert_rule.update', resourceType: 'alert_rule', resourceId: id, orgId: current.orgId, changes, details: { name: current.name } });
    return ruleView(current);
  });
}

/** The rule goes; its alerts stay (without a rule), and its pending conditions with it. */
export async function deleteAlertRule(ctx: RequestContext, id: string): Promise<void> {
  const rule = await accessibleRule(ctx, id, 'alerts:write');
  await withTransaction(ctx, async (tx) => {
    await tx.em.nativeDelete(AlertRule, { id: rule.id });
    await rulesChanged(tx, rule.orgId);
    await recordAudit(tx, { action: 'alert_rule.delete', resourceType: 'alert_rule', resourceId: rule.id, orgId: rule.orgId, details: { name: rule.name } });
  });
}

// ── the rule test ───────────────────────────────────────────────────────────────────────────────

export const TestAlertRuleSchema = z
  .strictObject({ deviceId: uuid().optional().describe('only this device; every device the rule watches by default') })
  .describe('Which devices to try an alert rule on.');
export type TestAlertRuleInput = z.input<typeof TestAlertRuleSchema>;
export const AlertRuleTestResultSchema = z
  .object({
    wouldFire: z.array(
      z.object({ deviceId: uuid().describe('a device the rule would fire for'), hostname: z.string().describe('its hostname'), reason: z.string().describe('the values that make the conditions hold') }).meta({ title: 'AlertRuleTestHit', description: 'A device the rule would raise an alert for now, and why' }),
    ).describe('devices whose current data makes every condition hold'),
  })
  .meta({ title: 'AlertRuleTestResult', description: 'The devices the rule would raise an alert for now (durations aside); nothing is raised' });
export type AlertRuleTestResult = z.output<typeof AlertRuleTestResultSchema>;

/** Evaluates the rule against the devices' current data (up to the first MAX_LIMIT devices), raising nothing. */
export async function testAlertRule(ctx: RequestContext, id: string, rawInput: TestAlertRuleInput): Promise<AlertRuleTestResult> {
  const input = parseInput(TestAlertRuleSchema, rawInput);
  const rule = await accessibleRule(ctx, id, 'alerts:read');
  const ids = input.deviceId ? [input.deviceId] : undefined;
  const devices = await findDevices(ctx, { target: ruleTarget(rule), ids, active: true }, { limit: MAX_LIMIT });
  if (ids && devices.length === 0 && (await findDevices(ctx, { ids }, { fields: ['id'] })).length === 0) throw notFound('Device');
  const wouldFire = devices.flatMap((device) => {
    const { holds, reason } = ruleHolds(rule, factsOf(device));
    return holds ? [{ deviceId: device.id, hostname: device.hostname, reason }] : [];
  });
  return { wouldFire };
}
