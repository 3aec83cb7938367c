import crypto from 'node:crypto';
import { raw, type FilterQuery, type ObjectQuery } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { AuditLog, type AuditResult } from '../../../entities/audit-log.js';
import type { DeniedAttempt, Principal, RequestContext } from '../../auth/context.js';
import { authorize, isUuid, requirePrincipal, tenantWhere, visibleOrgIds, type DenialLog } from '../../auth/policy.js';
import { canonicalJson } from '../../canonical-json.js';
import { emit } from '../../events/outbox.js';
import { eventOfAction, type AuditAction, type DomainEventMap, type EventOfAction, type PublishingAction } from '../../events/types.js';
import { badRequest, notFound } from '../../errors.js';
import { PageQuery, pageOptions, pageSchema, toPage, type Page } from '../../pagination.js';
import { enumValues, isoDateTime, parseInput, timestamp, uuid } from '../../validation.js';
import { containsPattern, escapeLike } from '../../db/like.js';

export interface AuditEntry {
  action: AuditAction;
  resourceType: string;
  resourceId?: string | null;
  orgId?: string | null;
  partnerId?: string | null;
  result?: AuditResult;
  /** names of the fields a change touched (never their values) */
  changes?: string[];
  details?: Record<string, unknown>;
}

const GENESIS = '0'.repeat(64);
// Any constant works: the class half of the two-key advisory locks that serialize appends to one chain.
const CHAIN_LOCK_CLASS = 0x4a0d17;

/** The chain an entry joins: its organization's, else its partner's, else the system chain. */
function chainOf(row: Pick<AuditLog, 'orgId' | 'partnerId'>): string {
  if (row.orgId) return `org:${row.orgId}`;
  if (row.partnerId) return `partner:${row.partnerId}`;
  return 'system';
}

/**
 * Appends an entry in the caller's transaction (so it commits or rolls back with the change). A lock
 * per chain, held until commit, serializes appends to that chain, giving each entry the previous
 * one's hash; writes to other tenants' chains do not wait for it.
 */
export async function recordAudit(ctx: RequestContext, entry: AuditEntry): Promise<AuditLog> {
  const principal = ctx.principal;
  const row = new AuditLog();
  Object.assign(row, {
    createdAt: new Date(),
    actorType: ctx.actorType,
    actorId: principal?.kind === 'system' ? null : (principal?.id ?? null),
    actorEmail: principal?.email ?? null,
    action: entry.action,
    resourceType: entry.resourceType,
    resourceId: entry.resourceId ?? null,
    orgId: entry.orgId ?? null,
    partnerId: entry.partnerId ?? principal?.partnerId ?? null,
    ip: ctx.meta.ip,
    userAgent: ctx.meta.userAgent,
    result: entry.result ?? 'success',
    changes: entry.changes ?? [],
    details: entry.details ?? {},
  });
  row.chain = chainOf(row);
  const append = async (em: EntityManager) => {
    await em.execute(`select pg_advisory_xact_lock(${CHAIN_LOCK_CLASS}, hashtext(?))`, [row.chain]);
    // One round trip: the next global seq and the head of this chain.
    const [next] = (await em.execute(
      `select nextval('audit_log_seq')::text as seq, last.chain_seq::text as chain_seq, last.hash
         from (select 1) one left join lateral (select chain_seq, hash from audit_log where chain = ? order by chain_seq desc limit 1) last on true`,
      [row.chain],
    )) as { seq: string; chain_seq: string | null; hash: string | null }[];
    row.seq = next!.seq;
    row.chainSeq = String(BigInt(next!.chain_seq ?? '0') + 1n);
    row.prevHash = next!.hash ?? GENESIS;
    row.hash = auditHash(row);
    await em.insert(AuditLog, row);
    return row;
  };
  if (ctx.em.isInTransaction()) return append(ctx.em);
  return ctx.em.transactional((em) => append(em as EntityManager));
}

/**
 * A mutation's audit row and the event its action publishes (its domain's audit action table), both in the caller's
 * transaction: they commit together or not at all. The event belongs to the entry's organization.
 */
export async function recordChange<A extends PublishingAction>(tx: RequestContext, entry: AuditEntry & { action: A }, data: DomainEventMap[EventOfAction<A>]): Promise<void> {
  await recordAudit(tx, entry);
  await emit(tx, { type: eventOfAction(entry.action) as EventOfAction<A>, orgId: entry.orgId ?? null, data });
}

/** The policy's denial log (installed by src/server.ts); it calls this outside any transaction, so the entry gets its own. */
export const recordDenied: DenialLog = async (ctx: RequestContext, attempt: DeniedAttempt) => {
  await recordAudit(ctx, {
    action: 'access.denied',
    resourceType: attempt.resource ?? attempt.permission.split(':')[0] ?? 'unknown',
    // An organization user's denied attempt belongs to that organization's trail even when the target named none.
    orgId: attempt.orgId ?? ctx.principal?.orgId ?? null,
    partnerId: attempt.partnerId ?? undefined,
    result: 'denied',
    details: { permission: attempt.permission, reason: attempt.reason },
  });
};

/** Everything an entry says except its place in the chain: what the hash covers and the view shows. */
function entryContent(row: AuditLog) {
  return {
    seq: String(row.seq),
    createdAt: row.createdAt.toISOString(),
    actorType: row.actorType,
    actorId: row.actorId,
    actorEmail: row.actorEmail,
    action: row.action,
    resourceType: row.resourceType,
    resourceId: row.resourceId,
    orgId: row.orgId,
    partnerId: row.partnerId,
    ip: row.ip,
    userAgent: row.userAgent,
    result: row.result,
    changes: row.changes,
    details: row.details,
  };
}

export function auditHash(row: AuditLog): string {
  const content = canonicalJson(entryContent(row));
  return crypto.createHash('sha256').update(row.prevHash).update('\n').update(content).digest('hex');
}

const chainVerificationFields = {
  valid: z.boolean(),
  checked: z.number().int().describe('entries recomputed'),
  brokenAt: z.string().nullable().describe('seq of the first entry whose hash or link does not match'),
};
export const ChainVerificationSchema = z.object(chainVerificationFields).meta({ title: 'AuditChainVerification' });
export type ChainVerification = z.output<typeof ChainVerificationSchema>;

export const ChainsVerificationSchema = z
  .object({
    ...chainVerificationFields,
    chains: z.number().int().describe('how many chains were walked'),
    broken: z
      .array(z.object({ chain: z.string(), brokenAt: z.string() }).meta({ title: 'AuditBrokenChain' }))
      .describe('each chain that does not verify, with the seq of its first bad entry; `brokenAt` is the earliest of them'),
  })
  .meta({ title: 'AuditChainsVerification' });
export type ChainsVerification = z.output<typeof ChainsVerificationSchema>;

/**
 * Walks the given chains (every chain when null) in chain order, in pages, recomputing every hash
 * and link; each chain starts from the genesis hash.
 */
export async function verifyAuditChains(em: EntityManager, chains: string[] | null): Promise<ChainsVerification> {
  const broken: ChainsVerification['broken'] = [];
  let walked = 0;
  let checked = 0;
  let chain = '';
  let prev = GENESIS;
  let after: { chain: string; chainSeq: string } | null = null;
  for (;;) {
    const where: FilterQuery<AuditLog>[] = chains === null ? [] : [{ chain: { $in: chains } }];
    if (after) where.push({ $or: [{ chain: { $gt: after.chain } }, { chain: after.chain, chainSeq: { $gt: after.chainSeq } }] });
    const rows = await em.find(AuditLog, { $and: where }, { orderBy: { chain: 'asc', chainSeq: 'asc' }, limit: 1000, disableIdentityMap: true });
    if (rows.length === 0) break;
    for (const row of rows) {
      if (row.chain !== chain) {
        chain = row.chain;
        prev = GENESIS;
        walked++;
      }
      if (broken.at(-1)?.chain === chain) continue;
      if (row.prevHash !== prev || auditHash(row) !== row.hash) {
        broken.push({ chain, brokenAt: String(row.seq) });
        continue;
      }
      prev = row.hash;
      checked++;
    }
    const last = rows[rows.length - 1]!;
    after = { chain: last.chain, chainSeq: String(last.chainSeq) };
  }
  const earliest = broken.map((b) => BigInt(b.brokenAt)).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))[0];
  return { valid: broken.length === 0, checked, brokenAt: earliest === undefined ? null : String(earliest), chains: walked, broken };
}

/**
 * The chains a caller may verify: system callers every chain (the legacy one spans tenants), others
 * their organizations' chains, and partner callers their partner's own chain too. Another tenant's
 * chain is never walked, so the answer reveals nothing about it.
 */
async function verifiableChains(ctx: RequestContext, principal: Principal, orgId: string | undefined): Promise<string[] | null> {
  const orgIds = await visibleOrgIds(ctx, orgId);
  if (orgIds === null) return null;
  const chains = orgIds.map((id) => chainOf({ orgId: id, partnerId: null }));
  if (principal.scope === 'partner' && !orgId) chains.push(chainOf({ orgId: null, partnerId: principal.partnerId }));
  return chains;
}

// ---------------------------------------------------------------------------------------------
// Query side: listing, search, export and reports. Every read of the log is itself recorded
// (`audit.read`, `audit.export`) after the rows were read, so a list never contains its own entry.
// ---------------------------------------------------------------------------------------------

const searchText = z.string().trim().min(1).max(200);

const ActorTypeSchema = z
  .enum(['user', 'api_key', 'agent', 'portal_user', 'plugin', 'system', 'anonymous'])
  .meta({ title: 'AuditActorType', description: 'Who acted.' })
  .register(enumValues, {
    user: 'A signed-in user (actorId: the user).',
    api_key: 'An API key (actorId: the key).',
    agent: 'A device agent (actorId: the device).',
    portal_user: 'A customer-portal user (actorId: the portal user).',
    plugin: 'A plugin calling back with its own credentials (actorId: the plugin installation).',
    system: 'The service itself (jobs, subscribers).',
    anonymous: 'An unauthenticated request (failed sign-ins, public routes).',
  });
const AuditResultSchema = z
  .enum(['success', 'denied', 'failure'])
  .meta({ title: 'AuditResult', description: 'How an audited action ended.' })
  .register(enumValues, { success: 'It was done.', denied: 'Refused by access control (FORBIDDEN or NOT_FOUND for another tenant).', failure: 'Attempted and failed (bad credentials, invalid input, …).' });

export const AuditFilters = z
  .object({
    orgId: uuid().optional().describe('Only entries of this organization.'),
    actorId: uuid().optional().describe('Only entries of this actor (user, API key or device).'),
    actorType: ActorTypeSchema.optional().describe('Only entries of this kind of actor.'),
    action: z.string().trim().min(1).max(100).optional().describe('exact, or with `*` wildcards (`user.*`)'),
    resourceType: z.string().trim().min(1).max(100).optional().describe('Only entries about this kind of resource (user, device, webhook, …).'),
    resourceId: z.string().trim().min(1).max(100).optional().describe('Only entries about this resource.'),
    result: AuditResultSchema.optional().describe('Only entries with this result.'),
    from: isoDateTime().optional().describe('Only entries at or after this instant.'),
    to: isoDateTime().optional().describe('Only entries before this instant.'),
    q: searchText.optional().describe('text search over action, resource, actor email and details'),
  })
  .strict().describe('Which audit entries to list; every given criterion must hold.');
export type AuditFilters = z.input<typeof AuditFilters>;
type ParsedFilters = z.output<typeof AuditFilters>;

export const AuditListQuery = AuditFilters.extend(PageQuery.shape).strict();
export type AuditListQuery = z.input<typeof AuditListQuery>;
export const AuditSearchQuery = AuditListQuery.extend({ q: searchText }).strict();
export type AuditSearchQuery = z.input<typeof AuditSearchQuery>;

const ExportFormat = z.enum(['csv', 'json']);
export const AuditExportInput = z.object({ format: ExportFormat.default('csv'), filters: AuditFilters.default({}) }).strict();
export type AuditExportInput = z.input<typeof AuditExportInput>;
/** `GET /audit/export`: the format and the filters side by side in the query string */
export const AuditExportQuery = AuditFilters.extend({ format: ExportFormat.default('csv') }).strict();

/** Reports cover `from`..`to`, the last 30 days by default. */
export const AuditPeriodQuery = z.object({ orgId: uuid().optional().describe('Only entries of this organization.'), from: isoDateTime().optional().describe('Start of the period; 30 days before `to` by default.'), to: isoDateTime().optional().describe('End of the period; now by default.') }).strict();
export type AuditPeriodQuery = z.input<typeof AuditPeriodQuery>;
export const AuditReportQuery = AuditPeriodQuery.extend({ limit: PageQuery.shape.limit }).strict();
export type AuditReportQuery = z.input<typeof AuditReportQuery>;

export const AuditLogViewSchema = z
  .object({
    id: uuid().describe('Unique ID.'),
    seq: z.string().describe('position in the global order'),
    createdAt: timestamp().describe('When it happened.'),
    actorType: ActorTypeSchema.describe('Who acted.'),
    actorId: uuid().nullable().describe('The user, API key, device, portal user or plugin installation that acted; null for system and anonymous actors.'),
    actorEmail: z.string().nullable().describe('The acting user’s email at the time; null for other actors.'),
    action: z.string().describe('What was done, e.g. user.login or device.update.'),
    resourceType: z.string().describe('The kind of resource acted on (user, device, webhook, …).'),
    resourceId: z.string().nullable().describe('The resource acted on; null when the action has none.'),
    orgId: uuid().nullable().describe('The organization it concerns; null for partner or platform entries.'),
    partnerId: uuid().nullable().describe('The partner it concerns; null when it concerns none.'),
    ip: z.string().nullable().describe('The client address of the request; null when not from a request.'),
    userAgent: z.string().nullable().describe('The request’s User-Agent; null when not from a request.'),
    result: AuditResultSchema.describe('How it ended.'),
    changes: z.array(z.string()).describe('names of the fields a change touched'),
    details: z.record(z.string(), z.unknown()).describe('What else the action recorded (JSON), never secrets.'),
    prevHash: z.string().describe('The hash of the entry before it in its chain (tamper evidence).'),
    hash: z.string().describe('SHA-256 of this entry and prevHash.'),
  })
  .meta({ title: 'AuditLog', description: 'One entry of the hash-chained audit log.' });
export type AuditLogView = z.output<typeof AuditLogViewSchema>;
export const AuditLogPageSchema = pageSchema(AuditLogViewSchema, 'AuditLogPage');

export function auditLogView(row: AuditLog): AuditLogView {
  return { id: row.id, ...entryContent(row), prevHash: row.prevHash, hash: row.hash };
}

export async function listAuditLogs(ctx: RequestContext, query: AuditListQuery): Promise<Page<AuditLogView>> {
  return readPage(ctx, parseInput(AuditListQuery, query), 'list');
}

export async function searchAuditLogs(ctx: RequestContext, query: AuditSearchQuery): Promise<Page<AuditLogView>> {
  return readPage(ctx, parseInput(AuditSearchQuery, query), 'search');
}

async function readPage(ctx: RequestContext, input: z.output<typeof AuditListQuery>, view: string): Promise<Page<AuditLogView>> {
  const { page: _page, limit: _limit, ...filters } = input;
  const tenant = await authorizeRead(ctx, 'audit:read', filters.orgId);
  const rows = await ctx.em.find(AuditLog, auditWhere(tenant, filters), { orderBy: { seq: 'desc' }, ...pageOptions(input) });
  const total = await ctx.em.count(AuditLog, auditWhere(tenant, filters));
  await recordRead(ctx, 'audit.read', { view, filters: plain(filters) }, filters.orgId);
  return toPage(rows.map(auditLogView), total, input);
}

export async function getAuditLog(ctx: RequestContext, id: string): Promise<AuditLogView> {
  const tenant = await authorizeRead(ctx, 'audit:read');
  const row = isUuid(id) ? await ctx.em.findOne(AuditLog, { $and: [tenant, { id }] }) : null;
  if (!row) throw notFound('Audit log entry');
  await recordRead(ctx, 'audit.read', { view: 'get', id }, row.orgId);
  return auditLogView(row);
}

export interface AuditExport {
  contentType: string;
  filename: string;
  /** the file, produced page by page as the client reads it */
  body: AsyncIterable<string>;
}

const EXPORT_PAGE_SIZE = 500;
const CSV_COLUMNS: (keyof AuditLogView)[] = [
  'id',
  'seq',
  'createdAt',
  'actorType',
  'actorId',
  'actorEmail',
  'action',
  'resourceType',
  'resourceId',
  'orgId',
  'partnerId',
  'ip',
  'userAgent',
  'result',
  'changes',
  'details',
  'prevHash',
  'hash',
];

/**
 * Authorizes and records the export at once; the rows are then read in keyset pages while the body
 * is consumed. The export is a snapshot up to the last entry that existed when it was asked for.
 */
export async function exportAuditLog(ctx: RequestContext, rawInput: AuditExportInput): Promise<AuditExport> {
  const input = parseInput(AuditExportInput, rawInput);
  const tenant = await authorizeRead(ctx, 'audit:export', input.filters.orgId);
  const [last] = (await ctx.em.execute(`select coalesce(max(seq), 0)::text as seq from audit_log`)) as { seq: string }[];
  await recordRead(ctx, 'audit.export', { format: input.format, filters: plain(input.filters) }, input.filters.orgId);
  const stamp = new Date().toISOString().replace(/[:.]/g, '-');
  return {
    contentType: input.format === 'csv' ? 'text/csv; charset=utf-8' : 'application/json; charset=utf-8',
    filename: `audit-log-${stamp}.${input.format}`,
    body: exportRows(ctx, tenant, input.filters, input.format, last!.seq),
  };
}

async function* exportRows(ctx: RequestContext, tenant: FilterQuery<AuditLog>, filters: ParsedFilters, format: 'csv' | 'json', upTo: string): AsyncIterable<string> {
  yield format === 'csv' ? csvLine(CSV_COLUMNS) : '[';
  let separator = '\n';
  let bound: { $lte: string } | { $lt: string } = { $lte: upTo };
  for (;;) {
    const rows: AuditLog[] = await ctx.em.find(
      AuditLog,
      { $and: [auditWhere(tenant, filters), { seq: bound }] },
      { orderBy: { seq: 'desc' }, limit: EXPORT_PAGE_SIZE, disableIdentityMap: true },
    );
    if (rows.length === 0) break;
    const lines = rows.map((row) => auditLogView(row));
    if (format === 'csv') {
      yield lines.map((view) => csvLine(CSV_COLUMNS.map((column) => view[column]))).join('');
    } else {
      yield separator + lines.map((view) => JSON.stringify(view)).join(',\n');
      separator = ',\n';
    }
    if (rows.length < EXPORT_PAGE_SIZE) break;
    bound = { $lt: String(rows[rows.length - 1]!.seq) };
  }
  if (format === 'json') yield separator === '\n' ? ']' : '\n]';
}

/** RFC 4180 line: cells with quotes, commas or line breaks are quoted, quotes doubled. */
function csvLine(cells: unknown[]): string {
  return `${cells.map(csvCell).join(',')}\r\n`;
}

function csvCell(value: unknown): string {
  let text = value === null || value === undefined ? '' : typeof value === 'object' ? JSON.stringify(value) : String(value);
  // Spreadsheets run cells that start with these as formulas (CSV injection); a leading quote keeps them text.
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

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

/**
 * Authorizes a read of the log and returns the rows the caller may see: organization callers
 * their organization's, partner callers their organizations' and their partner's own
 * (organization-less) entries, system callers all. Naming an organization narrows to it.
 */
async function authorizeRead(ctx: RequestContext, permission: 'audit:read' | 'audit:export', orgId?: string): Promise<FilterQuery<AuditLog>> {
  await authorize(ctx, permission, { orgId, resource: 'Organization' });
  return (await tenantWhere<AuditLog>(ctx, { org: 'orgId', partner: 'partnerId', requestedOrgId: orgId })) ?? {};
}

/** Builds the filter afresh on every call: MikroORM's raw fragments are single-use. */
function auditWhere(tenant: FilterQuery<AuditLog>, f: Partial<ParsedFilters>): ObjectQuery<AuditLog> {
  const parts: FilterQuery<AuditLog>[] = [tenant];
  if (f.actorId) parts.push({ actorId: f.actorId });
  if (f.actorType) parts.push({ actorType: f.actorType });
  if (f.action) parts.push(f.action.includes('*') ? { action: { $like: escapeLike(f.action).replace(/\*/g, '%') } } : { action: f.action });
  if (f.resourceType) parts.push({ resourceType: f.resourceType });
  if (f.resourceId) parts.push({ resourceId: f.resourceId });
  if (f.result) parts.push({ result: f.result });
  if (f.from) parts.push({ createdAt: { $gte: new Date(f.from) } });
  if (f.to) parts.push({ createdAt: { $lte: new Date(f.to) } });
  if (f.q) {
    const pattern = containsPattern(f.q);
    parts.push({
      $or: [
        { action: { $ilike: pattern } },
        { resourceType: { $ilike: pattern } },
        { resourceId: { $ilike: pattern } },
        { actorEmail: { $ilike: pattern } },
        { [raw((alias: string) => `${alias}.details::text ilike ?`, [pattern])]: [] },
      ],
    });
  }
  return { $and: parts };
}

async function recordRead(ctx: RequestContext, action: 'audit.read' | 'audit.export', details: Record<string, unknown>, orgId: string | null | undefined): Promise<void> {
  const principal = requirePrincipal(ctx);
  await recordAudit(ctx, {
    action,
    resourceType: 'audit_log',
    orgId: principal.scope === 'organization' ? principal.orgId : (orgId ?? null),
    details,
  });
}

/** Filters as stored in an audit entry (dates are already UTC ISO text), unset ones left out. */
function plain(filters: Partial<ParsedFilters>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(filters)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [k, String(v)]),
  );
}


function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
