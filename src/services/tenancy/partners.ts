import { LockMode } from '@mikro-orm/core';
import { z } from 'zod';
import { Partner, WEEKDAYS, type TenantSettings, type Weekday } from '../../../entities/partner.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, isUuid, permits, requirePrincipal } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { badRequest, forbidden, notFound } from '../../errors.js';
import { PageQuery, pageOptions, pageSchema, toPage, type Page } from '../../pagination.js';
import { enumValues, parseInput, timestamp, uuid } from '../../validation.js';
import { recordChange } from '../audit/api.js';
import { applyChanges, providedFields } from '../shared/changes.js';
import { containsPattern } from '../../db/like.js';

export { WEEKDAYS, type Weekday };

export const TENANT_STATUSES = ['active', 'suspended'] as const;

const HHMM = /^([01]\d|2[0-3]):[0-5]\d$/;
const hhmm = () => z.string().regex(HHMM, { message: 'must be a UTC time as HH:MM (24-hour)' }).describe('HH:MM, UTC');
const weekday = z
  .enum(WEEKDAYS)
  .meta({ title: 'Weekday', description: 'A day of the week, in UTC.' })
  .register(enumValues, { mon: 'Monday', tue: 'Tuesday', wed: 'Wednesday', thu: 'Thursday', fri: 'Friday', sat: 'Saturday', sun: 'Sunday' });
export const tenantStatus = z
  .enum(TENANT_STATUSES)
  .meta({ title: 'TenantStatus', description: 'Whether a partner or organization is in service.' })
  .register(enumValues, { active: 'In service: its users sign in and its agents report.', suspended: 'Out of service: every request of its users and API keys is refused (FORBIDDEN) until it is active again.' });

/**
 * Spec Versioning 7. `endUtc` before `startUtc` runs past midnight (the window belongs to the day it
 * starts on); equal times mean the whole day. Days are stored in week order.
 */
export const AgentUpdateWindowSchema = z
  .object({
    days: z
      .array(weekday)
      .min(1)
      .refine((days) => new Set(days).size === days.length, { message: 'must not repeat a day' })
      .transform((days) => WEEKDAYS.filter((d) => days.includes(d))).describe('The days the window opens on (UTC), each at most once.'),
    startUtc: hhmm().describe('When the window opens, HH:MM in UTC.'),
    endUtc: hhmm().describe('When the window closes, HH:MM in UTC.'),
  })
  .strict()
  .meta({ title: 'AgentUpdateWindowInput', description: 'When agents may update themselves: the days, and a start and end time in UTC (end before start runs past midnight; equal times mean all day).' });

export const TenantSettingsSchema = z
  .object({ agentUpdateWindow: AgentUpdateWindowSchema.nullable().optional().describe('null clears the window (an organization then inherits its partner’s)') })
  .strict()
  .meta({ title: 'TenantSettingsInput', description: 'Tenant settings to write; a key left out keeps its value.' });

const windowDescription = 'Days and UTC times during which agents may update themselves (end before start runs past midnight; equal times mean all day).';
export const AgentUpdateWindowViewSchema = z.object({ days: z.array(weekday).describe('The days the window opens on, in week order.'), startUtc: hhmm().describe('When the window opens, HH:MM in UTC.'), endUtc: hhmm().describe('When the window closes, HH:MM in UTC (before startUtc: the next day).') }).meta({ title: 'AgentUpdateWindow', description: windowDescription });
export const TenantSettingsViewSchema = z.object({ agentUpdateWindow: AgentUpdateWindowViewSchema.nullable().describe('When agents may update themselves; null: no window of its own.') }).meta({ title: 'TenantSettings', description: 'A partner\'s or organization\'s settings.' });
export type TenantSettingsView = z.output<typeof TenantSettingsViewSchema>;

export const tenantName = () => z.string().trim().min(1).max(255).describe('Display name: 1 to 255 characters, surrounding spaces trimmed.');
export const contactEmail = () => z.email({ message: 'must be an email address' }).max(255).nullable().optional().describe('Where the service writes about this tenant; null clears it.');
export const requireMfaInput = () => z.boolean().optional().describe('changing it needs an MFA session');

export const CreatePartnerSchema = z
  .object({
    name: tenantName(),
    contactEmail: contactEmail(),
    requireMfa: requireMfaInput(),
    settings: TenantSettingsSchema.optional().describe('Initial settings; none when left out.'),
  })
  .strict().describe('A new partner (platform administrators only).');
export type CreatePartnerInput = z.input<typeof CreatePartnerSchema>;

export const UpdatePartnerSchema = z
  .object({
    name: tenantName().optional(),
    contactEmail: contactEmail(),
    requireMfa: requireMfaInput(),
    settings: TenantSettingsSchema.optional().describe('merged key by key'),
    status: tenantStatus.optional().describe('platform administrators only'),
  })
  .strict().describe('Changes to a partner; a field left out keeps its value.');
export type UpdatePartnerInput = z.input<typeof UpdatePartnerSchema>;

export const searchText = () => z.string().trim().min(1).max(255).optional().describe('part of the name');

export const PartnerListQuery = PageQuery.extend({ search: searchText() }).strict();
export type PartnerListInput = z.input<typeof PartnerListQuery>;

/** The fields partners and organizations share. */
export const tenantViewFields = {
  id: uuid().describe('Unique ID.'),
  name: z.string().describe('Display name.'),
  status: tenantStatus.describe('Whether the tenant is in service; suspended tenants’ users and keys are refused.'),
  contactEmail: z.string().nullable().describe('Where the service writes about this tenant; null when none is set.'),
  requireMfa: z.boolean().describe('every member must sign in with a second factor'),
  settings: TenantSettingsViewSchema.describe('Its settings (agent update window).'),
  createdAt: timestamp().describe('When it was created.'),
  updatedAt: timestamp().describe('When it last changed.'),
};

export const PartnerViewSchema = z.object(tenantViewFields).meta({ title: 'Partner', description: 'A managed service provider: the top of the tenancy tree, owning organizations.' });
export type PartnerView = z.output<typeof PartnerViewSchema>;
export const PartnerPageSchema = pageSchema(PartnerViewSchema, 'PartnerPage');

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
export async function listPartners(ctx: RequestContext, rawQuery: PartnerListInput): Promise<Page<PartnerView>> {
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

export async function updateMyPartner(ctx: RequestContext, rawInput: UpdatePartnerInput): Promise<PartnerView> {
  return updatePartner(ctx, ownPartnerId(ctx), rawInput);
}

/**
 * The partner an organization belongs to, for GraphQL's `Organization.partner`: null when the caller
 * could not read it through `partner(id)` (organization scope, or no `partners:read`).
 */
export async function visiblePartner(ctx: RequestContext, partnerId: string): Promise<PartnerView | null> {
  if (!(await permits(ctx, 'partners:read', { partnerId }))) return null;
  const partner = await ctx.loaders.byId(Partner).load(partnerId);
  return partner ? partnerView(partner) : null;
}

export async function createPartner(ctx: RequestContext, rawInput: CreatePartnerInput): Promise<PartnerView> {
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
    await recordChange(
      tx,
      { action: 'partner.create', resourceType: 'partner', resourceId: partner.id, partnerId: partner.id, changes, details: { name: partner.name } },
      { partnerId: partner.id, name: partner.name, changes },
    );
    return partnerView(partner);
  });
}

/** Only platform administrators change a partner's status; changing `requireMfa` needs an MFA session. */
export async function updatePartner(ctx: RequestContext, id: string, rawInput: UpdatePartnerInput): Promise<PartnerView> {
  const input = parseInput(UpdatePartnerSchema, rawInput);
  const principal = await authorize(ctx, 'partners:write', { partnerId: id, resource: 'Partner', mfa: input.requireMfa !== undefined });
  if (input.status !== undefined && principal.scope !== 'system') throw forbidden("Only platform administrators can change a partner's status");
  return withTransaction(ctx, async (tx) => {
    const partner = await findPartner(tx, id, LockMode.PESSIMISTIC_WRITE);
    const changes = applyChanges(partner, input);
    // A PATCH that changes nothing is not a mutation: no audit row, no event.
    if (changes.length === 0) return partnerView(partner);
    await tx.em.flush();
    await recordChange(
      tx,
      { action: 'partner.update', resourceType: 'partner', resourceId: id, partnerId: id, changes, details: { name: partner.name } },
      { partnerId: id, name: partner.name, changes },
    );
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
    await recordChange(
      tx,
      { action: 'partner.delete', resourceType: 'partner', resourceId: id, partnerId: id, details: { name: partner.name } },
      { partnerId: id, name: partner.name },
    );
  });
}
