import { raw, type FilterQuery, type ObjectQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { AuditLog } from '../../../entities/audit-log.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, isUuid, requirePrincipal, tenantWhere } from '../../auth/policy.js';
import { notFound } from '../../errors.js';
import { PageQuery, pageOptions, pageSchema, toPage, type Page } from '../../pagination.js';
import { enumValues, isoDateTime, parseInput, timestamp, uuid } from '../../validation.js';
import { containsPattern, escapeLike } from '../../db/like.js';
import { entryContent, recordAudit } from './record.js';

// Reading the log: listing and search here, exports and reports beside it. Every read of the log is itself
// recorded (`audit.read`, `audit.export`) after the rows were read, so a list never contains its own entry.

const searchText = z.string().trim().min(1).max(200);

export const ActorTypeSchema = z
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
export const AuditResultSchema = z
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
export type ParsedFilters = z.output<typeof AuditFilters>;

export const AuditListQuery = AuditFilters.extend(PageQuery.shape).strict();
export type AuditListQuery = z.input<typeof AuditListQuery>;
export const AuditSearchQuery = AuditListQuery.extend({ q: searchText }).strict();
export type AuditSearchQuery = z.input<typeof AuditSearchQuery>;

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

/**
 * Authorizes a read of the log and returns the rows the caller may see: organization callers
 * their organization's, partner callers their organizations' and their partner's own
 * (organization-less) entries, system callers all. Naming an organization narrows to it.
 */
export async function authorizeRead(ctx: RequestContext, permission: 'audit:read' | 'audit:export', orgId?: string): Promise<FilterQuery<AuditLog>> {
  await authorize(ctx, permission, { orgId, resource: 'Organization' });
  return (await tenantWhere<AuditLog>(ctx, { org: 'orgId', partner: 'partnerId', requestedOrgId: orgId })) ?? {};
}

/** Builds the filter afresh on every call: MikroORM's raw fragments are single-use. */
export function auditWhere(tenant: FilterQuery<AuditLog>, f: Partial<ParsedFilters>): ObjectQuery<AuditLog> {
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

export async function recordRead(ctx: RequestContext, action: 'audit.read' | 'audit.export', details: Record<string, unknown>, orgId: string | null | undefined): Promise<void> {
  const principal = requirePrincipal(ctx);
  await recordAudit(ctx, {
    action,
    resourceType: 'audit_log',
    orgId: principal.scope === 'organization' ? principal.orgId : (orgId ?? null),
    details,
  });
}

/** Filters as stored in an audit entry (dates are already UTC ISO text), unset ones left out. */
export function plain(filters: Partial<ParsedFilters>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(filters)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => [k, String(v)]),
  );
}
