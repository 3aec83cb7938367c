import { LockMode, raw, type FilterQuery, type QBFilterQuery } from '@mikro-orm/core';
import DataLoader from 'dataloader';
import { z } from 'zod';
import { ALERT_SEVERITIES, ALERT_STATUSES, Alert } from '../../../entities/alert.js';
import type { RequestContext } from '../../auth/context.js';
import type { Loaders } from '../../auth/loaders.js';
import { authorize, loadOwned, permits, requirePrincipal, tenantWhere, visibleSiteIds } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { publishOnCommit } from '../../events/pubsub.js';
import { selectIterable } from '../../events/subscriptions.js';
import type { AlertEventData } from './events.js';
import { badRequest, conflict } from '../../errors.js';
import { onePer } from '../../memo.js';
import { uuidArray } from '../../db/arrays.js';
import { CursorQuery, keysetWhere, finishCursorPage, encodeCursor, pageInfoOf, type Connection } from '../../pagination.js';
import { enumValues, isoDateTime, parseInput, timestamp, uuid } from '../../validation.js';
import { AlertSeveritySchema } from './alert-conditions.js';
import { recordChange, recordAudit } from '../audit/api.js';
import { shownWhen } from '../../events/sight.js';

/*
 * Alerts: raised by rules (alert-evaluation.ts) and any other domain through `raiseAlert`
 * (alert-raise.ts), then acknowledged, resolved or suppressed by people. Every change publishes on commit to ALERT_TOPIC (the `alertChanged` subscription, on
 * every instance) and drops the device's evaluation state on every instance (ALERT_STATE_TOPIC).
 */

const RESOURCE = 'Alert';
export const ALERT_TOPIC = 'alert_changed';
/** Evaluation's per-instance state of a device is stale once one of its alerts changed elsewhere. */
export const ALERT_STATE_TOPIC = 'alert_state_changed';

export const AlertStatusSchema = z
  .enum(ALERT_STATUSES)
  .meta({ title: 'AlertStatus', description: 'active, acknowledged (someone is on it), resolved, or suppressed (maintenance, or by hand)' })
  .register(enumValues, {
    active: 'Raised and not yet acknowledged: its policies notify and escalate.',
    acknowledged: 'Someone is on it: its escalation steps no longer run.',
    resolved: 'Over: resolved by hand, or by itself once its conditions cleared (rules with autoResolve).',
    suppressed: 'Silenced, without notifications: raised under a maintenance window that suppresses alerts, or suppressed by hand until `suppressedUntil`.',
  });

export const AlertViewSchema = z
  .object({
    id: uuid().describe('the alert'),
    orgId: uuid().describe('the organization it belongs to'),
    siteId: uuid().nullable().describe('the site of its device when it was raised'),
    deviceId: uuid().nullable().describe('the device it is about; null for an alert about no one device'),
    ruleId: uuid().nullable().describe('the rule that raised it; null once the rule is deleted, and for alerts of other sources'),
    source: z.string().describe('what raised it: `alert_rule` for rules, else the raising domain (`monitor`, …)'),
    sourceId: uuid().nullable().describe('which rule, monitor, … of its source raised it; null for rule alerts whose rule was deleted before sources were recorded'),
    severity: AlertSeveritySchema,
    status: AlertStatusSchema,
    title: z.string().describe('what happened (rules: the rule’s name and the device’s hostname)'),
    message: z.string().nullable().describe('more about it (rules: the values that made the conditions hold)'),
    triggeredAt: timestamp().describe('when it was raised'),
    acknowledgedAt: timestamp().nullable().describe('when someone acknowledged it'),
    resolvedAt: timestamp().nullable().describe('when it was resolved (by hand, or its conditions cleared)'),
    suppressedUntil: timestamp().nullable().describe('suppressed by hand: until when'),
    correlationGroupId: uuid().nullable().describe('the incident (correlation group) it belongs to'),
  })
  .meta({ title: 'Alert', description: 'Something a rule (or another source: a monitor, …) raised, usually about a device' });
export type AlertView = z.output<typeof AlertViewSchema>;

const iso = (date: Date | null) => date?.toISOString() ?? null;

export function alertView(a: Alert): AlertView {
  return {
    id: a.id,
    orgId: a.orgId,
    siteId: a.siteId,
    deviceId: a.deviceId,
    ruleId: a.ruleId,
    source: a.source,
    sourceId: a.sourceId,
    severity: a.severity,
    status: a.status,
    title: a.title,
    message: a.message,
    triggeredAt: a.triggeredAt.toISOString(),
    acknowledgedAt: iso(a.acknowledgedAt),
    resolvedAt: iso(a.resolvedAt),
    suppressedUntil: iso(a.suppressedUntil),
    correlationGroupId: a.correlationGroupId,
  };
}

export function alertEventData(a: Alert): AlertEventData {
  return { alertId: a.id, orgId: a.orgId, siteId: a.siteId, deviceId: a.deviceId, ruleId: a.ruleId, source: a.source, sourceId: a.sourceId, severity: a.severity, status: a.status, title: a.title };
}

/** In the change's transaction: the subscription and every instance's evaluation state hear of it once it commits. */
export async function alertChanged(tx: RequestContext, alert: Alert): Promise<void> {
  await publishOnCommit(tx.em, ALERT_TOPIC, alertEventData(alert));
  if (alert.deviceId) await publishOnCommit(tx.em, ALERT_STATE_TOPIC, { deviceId: alert.deviceId });
}

/** The alert as notification channels deliver it (no access decision: the caller is the system acting on an event). */
export async function getAlertForDelivery(ctx: RequestContext, alertId: string): Promise<AlertView | null> {
  const alert = await ctx.em.findOne(Alert, { id: alertId });
  return alert && alertView(alert);
}

function accessibleAlert(ctx: RequestContext, id: string, permission: 'alerts:read' | 'alerts:write'): Promise<Alert> {
  return loadOwned(ctx, Alert, id, permission, { resource: RESOURCE });
}

// ── lists ───────────────────────────────────────────────────────────────────────────────────────

const filters = {
  status: AlertStatusSchema.optional().describe('only alerts in this status (every status by default)'),
  severity: AlertSeveritySchema.optional().describe('only alerts of this severity'),
  orgId: uuid().optional().describe('only alerts of this organization'),
  siteId: uuid().optional().describe('only alerts of this site'),
  deviceId: uuid().optional().describe('only alerts of this device'),
  source: z.string().max(40).optional().describe('only alerts this source raised (`alert_rule`, `monitor`, …)'),
  since: isoDateTime().optional().describe('triggered at or after'),
  until: isoDateTime().optional().describe('triggered before'),
};
export const AlertListQuery = z.strictObject({ ...filters, cursor: CursorQuery.shape.cursor.describe('`nextCursor` of the previous page'), limit: CursorQuery.shape.limit });
export type AlertListInput = z.input<typeof AlertListQuery>;
export const AlertPageSchema = z
  .object({ data: z.array(AlertViewSchema).describe('the page’s alerts'), nextCursor: z.string().nullable().describe('pass back as `cursor` for the next page; null on the last'), limit: z.number().int().describe('the page size asked for') })
  .meta({ title: 'AlertPage', description: 'A page of alerts, newest first' });
export type AlertPage = z.output<typeof AlertPageSchema>;

async function alertFilter(ctx: RequestContext, query: z.output<z.ZodObject<typeof filters>>): Promise<FilterQuery<Alert>> {
  await authorize(ctx, 'alerts:read');
  const where: FilterQuery<Alert>[] = [(await tenantWhere<Alert>(ctx, { org: 'orgId', site: 'siteId', requestedOrgId: query.orgId })) ?? {}];
  if (query.status) where.push({ status: query.status });
  if (query.severity) where.push({ severity: query.severity });
  if (query.siteId) where.push({ siteId: query.siteId });
  if (query.deviceId) where.push({ deviceId: query.deviceId });
  if (query.source) where.push({ source: query.source });
  if (query.since) where.push({ triggeredAt: { $gte: new Date(query.since) } });
  if (query.until) where.push({ triggeredAt: { $lt: new Date(query.until) } });
  return { $and: where } as FilterQuery<Alert>;
}

async function alertPage(ctx: RequestContext, filter: FilterQuery<Alert>, cursor: string | undefined, limit: number) {
  const keyset = keysetWhere('triggeredAt', 'date', 'desc', cursor);
  const rows = await ctx.em.find(Alert, { $and: [filter, keyset.where] } as FilterQuery<Alert>, { orderBy: keyset.orderBy, limit: limit + 1 });
  return finishCursorPage(rows, limit, (a) => a.triggeredAt.toISOString());
}

/** Alerts the caller can see, newest first, in keyset pages. */
export async function listAlerts(ctx: RequestContext, rawQuery: AlertListInput): Promise<AlertPage> {
  const query = parseInput(AlertListQuery, rawQuery);
  const page = await alertPage(ctx, await alertFilter(ctx, query), query.cursor, query.limit);
  return { data: page.items.map(alertView), nextCursor: page.nextCursor, limit: query.limit };
}

export const AlertConnectionArgs = z.strictObject({ ...filters, first: CursorQuery.shape.limit, after: CursorQuery.shape.cursor.describe('`endCursor` of the previous page') });
export type AlertConnectionInput = z.input<typeof AlertConnectionArgs>;

/** `listAlerts` as a Relay connection. */
export async function alertsConnection(ctx: RequestContext, rawArgs: AlertConnectionInput): Promise<Connection<AlertView>> {
  const { first, after, ...rest } = parseInput(AlertConnectionArgs, rawArgs);
  const filter = await alertFilter(ctx, rest);
  const page = await alertPage(ctx, filter, after, first);
  const edges = page.items.map((a) => ({ node: alertView(a), cursor: encodeCursor({ value: a.triggeredAt.toISOString(), id: a.id }) }));
  return { edges, pageInfo: pageInfoOf(edges, page.nextCursor !== null, after != null), totalCount: () => ctx.em.count(Alert, filter) };
}

const counts = <T extends readonly string[]>(keys: T) => z.object(Object.fromEntries(keys.map((k) => [k, z.number().int().describe(`alerts ${k}`)])) as Record<T[number], z.ZodNumber>);
export const AlertSummarySchema = z
  .object({
    total: z.number().int().describe('alerts not resolved'),
    bySeverity: counts(ALERT_SEVERITIES).meta({ title: 'AlertSeverityCounts', description: 'alerts not resolved, per severity' }),
    byStatus: counts(ALERT_STATUSES).meta({ title: 'AlertStatusCounts', description: 'every alert, per status' }),
  })
  .meta({ title: 'AlertSummary', description: 'Counts of the alerts the caller can see' });
export type AlertSummary = z.output<typeof AlertSummarySchema>;
export const AlertSummaryQuery = z.strictObject({ orgId: filters.orgId, siteId: filters.siteId });
export type AlertSummaryInput = z.input<typeof AlertSummaryQuery>;

/** Counts of the alerts the caller can see: one grouped statement. */
export async function alertSummary(ctx: RequestContext, rawQuery: AlertSummaryInput): Promise<AlertSummary> {
  const query = parseInput(AlertSummaryQuery, rawQuery);
  const filter = await alertFilter(ctx, query);
  const rows = await ctx.em
    .createQueryBuilder(Alert, 'a')
    .select(['status', 'severity', raw('count(*)::int as n')])
    .where(filter as QBFilterQuery<Alert>)
    .groupBy(['status', 'severity'])
    .execute<{ status: Alert['status']; severity: Alert['severity']; n: number }[]>('all', false);
  const summary: AlertSummary = {
    total: 0,
    bySeverity: Object.fromEntries(ALERT_SEVERITIES.map((s) => [s, 0])) as AlertSummary['bySeverity'],
    byStatus: Object.fromEntries(ALERT_STATUSES.map((s) => [s, 0])) as AlertSummary['byStatus'],
  };
  for (const row of rows) {
    summary.byStatus[row.status] += row.n;
    if (row.status === 'resolved') continue;
    summary.total += row.n;
    summary.bySeverity[row.severity] += row.n;
  }
  return summary;
}

export async function getAlert(ctx: RequestContext, id: string): Promise<AlertView> {
  return alertView(await accessibleAlert(ctx, id, 'alerts:read'));
}

// ── people's actions ────────────────────────────────────────────────────────────────────────────

export const ResolveAlertSchema = z.strictObject({ note: z.string().trim().max(2000).optional().describe('why or how it was resolved') }).describe('How an alert was resolved; the note is optional.');
export type ResolveAlertInput = z.input<typeof ResolveAlertSchema>;
export const SuppressAlertSchema = z
  .strictObject({ until: isoDateTime().describe('a future instant; the alert stays suppressed until then') })
  .describe('Until when an alert is silenced; it then returns to active, or acknowledged if it was.');
export type SuppressAlertInput = z.input<typeof SuppressAlertSchema>;

/** The alert locked in the caller's transaction, decided on as `GET /alerts/:id` would. */
async function lockedAlert(tx: RequestContext, id: string): Promise<Alert> {
  const alert = await accessibleAlert(tx, id, 'alerts:write');
  await tx.em.findOne(Alert, { id: alert.id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
  return alert;
}

const alreadyResolved = () => conflict('The alert is resolved');

/** Someone is on it. Acknowledging an acknowledged alert changes nothing; a resolved one is 409. */
export async function acknowledgeAlert(ctx: RequestContext, id: string): Promise<AlertView> {
  return withTransaction(ctx, async (tx) => {
    const alert = await lockedAlert(tx, id);
    const principal = requirePrincipal(tx);
    if (alert.status === 'resolved') throw alreadyResolved();
    if (alert.status === 'acknowledged') return alertView(alert);
    Object.assign(alert, { status: 'acknowledged', acknowledgedAt: tx.runtime.clock.now(), acknowledgedBy: principal.id, suppressedUntil: null });
    await tx.em.flush();
    await recordChange(tx, { action: 'alert.acknowledge', resourceType: 'alert', resourceId: alert.id, orgId: alert.orgId, details: { title: alert.title } }, alertEventData(alert));
    await alertChanged(tx, alert);
    return alertView(alert);
  });
}

/** Resolved by hand (with an optional note); resolving a resolved alert changes nothing. */
export async function resolveAlert(ctx: RequestContext, id: string, rawInput: ResolveAlertInput): Promise<AlertView> {
  const input = parseInput(ResolveAlertSchema, rawInput);
  return withTransaction(ctx, async (tx) => {
    const alert = await lockedAlert(tx, id);
    const principal = requirePrincipal(tx);
    if (alert.status === 'resolved') return alertView(alert);
    Object.assign(alert, { status: 'resolved', resolvedAt: tx.runtime.clock.now(), resolvedBy: principal.id, resolutionNote: input.note ?? null });
    await tx.em.flush();
    await recordChange(tx, { action: 'alert.resolve', resourceType: 'alert', resourceId: alert.id, orgId: alert.orgId, details: { title: alert.title } }, alertEventData(alert));
    await alertChanged(tx, alert);
    return alertView(alert);
  });
}

/** Silenced until `until` (a future instant); a resolved alert is 409. */
export async function suppressAlert(ctx: RequestContext, id: string, rawInput: SuppressAlertInput): Promise<AlertView> {
  const input = parseInput(SuppressAlertSchema, rawInput);
  return withTransaction(ctx, async (tx) => {
    const alert = await lockedAlert(tx, id);
    const until = new Date(input.until);
    if (until <= tx.runtime.clock.now()) throw badRequest('until: must be in the future', [{ path: 'until', message: 'must be in the future' }]);
    if (alert.status === 'resolved') throw alreadyResolved();
    Object.assign(alert, { status: 'suppressed', suppressedUntil: until });
    await tx.em.flush();
    await recordAudit(tx, { action: 'alert.suppress', resourceType: 'alert', resourceId: alert.id, orgId: alert.orgId, details: { title: alert.title, until: input.until } });
    await alertChanged(tx, alert);
    return alertView(alert);
  });
}

const SUPPRESSION_BATCH = 500;

/**
 * Part of the recurring due check: alerts suppressed by hand whose `suppressedUntil` has passed (by
 * the service clock) are back to what they were (acknowledged, or active). Answers how many.
 */
export async function endSuppressions(ctx: RequestContext): Promise<number> {
  const now = ctx.runtime.clock.now();
  const due = await ctx.em.find(Alert, { status: 'suppressed', suppressedUntil: { $ne: null, $lte: now } }, { fields: ['id'], limit: SUPPRESSION_BATCH, disableIdentityMap: true });
  for (const { id } of due) {
    await withTransaction(ctx, async (tx) => {
      const alert = await tx.em.findOne(Alert, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
      if (!alert || alert.status !== 'suppressed' || !alert.suppressedUntil || alert.suppressedUntil > now) return;
      Object.assign(alert, { status: alert.acknowledgedAt ? 'acknowledged' : 'active', suppressedUntil: null });
      await tx.em.flush();
      await alertChanged(tx, alert);
    });
  }
  return due.length;
}

// ── live ────────────────────────────────────────────────────────────────────────────────────────

/**
 * Alerts as they are raised and change, of the organizations (and sites) the caller may see,
 * optionally of one organization, from whichever instance changed them. Each is answered as it is
 * when the notice arrives.
 */
/** Whether the caller may read an alert of this organization and site (site-limited callers: of their sites only): each live notice of one is decided by it. */
export async function maySeeAlert(ctx: RequestContext, alert: Pick<AlertEventData, 'orgId' | 'siteId'>): Promise<boolean> {
  const sites = visibleSiteIds(ctx, alert.orgId);
  if (sites && (!alert.siteId || !sites.includes(alert.siteId))) return false;
  return permits(ctx, 'alerts:read', { orgId: alert.orgId });
}

export async function subscribeAlertChanges(ctx: RequestContext, orgId: string | null): Promise<AsyncIterable<AlertView>> {
  if (orgId) await authorize(ctx, 'alerts:read', { orgId, resource: 'Organization' });
  else await authorize(ctx, 'alerts:read');
  return selectIterable(ctx.runtime.pubsub.subscribe(ALERT_TOPIC), async (data: AlertEventData): Promise<AlertView | null> => {
    if ((orgId && data.orgId !== orgId) || !(await maySeeAlert(ctx, data))) return null;
    // A fresh EntityManager per notice: the subscription lives long, its rows must not come from a cache.
    const alert = await ctx.em.fork().findOne(Alert, { id: data.alertId });
    return alert && alertView(alert);
  });
}

// ── per device ───────────────────────────────────────────────────────────────────────────────────

/** Per request (its Loaders, shared by every field of the request): each device's unresolved alerts, counted for a whole page of devices in one grouped statement. */
const openAlertCountsOf = onePer((_loaders: Loaders): { made?: DataLoader<string, number> } => ({}));

function openAlertCounts(ctx: RequestContext): DataLoader<string, number> {
  const slot = openAlertCountsOf(ctx.loaders);
  // No cache: a later mutation in the same request must not be answered from an earlier read.
  return (slot.made ??= new DataLoader<string, number>(
    async (deviceIds) => {
      const rows = (await ctx.em.execute(`select device_id, count(*)::int as n from alert where device_id = any(?::uuid[]) and status <> 'resolved' group by device_id`, [uuidArray(deviceIds)])) as { device_id: string; n: number }[];
      const counts = new Map(rows.map((row) => [row.device_id, row.n]));
      return deviceIds.map((id) => counts.get(id) ?? 0);
    },
    { cache: false },
  ));
}

/** The device's alerts not yet resolved (as `GET /alerts/summary` counts `total`); null unless the caller may read its organization's alerts. */
export async function openAlertCount(ctx: RequestContext, device: { id: string; orgId: string }): Promise<number | null> {
  const counted = openAlertCounts(ctx).load(device.id);
  counted.catch(() => {});
  if (!(await permits(ctx, 'alerts:read', { orgId: device.orgId }))) return null;
  return counted;
}

/** The alerts domain's events reach those who may read the alert. */
export const alertEventSight = shownWhen((ctx, event) => maySeeAlert(ctx, event.data as AlertEventData));
