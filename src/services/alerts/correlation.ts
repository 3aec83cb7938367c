import type { FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { ALERT_SEVERITIES, Alert, AlertCorrelationGroup, AlertRule, type AlertSeverity } from '../../../entities/alert.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, targetOrgId, tenantWhere } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { PageQuery, pageOptions, pageSchema, toPage, type Page } from '../../pagination.js';
import { parseInput, timestamp, uuid } from '../../validation.js';
import { AlertSeveritySchema } from './alert-conditions.js';

/*
 * Correlation: alerts of rules watching one group, else of one site (a device without a site: of that
 * device), raised within CORRELATION_WINDOW_MINUTES of the incident's last one share a correlation group,
 * so a dashboard shows one incident for a site-wide outage.
 */

export const CORRELATION_WINDOW_MINUTES = 10;

const SEVERITY_RANK = Object.fromEntries(ALERT_SEVERITIES.map((s, i) => [s, i])) as Record<AlertSeverity, number>;
const graver = (a: AlertSeverity, b: AlertSeverity) => (SEVERITY_RANK[a] <= SEVERITY_RANK[b] ? a : b);

/**
 * What an incident's alerts share: the group their source watches, else their site, else their device,
 * else (an alert about no device) the source's row that raised them.
 */
const correlationKey = (alert: Pick<Alert, 'siteId' | 'deviceId' | 'source' | 'sourceId'>, groupId: string | null) =>
  groupId ? `group:${groupId}` : alert.siteId ? `site:${alert.siteId}` : alert.deviceId ? `device:${alert.deviceId}` : `${alert.source}:${alert.sourceId}`;

/** The group a rule watches, when it watches one: its alerts correlate by it. */
const watchedGroup = (rule: Pick<AlertRule, 'targetType' | 'targetId'> | undefined) => (rule?.targetType === 'group' ? rule.targetId : null);

/** In the alert's transaction (`raiseAlert`): joins it to its group's, site's (or device's) open incident, or starts one. */
export async function correlate(tx: RequestContext, alert: Alert, groupId: string | null): Promise<void> {
  const key = correlationKey(alert, groupId);
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
    key: z.string().describe('what the alerts share: group:<id> (their rule watches that group), site:<id>, device:<id> for devices without a site, or <source>:<id> for alerts about no device'),
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
    deviceId: uuid().nullable().describe('the alert’s device; null for an alert about no one device'),
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
      const key = correlationKey(alert, watchedGroup(alert.ruleId ? rules.get(alert.ruleId) : undefined));
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
