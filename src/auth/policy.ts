import type { EntityName, FilterQuery } from '@mikro-orm/core';
import { badRequest, forbidden, mfaRequired, notFound, unauthenticated } from '../errors.js';
import type { DeniedAttempt, Principal, RequestContext } from './context.js';
import { hasPermission, type Permission } from './permissions.js';

/**
 * The one place access is decided. Every public service method starts with `authorize` (or
 * `skipAuthorization` for public operations); the REST and GraphQL adapters refuse to answer when
 * neither ran. Another tenant's data answers 404 so its existence is not revealed.
 */
export interface AuthorizeOptions {
  /** the organization the data belongs to; checked before the permission so other tenants get 404 */
  orgId?: string | null;
  /** partner-level data (the partner record, partner roles) */
  partnerId?: string | null;
  /** sensitive writes: the session must have passed a second factor */
  mfa?: boolean;
  /** name used in the 404 message, e.g. `Webhook` */
  resource?: string;
}

export async function authorize(ctx: RequestContext, permission: Permission, options: AuthorizeOptions = {}): Promise<Principal> {
  const principal = requirePrincipal(ctx);
  const resource = options.resource ?? 'Resource';
  if (options.orgId !== undefined && options.orgId !== null && !(await canAccessOrg(ctx, options.orgId))) throw notFound(resource);
  if (options.partnerId !== undefined && options.partnerId !== null && !canAccessPartner(principal, options.partnerId)) throw notFound(resource);
  if (principal.mfaForced && !principal.mfa) {
    await reportDenied(ctx, permission, 'mfa_required', options);
    throw mfaRequired();
  }
  if (!grants(principal, permission)) {
    await reportDenied(ctx, permission, 'missing_permission', options);
    throw forbidden();
  }
  if (options.mfa && !principal.mfa) {
    await reportDenied(ctx, permission, 'mfa_required', options);
    throw mfaRequired();
  }
  ctx.mark.checked = true;
  return principal;
}

/**
 * A user's or API key's role grants what its entries imply (`*`, `devices:*`, `*:read`); agents, portal
 * users and plugins hold only the permissions they list, word for word, so a wildcard never reaches them.
 */
function grants(principal: Principal, permission: Permission): boolean {
  switch (principal.kind) {
    case 'user':
    case 'apiKey':
    case 'system':
      return hasPermission(principal.permissions, permission);
    case 'agent':
    case 'portalUser':
    case 'plugin':
      return principal.permissions.includes(permission);
  }
}

/**
 * Decides access like `authorize` but answers false instead of refusing, for data that is shown
 * only when the caller may read it (e.g. a GraphQL field that is null otherwise). The answer,
 * either way, is the access decision; nothing is reported as denied.
 */
export async function permits(ctx: RequestContext, permission: Permission, options: Pick<AuthorizeOptions, 'orgId' | 'partnerId'>): Promise<boolean> {
  const principal = requirePrincipal(ctx);
  ctx.mark.checked = true;
  if (!grants(principal, permission)) return false;
  if (options.orgId && !(await canAccessOrg(ctx, options.orgId))) return false;
  return !options.partnerId || canAccessPartner(principal, options.partnerId);
}

/**
 * Writes one denied attempt in its own short transaction. The audit service provides it; the
 * policy cannot import services (they sit above it), so src/server.ts installs it at start-up.
 */
export type DenialLog = (ctx: RequestContext, attempt: DeniedAttempt) => Promise<void>;

let denialLog: DenialLog | null = null;

export function installDenialLog(log: DenialLog): void {
  denialLog = log;
}

/**
 * Denied attempts are kept even when the request's transaction rolls back. Inside a transaction the
 * attempt waits until it has ended (`recordQueuedDenials`), so it is never written on a second
 * connection while the request holds one, which could deadlock against that transaction's locks.
 */
async function reportDenied(ctx: RequestContext, permission: Permission, reason: DeniedAttempt['reason'], options: AuthorizeOptions): Promise<void> {
  const attempt: DeniedAttempt = { permission, reason, orgId: options.orgId ?? null, partnerId: options.partnerId ?? null, resource: options.resource ?? null };
  if (ctx.em.isInTransaction()) ctx.queueDenied(attempt);
  else await writeDenial(ctx, attempt);
}

/** withTransaction calls it once the outermost transaction has ended, committed or rolled back. */
export async function recordQueuedDenials(ctx: RequestContext): Promise<void> {
  for (const attempt of ctx.takeQueuedDenials()) await writeDenial(ctx, attempt);
}

function writeDenial(ctx: RequestContext, attempt: DeniedAttempt): Promise<void> {
  if (!denialLog) throw new Error('No denial log installed: startServer() installs the audit service’s');
  return denialLog(ctx, attempt);
}

/** For operations any signed-in caller may perform on their own account (e.g. `GET /users/me`, MFA setup). */
export function authenticated(ctx: RequestContext): Principal {
  const principal = requirePrincipal(ctx);
  ctx.mark.checked = true;
  return principal;
}

/** Public operations say so, with the reason, instead of authorizing. */
export function skipAuthorization(ctx: RequestContext, reason: string): void {
  ctx.mark.checked = true;
  ctx.mark.reason = reason;
}

export function requirePrincipal(ctx: RequestContext): Principal {
  if (!ctx.principal) throw ctx.meta.authError ?? unauthenticated();
  return ctx.principal;
}

/**
 * The caller of a route that takes users' credentials (a session or an API key). Any other kind is
 * refused as no credential is (401): agents call only the agent routes, and portal users and plugins
 * no route yet.
 */
export function requireUserCaller(ctx: RequestContext): Principal {
  const principal = requirePrincipal(ctx);
  if (principal.kind !== 'user' && principal.kind !== 'apiKey') throw unauthenticated();
  return principal;
}

export async function canAccessOrg(ctx: RequestContext, orgId: string): Promise<boolean> {
  const principal = requirePrincipal(ctx);
  if (!isUuid(orgId)) return false;
  switch (principal.scope) {
    case 'system':
      return (await ctx.partnerOfOrg(orgId)) !== null;
    case 'partner':
      return (
        (await ctx.partnerOfOrg(orgId)) === principal.partnerId && (principal.orgAccess === 'all' || principal.orgIds.includes(orgId))
      );
    case 'organization':
      return principal.orgId === orgId;
  }
}

export function canAccessPartner(principal: Principal, partnerId: string): boolean {
  return principal.scope === 'system' || (principal.scope === 'partner' && principal.partnerId === partnerId);
}

/**
 * The organizations a list may show: `null` means every organization (system scope, no filter).
 * A requested `orgId` narrows the list; one the caller cannot see yields an empty list.
 */
export async function visibleOrgIds(ctx: RequestContext, requestedOrgId?: string | null): Promise<string[] | null> {
  const principal = requirePrincipal(ctx);
  if (requestedOrgId) return (await canAccessOrg(ctx, requestedOrgId)) ? [requestedOrgId] : [];
  switch (principal.scope) {
    case 'system':
      return null;
    case 'organization':
      return principal.orgId ? [principal.orgId] : [];
    case 'partner': {
      const rows = (await ctx.em.execute(`select id from organization where partner_id = ?`, [principal.partnerId])) as { id: string }[];
      const owned = rows.map((r) => r.id);
      // A selection can only narrow the partner's own organizations, whatever the membership row holds.
      return principal.orgAccess === 'selected' ? owned.filter((id) => principal.orgIds.includes(id)) : owned;
    }
  }
}

/**
 * The sites a caller may see within `orgId` (or, without one, within the organizations they see):
 * `null` means every site; organization memberships limited to some sites get that list.
 */
export function visibleSiteIds(ctx: RequestContext, orgId?: string | null): string[] | null {
  const principal = requirePrincipal(ctx);
  if (principal.scope !== 'organization' || principal.siteIds.length === 0) return null;
  // Limited memberships belong to one organization; any other shows none of its sites (and no rows).
  return !orgId || orgId === principal.orgId ? principal.siteIds : [];
}

export interface TenantColumns {
  /** the row's organization column */
  org: string;
  /** the row's site column (`id` for sites themselves): rows outside the caller's sites are left out */
  site?: string;
  /** the row's partner column for partner-level rows (`org` null): partner callers also see their own */
  partner?: string;
  /** a requested organization narrows the list; one the caller cannot see yields nothing */
  requestedOrgId?: string | null;
}

/** A list's tenant decision before it is written as a filter: null members filter nothing. */
interface TenantFilter {
  /** rows of these organizations (null: every organization) */
  orgIds: string[] | null;
  /** partner callers listing partner-level rows also see their own partner's (organization column null) */
  ownPartner: string | null;
  /** rows of these sites (null: every site) */
  siteIds: string[] | null;
}

async function tenantFilter(ctx: RequestContext, columns: TenantColumns): Promise<TenantFilter> {
  const principal = requirePrincipal(ctx);
  const orgIds = await visibleOrgIds(ctx, columns.requestedOrgId);
  return {
    orgIds,
    ownPartner: orgIds !== null && columns.partner && principal.scope === 'partner' && !columns.requestedOrgId ? principal.partnerId : null,
    siteIds: columns.site ? visibleSiteIds(ctx, columns.requestedOrgId) : null,
  };
}

/**
 * The tenant and site filter of a list query, decided here rather than in each service (a scoped-query
 * helper, not MikroORM filters, which each fork and raw query would have to remember to enable).
 * `null` when nothing is filtered (system callers); combine it with the list's own conditions in `$and`.
 */
export async function tenantWhere<T extends object>(ctx: RequestContext, columns: TenantColumns): Promise<FilterQuery<T> | null> {
  const filter = await tenantFilter(ctx, columns);
  const clauses: Record<string, unknown>[] = [];
  if (filter.orgIds !== null) {
    const inOrgs = { [columns.org]: { $in: filter.orgIds } };
    clauses.push(filter.ownPartner ? { $or: [inOrgs, { [columns.org]: null, [columns.partner!]: filter.ownPartner }] } : inOrgs);
  }
  if (filter.siteIds !== null) clauses.push({ [columns.site!]: { $in: filter.siteIds } });
  return (clauses.length === 0 ? null : clauses.length === 1 ? clauses[0] : { $and: clauses }) as FilterQuery<T> | null;
}

/**
 * `tenantWhere`'s filter, the same decision, as a SQL condition for a hand-written statement (`columns`
 * name SQL columns, e.g. `m.org_id`) with its `?` parameters; `null` when nothing is filtered. Lists
 * are one array parameter each, so the text does not vary with their length (see `statement`).
 */
export async function tenantSql(ctx: RequestContext, columns: TenantColumns): Promise<{ sql: string; params: unknown[] } | null> {
  const filter = await tenantFilter(ctx, columns);
  const clauses: string[] = [];
  const params: unknown[] = [];
  const inList = (column: string, values: string[]) => {
    params.push(values);
    return `${column} = any(?::uuid[])`;
  };
  if (filter.orgIds !== null) {
    const inOrgs = inList(columns.org, filter.orgIds);
    if (filter.ownPartner) {
      params.push(filter.ownPartner);
      clauses.push(`(${inOrgs} or (${columns.org} is null and ${columns.partner!} = ?))`);
    } else {
      clauses.push(inOrgs);
    }
  }
  if (filter.siteIds !== null) clauses.push(inList(columns.site!, filter.siteIds));
  return clauses.length === 0 ? null : { sql: clauses.join(' and '), params };
}

export interface LoadOwnedOptions {
  /** name used in the 404 message, e.g. `Webhook` */
  resource: string;
  mfa?: boolean;
  /** the row's site column when it is not `siteId` (`id` for sites themselves) */
  site?: string;
}

/**
 * Loads a tenant-owned row by id and decides access to it: an id that is not a uuid, a missing row,
 * another tenant's row and a row outside the caller's sites all answer 404 `<resource> not found`;
 * `permission` is authorized on the row's organization (its partner for partner-level rows).
 */
export async function loadOwned<T extends { orgId: string | null; partnerId?: string | null }>(
  ctx: RequestContext,
  entity: EntityName<T>,
  id: string,
  permission: Permission,
  options: LoadOwnedOptions,
): Promise<T> {
  requirePrincipal(ctx);
  const row = isUuid(id) ? await ctx.em.findOne(entity, { id } as FilterQuery<T>) : null;
  if (!row) throw notFound(options.resource);
  // Partner-level rows (no organization) belong to their partner.
  const tenant = row.orgId ? { orgId: row.orgId } : { partnerId: row.partnerId };
  await authorize(ctx, permission, { ...tenant, mfa: options.mfa, resource: options.resource });
  const siteColumn = options.site ?? ((ctx.em.getMetadata().find(entity)?.properties as Record<string, unknown> | undefined)?.siteId ? 'siteId' : null);
  const siteIds = siteColumn ? visibleSiteIds(ctx, row.orgId) : null;
  if (siteIds && !siteIds.includes((row as Record<string, unknown>)[siteColumn!] as string)) throw notFound(options.resource);
  return row;
}

/**
 * The organization a create acts on. Organization-scoped callers act on their own organization;
 * partner and system callers must name one (spec: "Organization context required").
 */
export async function targetOrgId(ctx: RequestContext, requestedOrgId: string | null | undefined, resource = 'Organization'): Promise<string> {
  const principal = requirePrincipal(ctx);
  if (principal.scope === 'organization') {
    if (requestedOrgId && requestedOrgId !== principal.orgId) throw notFound(resource);
    return principal.orgId!;
  }
  if (!requestedOrgId) throw badRequest('Organization context required');
  if (!(await canAccessOrg(ctx, requestedOrgId))) throw notFound(resource);
  return requestedOrgId;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
