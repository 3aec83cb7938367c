import { type FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { ALERT_SEVERITIES, Alert, AlertCorrelationGroup, AlertRule, AlertTemplate, type AlertCondition, type AlertSeverity } from '../../../entities/alert.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, isUuid, loadOwned, targetOrgId, tenantWhere } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { notFound } from '../../errors.js';
import { PageQuery, pageOptions, pageSchema, toPage, type Page } from '../../pagination.js';
import { parseInput, timestamp, uuid } from '../../validation.js';
import { AlertConditionViewSchema, AlertSeveritySchema, ConditionsSchema, normalizeCondition } from './alert-conditions.js';
import { recordAudit } from '../audit/api.js';
import { applyChanges, providedFields } from '../shared/changes.js';
import { uniqueNameGuard } from '../shared/unique-name.js';

/*
 * Templates: named conditions and severity a rule starts from (built-in ones for the common cases,
 * and an organization's own). Correlation: alerts of rules watching one group, else of one site (a
 * device without a site: of that device), raised within CORRELATION_WINDOW_MINUTES of the incident's
 * last one share a correlation group, so a dashboard shows one incident for a site-wide outage.
 */

const RESOURCE = 'Alert template';
export const CORRELATION_WINDOW_MINUTES = 10;

interface BuiltInTemplate {
  id: string;
  name: string;
  description: string;
  conditions: AlertCondition[];
  severity: AlertSeverity;
}

/** Fixed ids, so rules made from them keep naming them. */
const BUILT_IN: BuiltInTemplate[] = [
  {
    id: '00000000-0000-4000-8000-00000000a101',
    name: 'High CPU',
    description: 'CPU above 90 % for 5 minutes',
    conditions: [{ type: 'metric', metric: 'cpuPercent', operator: 'gt', threshold: 90, durationSeconds: 300 }],
    severity: 'high',
  },
  {
    id: '00000000-0000-4000-8000-00000000a102',
    name: 'Low disk space',
    description: 'Disk more than 90 % full',
    conditions: [{ type: 'metric', metric: 'diskPercent', operator: 'gt', threshold: 90 }],
    severity: 'medium',
  },
  {
    id: '00000000-0000-4000-8000-00000000a103',
    name: 'High memory',
    description: 'RAM above 95 % for 10 minutes',
    conditions: [{ type: 'metric', metric: 'ramPercent', operator: 'gt', threshold: 95, durationSeconds: 600 }],
    severity: 'medium',
  },
  {
    id: '00000000-0000-4000-8000-00000000a104',
    name: 'Device offline',
    description: 'No heartbeat for 10 minutes',
    conditions: [{ type: 'offline', durationSeconds: 600 }],
    severity: 'critical',
  },
  {
    id: '00000000-0000-4000-8000-00000000a105',
    name: 'Agent silent',
    description: 'The main agent is silent while its watchdog still reports',
    conditions: [{ type: 'agent_silent' }],
    severity: 'high',
  },
  {
    id: '00000000-0000-4000-8000-00000000a106',
    name: 'Watchdog failing',
    description: 'The watchdog reports that it is failing',
    conditions: [{ type: 'watchdog', status: 'failing' }],
    severity: 'high',
  },
];

export const AlertTemplateViewSchema = z
  .object({
    id: uuid().describe('the template (built-in ones have fixed ids)'),
    orgId: uuid().nullable().describe('null for built-in templates'),
    name: z.string().describe('shown when choosing one'),
    description: z.string().nullable().describe('what it watches'),
    conditions: z.array(AlertConditionViewSchema).describe('the conditions a rule made from it takes'),
    severity: AlertSeveritySchema.describe('the severity a rule made from it takes'),
    builtIn: z.boolean().describe('one of the service’s own templates'),
    createdAt: timestamp().nullable().describe('null for built-in templates'),
    updatedAt: timestamp().nullable().describe('null for built-in templates'),
  })
  .meta({ title: 'AlertTemplate', description: 'Conditions and severity a rule can start from' });
export type AlertTemplateView = z.output<typeof AlertTemplateViewSchema>;
export const AlertTemplatePageSchema = pageSchema(AlertTemplateViewSchema, 'AlertTemplatePage');
export const AlertTemplateListSchema = z.object({ data: z.array(AlertTemplateViewSchema).describe('every built-in template') }).meta({ title: 'AlertTemplateList', description: 'The built-in templates' });

const builtInView = (t: BuiltInTemplate): AlertTemplateView => ({ ...t, orgId: null, builtIn: true, createdAt: null, updatedAt: null });

function templateView(t: AlertTemplate): AlertTemplateView {
  return {
    id: t.id,
    orgId: t.orgId,
    name: t.name,
    description: t.description,
    conditions: t.conditions,
    severity: t.severity,
    builtIn: false,
    createdAt: t.createdAt.toISOString(),
    updatedAt: t.updatedAt.toISOString(),
  };
}

/** A template a rule of `orgId` may start from: built-in, or that organization's (404 otherwise). The caller has authorized. */
export async function templateById(ctx: RequestContext, orgId: string, id: string): Promise<{ id: string; conditions: AlertCondition[]; severity: AlertSeverity }> {
  const builtIn = BUILT_IN.find((t) => t.id === id.toLowerCase());
  if (builtIn) return builtIn;
  const own = isUuid(id) ? await ctx.em.findOne(AlertTemplate, { id, orgId }) : null;
  if (!own) throw notFound(RESOURCE);
  return own;
}

export async function listBuiltInTemplates(ctx: RequestContext): Promise<{ data: AlertTemplateView[] }> {
  await authorize(ctx, 'alerts:read');
  return { data: BUILT_IN.map(builtInView) };
}

export const AlertTemplateListQuery = PageQuery.extend({ orgId: uuid().optional().describe('only templates of this organization') }).strict();
export type AlertTemplateListInput = z.input<typeof AlertTemplateListQuery>;

/** The organizations' own templates, by name (the built-in ones are listed apart). */
export async function listAlertTemplates(ctx: RequestContext, rawQuery: AlertTemplateListInput): Promise<Page<AlertTemplateView>> {
  const query = parseInput(AlertTemplateListQuery, rawQuery);
  await authorize(ctx, 'alerts:read');
  const where = (await tenantWhere<AlertTemplate>(ctx, { org: 'orgId', requestedOrgId: query.orgId })) ?? {};
  const [rows, total] = await ctx.em.findAndCount(AlertTemplate, where, { orderBy: { name: 'asc', id: 'asc' }, ...pageOptions(query) });
  return toPage(rows.map(templateView), total, query);
}

const templateName = z.string().trim().min(1).max(255);
const templateDescription = z.string().trim().max(2000).nullable().optional();

export const CreateAlertTemplateSchema = z.strictObject({
  orgId: uuid().optional().describe('organization users: their own organization by default; others: required'),
  name: templateName.describe('unique in the organization'),
  description: templateDescription.describe('what it watches'),
  conditions: ConditionsSchema.describe('the conditions rules made from it take'),
  severity: AlertSeveritySchema.describe('the severity rules made from it take'),
}).describe('A new alert template of an organization: conditions and severity its rules can start from.');
export type CreateAlertTemplateInput = z.input<typeof CreateAlertTemplateSchema>;
export const UpdateAlertTemplateSchema = z.strictObject({
  name: templateName.optional().describe('unique in the organization'),
  description: templateDescription.describe('what it watches'),
  conditions: ConditionsSchema.optional().describe('replaces every condition (rules already made keep theirs)'),
  severity: AlertSeveritySchema.optional().describe('the severity rules made from now on take'),
}).describe('Changes to an alert template; a field left out keeps its value, and rules already made from it keep theirs.');
export type UpdateAlertTemplateInput = z.input<typeof UpdateAlertTemplateSchema>;

const uniqueName = uniqueNameGuard('alert_template_org_id_name_unique', 'A template');

export async function createAlertTemplate(ctx: RequestContext, rawInput: CreateAlertTemplateInput): Promise<AlertTemplateView> {
  const input = parseInput(CreateAlertTemplateSchema, rawInput);
  const orgId = await targetOrgId(ctx, input.orgId);
  await authorize(ctx, 'alerts:write', { orgId, resource: 'Organization' });
  return uniqueName(
    withTransaction(ctx, async (tx) => {
      const template = tx.em.create(AlertTemplate, { orgId, name: input.name, description: input.description ?? null, conditions: input.conditions.map(normalizeCondition), severity: input.severity });
      await tx.em.flush();
      await recordAudit(tx, { action: 'alert_template.create', resourceType: 'alert_template', resourceId: template.id, orgId, changes: providedFields({ ...input, orgId }), details: { name: template.name } });
      return templateView(template);
    }),
  );
}

/** Built-in templates cannot change: their ids answer 404 here, as a template the caller cannot see. */
export async function updateAlertTemplate(ctx: RequestContext, id: string, rawInput: UpdateAlertTemplateInput): Promise<AlertTemplateView> {
  const input = parseInput(UpdateAlertTemplateSchema, rawInput);
  const template = await loadOwned(ctx, AlertTemplate, id, 'alerts:write', { resource: RESOURCE });
  return uniqueName(
    withTransaction(ctx, async (tx) => {
      const current = await tx.em.findOneOrFail(AlertTemplate, { id: template.id }, { refresh: true });
      const changes = applyChanges(current, { ...input, conditions: input.conditions?.map(normalizeCondition) });
      if (changes.length === 0) return templateView(current);
      await tx.em.flush();
      await recordAudit(tx, { action: 'alert_template.update', resourceType: 'alert_template', resourceId: current.id, orgId: current.orgId, changes, details: { name: current.name } });
      return templateView(current);
    }),
  );
}

/** Rules made from the template keep their conditions. */
export async function deleteAlertTemplate(ctx: RequestContext, id: string): Promise<void> {
  const template = await loadOwned(ctx, AlertTemplate, id, 'alerts:write', { resource: RESOURCE });
  await withTransaction(ctx, async (tx) => {
    await tx.em.nativeDelete(AlertTemplate, { id: template.id });
    await recordAudit(tx, { action: 'alert_template.delete', resourceType: 'alert_template', resourceId: template.id, orgId: template.orgId, details: { name: template.name } });
  });
}

// ── correlation ─────────────────────────────────────────────────────────────────────────────────

const SEVERITY_RANK = Object.fromEntries(ALERT_SEVERITIES.map((s, i) => [s, i])) as Record<AlertSeverity, number>;
const graver = (a: AlertSeverity, b: AlertSeverity) => (SEVERITY_RANK[a] <= SEVERITY_RANK[b] ? a : b);

/** What an incident's alerts share: the group their rule watches, else their site, else their device. */
type RuleTarget = Pick<AlertRule, 'targetType' | 'targetId'> | null | undefined;
const correlationKey = (alert: Pick<Alert, 'siteId' | 'deviceId'>, rule: RuleTarget) =>
  rule?.targetType === 'group' ? `group:${rule.targetId}` : alert.siteId ? `site:${alert.siteId}` : `device:${alert.deviceId}`;

/** In the alert's transaction: joins it to its group's, site's (or device's) open incident, or starts one. */
export async function correlate(tx: RequestContext, alert: Alert, rule: RuleTarget): Promise<void> {
  const key = correlationKey(alert, rule);
  const since = new Date(alert.triggeredAt.getTime() - CORRELATION_WINDOW_MINUTES * 60_000);
  const group =
    (await tx.em.findOne(AlertCorrelationGroup, { orgId: alert.orgId, key, lastAlertAt: { $gte: since } }, { orderBy: { lastAlertAt: 'desc' } })) ??
    tx.em.create(AlertCorrelationGroup, { orgId: alert.orgId, siteId: alert.siteId, key, severity: alert.severity, firstAlertAt: alert.triggeredAt, lastAlertAt: alert.triggeredAt });
  group.alertCount += 1;
  group.severity = graver(group.severity, alert.severity);
  if (alert.triggeredAt > group.lastAlertAt) group.lastAlertAt = alert.triggeredAt;
  alert.correlationGroupId = group.id;
}

export const CorrelationGroupViewSchema = z
  .object({
    id: uuid().describe('the incident'),
    orgId: uuid().describe('the organization it belongs to'),
    siteId: uuid().nullable().describe('the site its alerts share; null for a device without a site'),
    key: z.string().describe('what the alerts share: group:<id> (their rule watches that group), site:<id>, or device:<id> for devices without a site'),
    severity: AlertSeveritySchema.describe('the gravest of its alerts'),
    alertCount: z.number().int().describe('alerts grouped in it'),
    firstAlertAt: timestamp().describe('when its first alert was raised'),
    lastAlertAt: timestamp().describe('when its latest alert was raised'),
  })
  .meta({ title: 'AlertCorrelationGroup', description: `Alerts of one site raised within ${CORRELATION_WINDOW_MINUTES} minutes of each other: one incident` });
export type CorrelationGroupView = z.output<typeof CorrelationGroupViewSchema>;
export const CorrelationGroupPageSchema = pageSchema(CorrelationGroupViewSchema, 'AlertCorrelationGroupPage');

const groupView = (g: AlertCorrelationGroup): CorrelationGroupView => ({
  id: g.id,
  orgId: g.orgId,
  siteId: g.siteId,
  key: g.key,
  severity: g.severity,
  alertCount: g.alertCount,
  firstAlertAt: g.firstAlertAt.toISOString(),
  lastAlertAt: g.lastAlertAt.toISOString(),
});

export const CorrelationGroupListQuery = PageQuery.extend({ orgId: uuid().optional().describe('only incidents of this organization'), siteId: uuid().optional().describe('only incidents of this site') }).strict();
export type CorrelationGroupListInput = z.input<typeof CorrelationGroupListQuery>;

/** Incidents, latest first. Site-limited callers see their sites' only. */
export async function listCorrelationGroups(ctx: RequestContext, rawQuery: CorrelationGroupListInput): Promise<Page<CorrelationGroupView>> {
  const query = parseInput(CorrelationGroupListQuery, rawQuery);
  await authorize(ctx, 'alerts:read');
  const where: FilterQuery<AlertCorrelationGroup>[] = [(await tenantWhere<AlertCorrelationGroup>(ctx, { org: 'orgId', site: 'siteId', requestedOrgId: query.orgId })) ?? {}];
  if (query.siteId) where.push({ siteId: query.siteId });
  const [rows, total] = await ctx.em.findAndCount(AlertCorrelationGroup, { $and: where }, { orderBy: { lastAlertAt: 'desc', id: 'desc' }, ...pageOptions(query) });
  return toPage(rows.map(groupView), total, query);
}

export const CorrelationViewSchema = z
  .object({
    groupId: uuid().describe('the incident'),
    alertId: uuid().describe('the alert'),
    deviceId: uuid().describe('the alert’s device'),
    siteId: uuid().nullable().describe('the alert’s site'),
    severity: AlertSeveritySchema.describe('the alert’s severity'),
    title: z.string().describe('the alert’s title'),
    triggeredAt: timestamp().describe('when the alert was raised'),
  })
  .meta({ title: 'AlertCorrelation', description: 'An alert and the incident (correlation group) it belongs to' });
export const CorrelationPageSchema = pageSchema(CorrelationViewSchema, 'AlertCorrelationPage');
export const CorrelationListQuery = PageQuery.extend({ orgId: uuid().optional().describe('only alerts of this organization'), groupId: uuid().optional().describe('only alerts of this incident') }).strict();
export type CorrelationListInput = z.input<typeof CorrelationListQuery>;

/** Which alert belongs to which incident, latest first (optionally of one incident). */
export async function listCorrelations(ctx: RequestContext, rawQuery: CorrelationListInput): Promise<Page<z.output<typeof CorrelationViewSchema>>> {
  const query = parseInput(CorrelationListQuery, rawQuery);
  await authorize(ctx, 'alerts:read');
  const where: FilterQuery<Alert>[] = [(await tenantWhere<Alert>(ctx, { org: 'orgId', site: 'siteId', requestedOrgId: query.orgId })) ?? {}, { correlationGroupId: { $ne: null } }];
  if (query.groupId) where.push({ correlationGroupId: query.groupId });
  const [rows, total] = await ctx.em.findAndCount(Alert, { $and: where }, { orderBy: { triggeredAt: 'desc', id: 'desc' }, ...pageOptions(query) });
  const data = rows.map((a) => ({ groupId: a.correlationGroupId!, alertId: a.id, deviceId: a.deviceId, siteId: a.siteId, severity: a.severity, title: a.title, triggeredAt: a.triggeredAt.toISOString() }));
  return toPage(data, total, query);
}

export const AnalyzeCorrelationsSchema = z
  .strictObject({ orgId: uuid().optional().describe('organization users: their own organization by default; others: required') })
  .describe('The organization whose unresolved alerts are regrouped into incidents from scratch.');
export type AnalyzeCorrelationsInput = z.input<typeof AnalyzeCorrelationsSchema>;
export const CorrelationAnalysisSchema = z
  .object({ groups: z.number().int().describe('incidents after the analysis'), alerts: z.number().int().describe('unresolved alerts regrouped') })
  .meta({ title: 'AlertCorrelationAnalysis', description: 'What a regrouping found' });
export type CorrelationAnalysis = z.output<typeof CorrelationAnalysisSchema>;

/** Regroups the organization's unresolved alerts from scratch, oldest first; incidents left empty go. */
export async function analyzeCorrelations(ctx: RequestContext, rawInput: AnalyzeCorrelationsInput): Promise<CorrelationAnalysis> {
  const input = parseInput(AnalyzeCorrelationsSchema, rawInput);
  const orgId = await targetOrgId(ctx, input.orgId);
  await authorize(ctx, 'alerts:write', { orgId, resource: 'Organization' });
  return withTransaction(ctx, async (tx) => {
    // One analysis of an organization at a time: it rewrites what concurrent ones would read.
    await tx.em.execute('select pg_advisory_xact_lock(hashtext(?))', [`alert-correlation:${orgId}`]);
    const alerts = await tx.em.find(Alert, { orgId, status: { $ne: 'resolved' } }, { orderBy: { triggeredAt: 'asc', id: 'asc' } });
    const rules = new Map((await tx.em.find(AlertRule, { orgId }, { fields: ['id', 'targetType', 'targetId'] })).map((r) => [r.id, r]));
    const previous = new Set(alerts.map((a) => a.correlationGroupId).filter((id): id is string => id !== null));
    for (const alert of alerts) alert.correlationGroupId = null;
    await tx.em.flush();
    // Incidents keep their resolved alerts; only those left empty go.
    if (previous.size > 0) await tx.em.execute('delete from alert_correlation_group g where g.id in (?) and not exists (select 1 from alert a where a.correlation_group_id = g.id)', [[...previous]]);
    const groups = new Map<string, AlertCorrelationGroup>();
    let created = 0;
    for (const alert of alerts) {
      const key = correlationKey(alert, alert.ruleId ? rules.get(alert.ruleId) : null);
      let group = groups.get(key);
      if (!group || alert.triggeredAt.getTime() - group.lastAlertAt.getTime() > CORRELATION_WINDOW_MINUTES * 60_000) {
        created += 1;
        group = tx.em.create(AlertCorrelationGroup, { orgId, siteId: alert.siteId, key, severity: alert.severity, firstAlertAt: alert.triggeredAt, lastAlertAt: alert.triggeredAt });
        groups.set(key, group);
      }
      group.alertCount += 1;
      group.severity = graver(group.severity, alert.severity);
      group.lastAlertAt = alert.triggeredAt;
      alert.correlationGroupId = group.id;
    }
    await tx.em.flush();
    return { groups: created, alerts: alerts.length };
  });
}
