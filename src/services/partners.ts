import { LockMode } from '@mikro-orm/core';
import { z } from 'zod';
import { Partner, WEEKDAYS, type AgentUpdateWindow, type TenantSettings, type Weekday } from '../../entities/partner.js';
import type { RequestContext } from '../auth/context.js';
import { hasPermission } from '../auth/permissions.js';
import { authorize, canAccessPartner, isUuid, requirePrincipal } from '../auth/policy.js';
import { withTransaction } from '../db/transaction.js';
import { badRequest, forbidden, notFound } from '../errors.js';
import { emit } from '../events/outbox.js';
import { PageQuery, pageOptions, toPage, type Page } from '../pagination.js';
import { parseInput } from '../validation.js';
import { recordAudit } from './audit.js';
import { applyChanges, providedFields } from './changes.js';
import { containsPattern } from '../db/like.js';

export { WEEKDAYS, type Weekday };

export const TENANT_STATUSES = ['active', 'suspended'] as const;

const HHMM = /^([01]\d|2[0-3]):[0-5]\d$/;
const hhmm = () => z.string().regex(HHMM, { message: 'must be a UTC time as HH:MM (24-hour)' });

/**
 * Spec Versioning 7. `endUtc` before `startUtc` runs past midnight (the window belongs to the day it
 * starts on); equal times mean the whole day. Days are stored in week order.
 */
export const AgentUpdateWindowSchema = z
  .object({
    days: z
      .array(z.enum(WEEKDAYS))
      .min(1)
      .refine((days) => new Set(days).size === days.length, { message: 'must not repeat a day' })
      .transform((days) => WEEKDAYS.filter((d) => days.includes(d))),
    startUtc: hhmm(),
    endUtc: hhmm(),
  })
  .strict();

/** `agentUpdateWindow: null` clears the window (an organization then inherits its partner's). */
export const TenantSettingsSchema = z.object({ agentUpdateWindow: AgentUpdateWindowSchema.nullable().optional() }).strict();

export const tenantName = () => z.string().trim().min(1).max(255);
export const contactEmail = () => z.email({ message: 'must be an email address' }).max(255).nullable().optional();

export const CreatePartnerSchema = z
  .object({
    name: tenantName(),
    contactEmail: contactEmail(),
    requireMfa: z.boolean().optional(),
    settings: TenantSettingsSchema.optional(),
  })
  .strict();

export const UpdatePartnerSchema = z
  .object({
    name: tenantName().optional(),
    contactEmail: contactEmail(),
    requireMfa: z.boolean().optional(),
    settings: TenantSettingsSchema.optional(),
    status: z.enum(TENANT_STATUSES).optional(),
  })
  .strict();

export const searchText = () => z.string().trim().min(1).max(255).optional();

export const PartnerListQuery = PageQuery.extend({ search: searchText() }).strict();

export interface TenantSettingsView {
  agentUpdateWindow: AgentUpdateWindow | null;
}

export interface PartnerView {
  id: string;
  name: string;
  status: Partner['status'];
  contactEmail: string | null;
  requireMfa: boolean;
  settings: TenantSettingsView;
  createdAt: string;
  updatedAt: string;
}

export function settingsView(settings: TenantSettings): TenantSettingsView {
  return { agentUpdateWindow: settings.agentUpdateWindow ?? null };
}

export function partnerView(partner: Partner): PartnerView {
  return {
    id: partner.id,
    name: partner.name,
    status: partner.status,
    contactEmail: partner.contactEmail,
    requireMfa: partner.requireMfa,
    settings: settingsView(partner.settings),
    createdAt: partner.createdAt.toISOString(),
    updatedAt: partner.updatedAt.toISOString(),
  };
}

async function findPartner(ctx: RequestContext, id: string, lockMode?: LockMode): Promise<Partner> {
  const partner = isUuid(id) ? await ctx.em.findOne(Partner, { id }, { lockMode }) : null;
  if (!partner) throw notFound('Partner');
  return partner;
}

/** System callers see every partner; partner callers only their own; organization callers none. */
export async function listPartners(ctx: RequestContext, rawQuery: unknown): Promise<Page<PartnerView>> {
  const query = parseInput(PartnerListQuery, rawQuery);
  const principal = await authorize(ctx, 'partners:read');
  const where: Record<string, unknown> = {};
  if (principal.scope === 'partner') where.id = principal.partnerId;
  if (principal.scope === 'organization') return toPage([], 0, query);
  if (query.search) where.name = { $ilike: containsPattern(query.search) };
  const [rows, total] = await ctx.em.findAndCount(Partner, where, { orderBy: { name: 'asc', id: 'asc' }, ...pageOptions(query) });
  return toPage(rows.map(partnerView), total, query);
}

export async function getPartner(ctx: RequestContext, id: string): Promise<PartnerView> {
  await authorize(ctx, 'partners:read', { partnerId: id, resource: 'Partner' });
  return partnerView(await findPartner(ctx, id));
}

/** The partner a partner-scoped caller belongs to; other callers have none of their own. */
function ownPartnerId(ctx: RequestContext): string {
  const principal = requirePrincipal(ctx);
  if (principal.scope !== 'partner' || !principal.partnerId) {
    throw badRequest('Partner context required: only partner users and API keys have their own partner; use /orgs/partners/:id');
  }
  return principal.partnerId;
}

export async function getMyPartner(ctx: RequestContext): Promise<PartnerView> {
  return getPartner(ctx, ownPartnerId(ctx));
}

export async function updateMyPartner(ctx: RequestContext, rawInput: unknown): Promise<PartnerView> {
  return updatePartner(ctx, ownPartnerId(ctx), rawInput);
}

/**
 * The partner an organization belongs to, for GraphQL's `Organization.partner`: null when the caller
 * could not read it through `partner(id)` (organization scope, or no `partners:read`).
 */
export async function visiblePartner(ctx: RequestContext, partnerId: string): Promise<PartnerView | null> {
  const principal = requirePrincipal(ctx);
  if (!canAccessPartner(principal, partnerId) || !hasPermission(principal.permissions, 'partners:read')) return null;
  const partner = await ctx.loaders.byId(Partner).load(partnerId);
  return partner ? partnerView(partner) : null;
}

export async function createPartner(ctx: RequestContext, rawInput: unknown): Promise<PartnerView> {
  const input = parseInput(CreatePartnerSchema, rawInput);
  const principal = await authorize(ctx, 'partners:write', { mfa: input.requireMfa !== undefined });
  if (principal.scope !== 'system') throw forbidden('Only platform administrators can create partners');
  return withTransaction(ctx, async (tx) => {
    const partner = tx.em.create(Partner, {
      name: input.name,
      contactEmail: input.contactEmail ?? null,
      requireMfa: input.requireMfa ?? false,
      settings: input.settings ?? {},
    });
    await tx.em.flush();
    const changes = providedFields(input);
    await recordAudit(tx, { action: 'partner.create', resourceType: 'partner', resourceId: partner.id, partnerId: partner.id, changes, details: { name: partner.name } });
    await emit(tx, { type: 'partner.created', orgId: null, data: { partnerId: partner.id, name: partner.name, changes } });
    return partnerView(partner);
  });
}

/** Only platform administrators change a partner's status; changing `requireMfa` needs an MFA session. */
export async function updatePartner(ctx: RequestContext, id: string, rawInput: unknown): Promise<PartnerView> {
  const input = parseInput(UpdatePartnerSchema, rawInput);
  const principal = await authorize(ctx, 'partners:write', { partnerId: id, resource: 'Partner', mfa: input.requireMfa !== undefined });
  if (input.status !== undefined && principal.scope !== 'system') throw forbidden("Only platform administrators can change a partner's status");
  return withTransaction(ctx, async (tx) => {
    const partner = await findPartner(tx, id, LockMode.PESSIMISTIC_WRITE);
    const changes = applyChanges(partner, input);
    // A PATCH that changes nothing is not a mutation: no audit row, no event.
    if (changes.length === 0) return partnerView(partner);
    await tx.em.flush();
    await recordAudit(tx, { action: 'partner.update', resourceType: 'partner', resourceId: id, partnerId: id, changes, details: { name: partner.name } });
    await emit(tx, { type: 'partner.updated', orgId: null, data: { partnerId: id, name: partner.name, changes } });
    return partnerView(partner);
  });
}

/** Removes the partner with its organizations (and their sites, users' memberships, ...) through the foreign-key cascades. */
export async function deletePartner(ctx: RequestContext, id: string): Promise<void> {
  const principal = await authorize(ctx, 'partners:delete', { partnerId: id, resource: 'Partner' });
  if (principal.partnerId === id) throw badRequest('You cannot delete your own partner');
  const partner = await findPartner(ctx, id);
  await withTransaction(ctx, async (tx) => {
    await tx.em.nativeDelete(Partner, { id });
    await recordAudit(tx, { action: 'partner.delete', resourceType: 'partner', resourceId: id, partnerId: id, details: { name: partner.name } });
    await emit(tx, { type: 'partner.deleted', orgId: null, data: { partnerId: id, name: partner.name } });
  });
}
