import { LockMode, type FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { Organization } from '../../../entities/organization.js';
import { Partner } from '../../../entities/partner.js';
import type { RequestContext } from '../../auth/context.js';
import { hasPermission } from '../../auth/permissions.js';
import { authorize, permits, requirePrincipal, tenantWhere } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { badRequest, forbidden, notFound } from '../../errors.js';
import { PageQuery, pageOptions, pageSchema, toPage, type Page } from '../../pagination.js';
import { enumValues, parseInput, uuid } from '../../validation.js';
import { recordChange } from '../audit/api.js';
import { ScopeSchema } from '../identity/api.js';
import { applyChanges, providedFields } from '../shared/changes.js';
import { containsPattern } from '../../db/like.js';
import {
  AgentUpdateWindowViewSchema,
  PartnerViewSchema,
  TenantSettingsSchema,
  contactEmail,
  getPartner,
  requireMfaInput,
  searchText,
  settingsView,
  tenantName,
  tenantStatus,
  tenantViewFields,
} from './partners.js';

export const CreateOrganizationSchema = z
  .object({
    name: tenantName(),
    partnerId: uuid().optional().describe('partner callers: defaults to, and must be, their own partner; platform administrators: required'),
    contactEmail: contactEmail(),
    requireMfa: requireMfaInput(),
    settings: TenantSettingsSchema.optional().describe('Initial settings; none when left out (the partner’s window then applies).'),
  })
  .strict().describe('A new organization (a customer of a partner).');
export type CreateOrganizationInput = z.input<typeof CreateOrganizationSchema>;

export const UpdateOrganizationSchema = z
  .object({
    name: tenantName().optional(),
    contactEmail: contactEmail(),
    requireMfa: requireMfaInput(),
    settings: TenantSettingsSchema.optional().describe('merged key by key'),
    status: tenantStatus.optional().describe('partner and platform callers only'),
  })
  .strict().describe('Changes to an organization; a field left out keeps its value.');
export type UpdateOrganizationInput = z.input<typeof UpdateOrganizationSchema>;

export const OrganizationListQuery = PageQuery.extend({
  partnerId: uuid().optional().describe('Only organizations of this partner (partner and platform callers).'),
  search: searchText(),
  status: tenantStatus.optional().describe('Only organizations in this state.'),
}).strict();
export type OrganizationListInput = z.input<typeof OrganizationListQuery>;

export const OrganizationViewSchema = z
  .object({
    ...tenantViewFields,
    partnerId: uuid().describe('The partner the organization belongs to.'),
    effectiveAgentUpdateWindow: AgentUpdateWindowViewSchema.extend({
      source: z
        .enum(['organization', 'partner'])
        .meta({ title: 'AgentUpdateWindowSource', description: 'Whose agent update window applies to an organization.' })
        .register(enumValues, { organization: 'The organization’s own window.', partner: 'Its partner’s window (the organization has none of its own).' })
        .describe('whose setting applies'),
    })
      .meta({ title: 'EffectiveAgentUpdateWindow', description: 'The agent update window that applies to an organization, and whose it is.' })
      .nullable()
      .describe("The organization's own window, else its partner's; null: agents update on every heartbeat."),
  })
  .meta({ title: 'Organization', description: 'A customer of a partner, holding sites, devices and users.' });
export type OrganizationView = z.output<typeof OrganizationViewSchema>;
export const OrganizationPageSchema = pageSchema(OrganizationViewSchema, 'OrganizationPage');
export type EffectiveAgentUpdateWindow = NonNullable<OrganizationView['effectiveAgentUpdateWindow']>;

/** `GET /orgs/`: who the caller is in the tenancy tree, for a dashboard's header and organization picker. */
export const TenancyViewSchema = z
  .object({
    scope: ScopeSchema.describe('The level the caller acts at: system (platform administrator), partner or organization.'),
    partner: PartnerViewSchema.nullable().describe('partner callers allowed to read partners: their own partner'),
    organizations: OrganizationPageSchema.describe('The organizations the caller can see, paged like `organizations`.'),
  })
  .meta({ title: 'Tenancy', description: "The caller's place in the tenancy tree (REST `GET /orgs/`)." });
export type TenancyView = z.output<typeof TenancyViewSchema>;

function effectiveWindow(org: Organization, partner: Partner | null): EffectiveAgentUpdateWindow | null {
  if (org.settings.agentUpdateWindow) return { ...org.settings.agentUpdateWindow, source: 'organization' };
  if (partner?.settings.agentUpdateWindow) return { ...partner.settings.agentUpdateWindow, source: 'partner' };
  return null;
}

/** Views of a page of organizations; the partners of those that inherit a window load in one batch. */
async function organizationViews(ctx: RequestContext, orgs: Organization[]): Promise<OrganizationView[]> {
  const inheriting = [...new Set(orgs.filter((o) => !o.settings.agentUpdateWindow).map((o) => o.partnerId))];
  const loaded = await ctx.loaders.byId(Partner).loadMany(inheriting);
  const partners = new Map(loaded.flatMap((p) => (p instanceof Partner ? [[p.id, p] as const] : [])));
  return orgs.map((org) => ({
    id: org.id,
    partnerId: org.partnerId,
    name: org.name,
    status: org.status,
    contactEmail: org.contactEmail,
    requireMfa: org.requireMfa,
    settings: settingsView(org.settings),
    effectiveAgentUpdateWindow: effectiveWindow(org, partners.get(org.partnerId) ?? null),
    createdAt: org.createdAt.toISOString(),
    updatedAt: org.updatedAt.toISOString(),
  }));
}

async function organizationView(ctx: RequestContext, org: Organization): Promise<OrganizationView> {
  const [view] = await organizationViews(ctx, [org]);
  return view!;
}

export async function listOrganizations(ctx: RequestContext, rawQuery: OrganizationListInput): Promise<Page<OrganizationView>> {
  const query = parseInput(OrganizationListQuery, rawQuery);
  await authorize(ctx, 'organizations:read');
  const where: FilterQuery<Organization>[] = [(await tenantWhere<Organization>(ctx, { org: 'id' })) ?? {}];
  if (query.partnerId) where.push({ partnerId: query.partnerId });
  if (query.status) where.push({ status: query.status });
  if (query.search) where.push({ name: { $ilike: containsPattern(query.search) } });
  const [rows, total] = await ctx.em.findAndCount(Organization, { $and: where }, { orderBy: { name: 'asc', id: 'asc' }, ...pageOptions(query) });
  return toPage(await organizationViews(ctx, rows), total, query);
}

export async function getTenancy(ctx: RequestContext, rawQuery: OrganizationListInput): Promise<TenancyView> {
  const organizations = await listOrganizations(ctx, rawQuery);
  const principal = requirePrincipal(ctx);
  const partner =
    principal.scope === 'partner' && principal.partnerId && hasPermission(principal.permissions, 'partners:read') ? await getPartner(ctx, principal.partnerId) : null;
  return { scope: principal.scope, partner, organizations };
}

export async function getOrganization(ctx: RequestContext, id: string): Promise<OrganizationView> {
  await authorize(ctx, 'organizations:read', { orgId: id, resource: 'Organization' });
  return organizationView(ctx, await ctx.em.findOneOrFail(Organization, { id }));
}

/** For GraphQL's `Site.organization`: null when the caller could not read it through `organization(id)`. */
export async function visibleOrganization(ctx: RequestContext, orgId: string): Promise<OrganizationView | null> {
  if (!(await permits(ctx, 'organizations:read', { orgId }))) return null;
  const org = await ctx.loaders.byId(Organization).load(orgId);
  return org ? organizationView(ctx, org) : null;
}

/**
 * Partner callers create organizations in their own partner; platform administrators name the
 * partner. Organization callers cannot, nor can partner users limited to selected organizations
 * (the new organization would be outside their selection).
 */
export async function createOrganization(ctx: RequestContext, rawInput: CreateOrganizationInput): Promise<OrganizationView> {
  const input = parseInput(CreateOrganizationSchema, rawInput);
  const principal = requirePrincipal(ctx);
  const partnerId = principal.scope === 'partner' ? (input.partnerId ?? principal.partnerId) : principal.scope === 'system' ? input.partnerId : undefined;
  await authorize(ctx, 'organizations:write', { partnerId, resource: 'Partner', mfa: input.requireMfa !== undefined });
  if (principal.scope === 'organization') throw forbidden('Organization users cannot create organizations');
  if (principal.orgAccess === 'selected') throw forbidden('Partner users limited to selected organizations cannot create organizations');
  if (!partnerId) throw badRequest('partnerId: required when a platform administrator creates an organization');
  const partner = await ctx.em.findOne(Partner, { id: partnerId });
  if (!partner) throw notFound('Partner');
  return withTransaction(ctx, async (tx) => {
    const org = tx.em.create(Organization, {
      partnerId,
      name: input.name,
      contactEmail: input.contactEmail ?? null,
      requireMfa: input.requireMfa ?? false,
      settings: input.settings ?? {},
    });
    await tx.em.flush();
    const changes = providedFields({ ...input, partnerId });
    await recordChange(
      tx,
      { action: 'organization.create', resourceType: 'organization', resourceId: org.id, orgId: org.id, partnerId, changes, details: { name: org.name } },
      { orgId: org.id, partnerId, name: org.name, changes },
    );
    return organizationView(tx, org);
  });
}

/** Organization users cannot change their own organization's status; changing `requireMfa` needs an MFA session. */
export async function updateOrganization(ctx: RequestContext, id: string, rawInput: UpdateOrganizationInput): Promise<OrganizationView> {
  const input = parseInput(UpdateOrganizationSchema, rawInput);
  const principal = await authorize(ctx, 'organizations:write', { orgId: id, resource: 'Organization', mfa: input.requireMfa !== undefined });
  if (input.status !== undefined && principal.scope === 'organization') throw forbidden("Organization users cannot change their organization's status");
  return withTransaction(ctx, async (tx) => {
    const org = await tx.em.findOneOrFail(Organization, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    const changes = applyChanges(org, input);
    // A PATCH that changes nothing is not a mutation: no audit row, no event.
    if (changes.length === 0) return organizationView(tx, org);
    await tx.em.flush();
    await recordChange(
      tx,
      { action: 'organization.update', resourceType: 'organization', resourceId: id, orgId: id, partnerId: org.partnerId, changes, details: { name: org.name } },
      { orgId: id, partnerId: org.partnerId, name: org.name, changes },
    );
    return organizationView(tx, org);
  });
}

/** Removes the organization with its sites (and everything else that cascades from it). */
export async function deleteOrganization(ctx: RequestContext, id: string): Promise<void> {
  const principal = await authorize(ctx, 'organizations:delete', { orgId: id, resource: 'Organization' });
  if (principal.orgId === id) throw badRequest('You cannot delete your own organization');
  const org = await ctx.em.findOneOrFail(Organization, { id });
  await withTransaction(ctx, async (tx) => {
    await tx.em.nativeDelete(Organization, { id });
    await recordChange(
      tx,
      { action: 'organization.delete', resourceType: 'organization', resourceId: id, orgId: id, partnerId: org.partnerId, details: { name: org.name } },
      { orgId: id, partnerId: org.partnerId, name: org.name },
    );
  });
}
