import { badRequest, forbidden, mfaRequired, notFound, unauthenticated } from '../errors.js';
import type { DeniedAttempt, Principal, RequestContext } from './context.js';
import { hasPermission } from './permissions.js';

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

export async function authorize(ctx: RequestContext, permission: string, options: AuthorizeOptions = {}): Promise<Principal> {
  const principal = requirePrincipal(ctx);
  const resource = options.resource ?? 'Resource';
  if (options.orgId !== undefined && options.orgId !== null && !(await canAccessOrg(ctx, options.orgId))) throw notFound(resource);
  if (options.partnerId !== undefined && options.partnerId !== null && !canAccessPartner(principal, options.partnerId)) throw notFound(resource);
  if (principal.mfaForced && !principal.mfa) {
    await reportDenied(ctx, permission, 'mfa_required', options);
    throw mfaRequired();
  }
  if (!hasPermission(principal.permissions, permission)) {
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
async function reportDenied(ctx: RequestContext, permission: string, reason: DeniedAttempt['reason'], options: AuthorizeOptions): Promise<void> {
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
