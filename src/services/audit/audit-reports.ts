import { raw, type FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { AuditLog, type AuditResult } from '../../../entities/audit-log.js';
import type { RequestContext } from '../../auth/context.js';
import { requirePrincipal } from '../../auth/policy.js';
import { badRequest } from '../../errors.js';
import { PageQuery } from '../../pagination.js';
import { isoDateTime, parseInput, timestamp, uuid } from '../../validation.js';
import { ActorTypeSchema, AuditLogViewSchema, AuditResultSchema, auditLogView, auditWhere, authorizeRead, plain, recordRead, type ParsedFilters } from './audit-log.js';
import { ChainVerificationSchema, ChainsVerificationSchema, auditHash, verifiableChains, verifyAuditChains, type ChainVerification } from './record.js';

/** Reports cover `from`..`to`, the last 30 days by default. */
export const AuditPeriodQuery = z.object({ orgId: uuid().optional().describe('Only entries of this organization.'), from: isoDateTime().optional().describe('Start of the period; 30 days before `to` by default.'), to: isoDateTime().optional().describe('End of the period; now by default.') }).strict();
export type AuditPeriodQuery = z.input<typeof AuditPeriodQuery>;
export const AuditReportQuery = AuditPeriodQuery.extend({ limit: PageQuery.shape.limit }).strict();
export type AuditReportQuery = z.input<typeof AuditReportQuery>;

const count = () => z.number().int();
const AuditActionCountSchema = z
  .object({ action: z.string().describe('An audit action name (user.login, device.update, …).'), count: count().describe('Entries with this action in the period.') })
  .meta({ title: 'AuditActionCount', description: 'How many entries one action has.' });

export const UserActivitySchema = z
  .object({
    actorType: ActorTypeSchema,
    actorId: uuid().nullable(),
    actorEmail: z.string().nullable(),
    total: count(),
    success: count(),
    denied: count(),
    failure: count(),
    firstAt: timestamp(),
    lastAt: timestamp(),
    actions: z.array(AuditActionCountSchema).describe('the actor\'s entries per action, the most frequent first'),
  })
  .meta({ title: 'AuditUserActivity' });
export type UserActivity = z.output<typeof UserActivitySchema>;
export const UserActivityReportSchema = z.object({ from: timestamp(), to: timestamp(), users: z.array(UserActivitySchema) }).meta({ title: 'AuditUserActivityReport' });
export type UserActivityReport = z.output<typeof UserActivityReportSchema>;

/** Per actor, the most active first: how many entries of each result and action in the period. */
export async function userActivityReport(ctx: RequestContext, query: AuditReportQuery): Promise<UserActivityReport> {
  const input = parseInput(AuditReportQuery, query);
  const tenant = await authorizeRead(ctx, 'audit:read', input.orgId);
  const filters = { orgId: input.orgId, ...period(input) };
  const actors = (await ctx.em
    .createQueryBuilder(AuditLog, 'a')
    .select([
      raw('a.actor_type as "actorType"'),
      raw('a.actor_id as "actorId"'),
      raw('max(a.actor_email) as "actorEmail"'),
      raw('count(*)::int as total'),
      ...RESULTS.map((result) => raw(`(count(*) filter (where a.result = ?))::int as "${result}"`, [result])),
      raw('min(a.created_at) as "firstAt"'),
      raw('max(a.created_at) as "lastAt"'),
    ])
    .where(auditWhere(tenant, filters))
    .groupBy(['actorType', 'actorId'])
    .orderBy([{ [raw('count(*)')]: 'desc' }, { [raw('max(a.created_at)')]: 'desc' }])
    .limit(input.limit)
    .execute('all', false)) as (Omit<UserActivity, 'actions' | 'firstAt' | 'lastAt'> & { firstAt: Date; lastAt: Date })[];
  const actions = (await ctx.em
    .createQueryBuilder(AuditLog, 'a')
    .select([raw('a.actor_type as "actorType"'), raw('a.actor_id as "actorId"'), 'a.action', raw('count(*)::int as count')])
    .where(auditWhere(tenant, filters))
    .groupBy(['actorType', 'actorId', 'action'])
    .orderBy([{ [raw('count(*)')]: 'desc' }, { action: 'asc' }])
    .execute('all', false)) as { actorType: string; actorId: string | null; action: string; count: number }[];
  const key = (r: { actorType: string; actorId: string | null }) => `${r.actorType}:${r.actorId ?? ''}`;
  await recordRead(ctx, 'audit.read', { view: 'report:user-activity', filters: plain(filters) }, input.orgId);
  return {
    from: filters.from,
    to: filters.to,
    users: actors.map((a) => ({
      ...a,
      firstAt: new Date(a.firstAt).toISOString(),
      lastAt: new Date(a.lastAt).toISOString(),
      actions: actions.filter((r) => key(r) === key(a)).map(({ action, count }) => ({ action, count })),
    })),
  };
}

/**
 * What the security report counts. Other domains name their actions `<resource>.<verb>`; these
 * patterns (SQL LIKE) pick out sign-ins, MFA, API key and role changes whatever the domain.
 */
const SECURITY_CATEGORIES: { name: string; actions?: string[]; result?: AuditResult }[] = [
  { name: 'logins', actions: ['%login%'], result: 'success' },
  { name: 'loginFailures', actions: ['%login%'], result: 'failure' },
  { name: 'denied', result: 'denied' },
  { name: 'mfaChanges', actions: ['%mfa%'], result: 'success' },
  { name: 'apiKeyChanges', actions: ['api_key.%'], result: 'success' },
  { name: 'roleChanges', actions: ['role.%', '%.role%'], result: 'success' },
  { name: 'accessRevocations', actions: ['user.access.revoke'], result: 'success' },
];

function categoryWhere(category: (typeof SECURITY_CATEGORIES)[number]): FilterQuery<AuditLog> {
  const parts: FilterQuery<AuditLog>[] = [];
  if (category.actions) parts.push({ $or: category.actions.map((pattern) => ({ action: { $like: pattern } })) });
  if (category.result) parts.push({ result: category.result });
  return { $and: parts };
}

function inCategory(row: AuditLog, category: (typeof SECURITY_CATEGORIES)[number]): boolean {
  const likes = (pattern: string) => new RegExp(`^${pattern.split('%').map(escapeRegExp).join('.*')}$`).test(row.action);
  return (!category.result || row.result === category.result) && (!category.actions || category.actions.some(likes));
}

export const SecurityEventsReportSchema = z
  .object({
    from: timestamp(),
    to: timestamp(),
    totals: z.record(z.string(), count()).describe(`entries per category: ${SECURITY_CATEGORIES.map((c) => c.name).join(', ')}`),
    events: z.array(
      AuditLogViewSchema.extend({ categories: z.array(z.string()).describe('the categories the entry counts in') }).meta({ title: 'AuditSecurityEvent' }),
    ),
  })
  .meta({ title: 'AuditSecurityEventsReport' });
export type SecurityEventsReport = z.output<typeof SecurityEventsReportSchema>;

export async function securityEventsReport(ctx: RequestContext, query: AuditReportQuery): Promise<SecurityEventsReport> {
  const input = parseInput(AuditReportQuery, query);
  const tenant = await authorizeRead(ctx, 'audit:read', input.orgId);
  const filters = { orgId: input.orgId, ...period(input) };
  const totals: Record<string, number> = {};
  for (const category of SECURITY_CATEGORIES) {
    totals[category.name] = await ctx.em.count(AuditLog, { $and: [auditWhere(tenant, filters), categoryWhere(category)] });
  }
  const rows = await ctx.em.find(
    AuditLog,
    { $and: [auditWhere(tenant, filters), { $or: SECURITY_CATEGORIES.map(categoryWhere) }] },
    { orderBy: { seq: 'desc' }, limit: input.limit },
  );
  await recordRead(ctx, 'audit.read', { view: 'report:security-events', filters: plain(filters) }, input.orgId);
  return {
    from: filters.from,
    to: filters.to,
    totals,
    events: rows.map((row) => ({ ...auditLogView(row), categories: SECURITY_CATEGORIES.filter((c) => inCategory(row, c)).map((c) => c.name) })),
  };
}

export const ComplianceReportSchema = z
  .object({
    from: timestamp(),
    to: timestamp(),
    totals: z.object({ events: count(), success: count(), denied: count(), failure: count() }).meta({ title: 'AuditResultTotals' }),
    actors: count(),
    exports: count(),
    integrity: ChainVerificationSchema.describe('every entry the caller can see in the period still hashes to its stored hash (edits show here)'),
    chain: ChainsVerificationSchema.describe('the links and hashes of every chain the caller may verify, whole (edits and deletions anywhere in them)'),
  })
  .meta({ title: 'AuditComplianceReport' });
export type ComplianceReport = z.output<typeof ComplianceReportSchema>;

/**
 * `integrity` covers the caller's entries in the period; `chain` walks the caller's chains whole:
 * every chain for system callers, the organizations' (and partner's) own otherwise.
 */
export async function complianceReport(ctx: RequestContext, query: AuditPeriodQuery): Promise<ComplianceReport> {
  const input = parseInput(AuditPeriodQuery, query);
  const tenant = await authorizeRead(ctx, 'audit:read', input.orgId);
  const principal = requirePrincipal(ctx);
  const filters = { orgId: input.orgId, ...period(input) };
  const [counts] = (await ctx.em
    .createQueryBuilder(AuditLog, 'a')
    .select([
      raw('count(*)::int as events'),
      ...RESULTS.map((result) => raw(`(count(*) filter (where a.result = ?))::int as "${result}"`, [result])),
      raw('count(distinct a.actor_id)::int as actors'),
      raw(`(count(*) filter (where a.action = 'audit.export'))::int as exports`),
    ])
    .where(auditWhere(tenant, filters))
    .execute('all', false)) as { events: number; success: number; denied: number; failure: number; actors: number; exports: number }[];
  const integrity = await verifyEntries(ctx, tenant, filters);
  const chain = await verifyAuditChains(ctx.em, await verifiableChains(ctx, principal, input.orgId));
  await recordRead(ctx, 'audit.read', { view: 'report:compliance', filters: plain(filters) }, input.orgId);
  const { actors, exports, ...totals } = counts!;
  return { from: filters.from, to: filters.to, totals, actors, exports, integrity, chain };
}

/** Recomputes the hash of each visible entry in the period, oldest first. */
async function verifyEntries(ctx: RequestContext, tenant: FilterQuery<AuditLog>, filters: ParsedFilters): Promise<ChainVerification> {
  let checked = 0;
  let after = '0';
  for (;;) {
    const rows = await ctx.em.find(
      AuditLog,
      { $and: [auditWhere(tenant, filters), { seq: { $gt: after } }] },
      { orderBy: { seq: 'asc' }, limit: 1000, disableIdentityMap: true },
    );
    if (rows.length === 0) return { valid: true, checked, brokenAt: null };
    for (const row of rows) {
      if (auditHash(row) !== row.hash) return { valid: false, checked, brokenAt: String(row.seq) };
      checked++;
    }
    after = String(rows[rows.length - 1]!.seq);
  }
}

export const AuditStatsSchema = z
  .object({
    from: timestamp().describe('Start of the period.'),
    to: timestamp().describe('End of the period.'),
    total: count().describe('Entries in the period.'),
    byAction: z.array(AuditActionCountSchema).describe('Entries per action, most first.'),
    byResult: z
      .array(
        z
          .object({ result: AuditResultSchema.describe('How the entries ended.'), count: count().describe('Entries with this result in the period.') })
          .meta({ title: 'AuditResultCount', description: 'How many entries one result has.' }),
      )
      .describe('Entries per result, most first.'),
    byDay: z
      .array(
        z
          .object({ day: z.string().describe('YYYY-MM-DD (UTC)'), count: count().describe('Entries that day.') })
          .meta({ title: 'AuditDayCount', description: 'How many entries one day (UTC) has.' }),
      )
      .describe('Entries per UTC day, oldest first; days without entries are left out.'),
  })
  .meta({ title: 'AuditStats', description: 'Audit entry counts over a period, by action, result and day.' });
export type AuditStats = z.output<typeof AuditStatsSchema>;

export async function auditStats(ctx: RequestContext, query: AuditPeriodQuery): Promise<AuditStats> {
  const input = parseInput(AuditPeriodQuery, query);
  const tenant = await authorizeRead(ctx, 'audit:read', input.orgId);
  const filters = { orgId: input.orgId, ...period(input) };
  const grouped = async (expression: string, as: string) =>
    (await ctx.em
      .createQueryBuilder(AuditLog, 'a')
      .select([raw(`${expression} as "${as}"`), raw('count(*)::int as count')])
      .where(auditWhere(tenant, filters))
      .groupBy(raw(expression))
      .orderBy([{ [raw('count(*)')]: 'desc' }, { [raw(expression)]: 'asc' }])
      .execute('all', false)) as Record<string, string | number>[];
  const byAction = (await grouped('a.action', 'action')) as { action: string; count: number }[];
  const byResult = (await grouped('a.result', 'result')) as { result: AuditStats['byResult'][number]['result']; count: number }[];
  const byDay = ((await grouped(`to_char(a.created_at at time zone 'UTC', 'YYYY-MM-DD')`, 'day')) as { day: string; count: number }[]).sort((x, y) =>
    x.day.localeCompare(y.day),
  );
  await recordRead(ctx, 'audit.read', { view: 'stats', filters: plain(filters) }, input.orgId);
  return {
    from: filters.from,
    to: filters.to,
    total: byResult.reduce((sum, r) => sum + r.count, 0),
    byAction,
    byResult,
    byDay,
  };
}

const RESULTS: AuditResult[] = ['success', 'denied', 'failure'];
const DEFAULT_PERIOD_MS = 30 * 24 * 3600 * 1000;

function period(input: { from?: string; to?: string }): { from: string; to: string } {
  const to = input.to ? new Date(input.to) : new Date();
  const from = input.from ? new Date(input.from) : new Date(to.getTime() - DEFAULT_PERIOD_MS);
  if (from > to) throw badRequest('from: must not be after to');
  return { from: from.toISOString(), to: to.toISOString() };
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
