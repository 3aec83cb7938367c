import { LockMode, type FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { Site } from '../../../entities/site.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, loadOwned, permits, targetOrgId, tenantWhere, visibleSiteIds } from '../../auth/policy.js';
import type { Permission } from '../../auth/permissions.js';
import { withTransaction } from '../../db/transaction.js';
import { forbidden } from '../../errors.js';
import { PageQuery, pageOptions, toPage, type Page } from '../../pagination.js';
import { parseInput, timestamp, uuid } from '../../validation.js';
import { recordChange } from '../audit/api.js';
import { applyChanges, providedFields } from '../shared/changes.js';
import { searchText, tenantName } from './partners.js';
import { containsPattern } from '../../db/like.js';
import { shownWhen } from '../../events/sight.js';
import type { DomainEventMap } from '../../events/types.js';

function isTimeZone(value: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: value });
    return true;
  } catch {
    return false;
  }
}

const timezone = () => z.string().max(100).refine(isTimeZone, { message: 'must be an IANA time zone such as Europe/Paris or UTC' });
const address = () => z.string().trim().max(1000).nullable().optional();

export const CreateSiteSchema = z
  .object({
    name: tenantName(),
    orgId: uuid().optional().describe('organization users: their own organization by default; others: required'),
    timezone: timezone().optional().describe('IANA time zone, UTC by default'),
    address: address().describe('Postal address, up to 1000 characters; null or left out for none.'),
  })
  .strict().describe('A new site of an organization.');
export type CreateSiteInput = z.input<typeof CreateSiteSchema>;

export const UpdateSiteSchema = z.object({ name: tenantName().optional(), timezone: timezone().optional().describe('IANA time zone'), address: address().describe('Postal address, up to 1000 characters; null clears it.') }).strict().describe('Changes to a site; a field left out keeps its value.');
export type UpdateSiteInput = z.input<typeof UpdateSiteSchema>;

export const SiteListQuery = PageQuery.extend({ orgId: uuid().optional().describe('Only sites of this organization.'), search: searchText().describe('part of the name') }).strict();
export type SiteListInput = z.input<typeof SiteListQuery>;

export const SiteViewSchema = z.object({
  id: uuid().describe('Unique ID.'),
  orgId: uuid().describe('The organization the site belongs to.'),
  name: z.string().describe('Display name, unique within its organization.'),
  timezone: z.string().describe('IANA time zone'),
  address: z.string().nullable().describe('Postal address; null when none is set.'),
  createdAt: timestamp().describe('When the site was created.'),
  updatedAt: timestamp().describe('When the site last changed.'),
}).meta({ title: 'Site', description: 'A location of an organization (an office, a data centre); devices and enrollment keys may belong to one.' });
export type SiteView = z.output<typeof SiteViewSchema>;

function siteView(site: Site): SiteView {
  return {
    id: site.id,
    orgId: site.orgId,
    name: site.name,
    timezone: site.timezone,
    address: site.address,
    createdAt: site.createdAt.toISOString(),
    updatedAt: site.updatedAt.toISOString(),
  };
}

/** Loads a site the caller may act on with `permission`; another tenant's site, or one outside the caller's sites, is 404. */
function accessibleSite(ctx: RequestContext, id: string, permission: Permission): Promise<Site> {
  return loadOwned(ctx, Site, id, permission, { resource: 'Site', site: 'id' });
}

export async function listSites(ctx: RequestContext, rawQuery: SiteListInput): Promise<Page<SiteView>> {
  const query = parseInput(SiteListQuery, rawQuery);
  await authorize(ctx, 'sites:read');
  const where: FilterQuery<Site>[] = [(await tenantWhere<Site>(ctx, { org: 'orgId', site: 'id', requestedOrgId: query.orgId })) ?? {}];
  if (query.search) where.push({ name: { $ilike: containsPattern(query.search) } });
  const [rows, total] = await ctx.em.findAndCount(Site, { $and: where }, { orderBy: { name: 'asc', id: 'asc' }, ...pageOptions(query) });
  return toPage(rows.map(siteView), total, query);
}

export async function getSite(ctx: RequestContext, id: string): Promise<SiteView> {
  return siteView(await accessibleSite(ctx, id, 'sites:read'));
}

/**
 * The site of a record the caller has been shown (GraphQL `Device.site`), or null unless the caller
 * may read it (sites:read in its organization, and one of the caller's sites when limited to some).
 * A page of records reads its sites in one statement (the request's loader).
 */
export async function visibleSite(ctx: RequestContext, orgId: string, siteId: string | null): Promise<SiteView | null> {
  // The decision comes first: a record without a site answers null after one too.
  if (!(await permits(ctx, 'sites:read', { orgId })) || !siteId) return null;
  const sites = visibleSiteIds(ctx, orgId);
  if (sites && !sites.includes(siteId)) return null;
  const site = await ctx.loaders.byId(Site).load(siteId);
  return site && site.orgId === orgId ? siteView(site) : null;
}

/** The names of these sites (ids of no site are left out), for what another domain shows of its rows' sites. */
export async function siteNames(ctx: RequestContext, ids: readonly string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const sites = await ctx.em.find(Site, { id: { $in: [...new Set(ids)] } }, { fields: ['name'], disableIdentityMap: true });
  return new Map(sites.map((site) => [site.id, site.name]));
}

/** Users limited to some sites cannot create one: it would be outside their sites. */
export async function createSite(ctx: RequestContext, rawInput: CreateSiteInput): Promise<SiteView> {
  const input = parseInput(CreateSiteSchema, rawInput);
  const orgId = await targetOrgId(ctx, input.orgId);
  await authorize(ctx, 'sites:write', { orgId, resource: 'Organization' });
  if (visibleSiteIds(ctx, orgId)) throw forbidden('Users limited to some sites cannot create sites');
  return withTransaction(ctx, async (tx) => {
    const site = tx.em.create(Site, { orgId, name: input.name, timezone: input.timezone ?? 'UTC', address: input.address ?? null });
    await tx.em.flush();
    const changes = providedFields({ ...input, orgId });
    await recordChange(
      tx,
      { action: 'site.create', resourceType: 'site', resourceId: site.id, orgId, partnerId: await tx.partnerOfOrg(orgId), changes, details: { name: site.name } },
      { siteId: site.id, orgId, name: site.name, changes },
    );
    return siteView(site);
  });
}

export async function updateSite(ctx: RequestContext, id: string, rawInput: UpdateSiteInput): Promise<SiteView> {
  const input = parseInput(UpdateSiteSchema, rawInput);
  const { orgId } = await accessibleSite(ctx, id, 'sites:write');
  return withTransaction(ctx, async (tx) => {
    const site = await tx.em.findOneOrFail(Site, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    const changes = applyChanges(site, input);
    // A PATCH that changes nothing is not a mutation: no audit row, no event.
    if (changes.length === 0) return siteView(site);
    await tx.em.flush();
    await recordChange(
      tx,
      { action: 'site.update', resourceType: 'site', resourceId: id, orgId, partnerId: await tx.partnerOfOrg(orgId), changes, details: { name: site.name } },
      { siteId: id, orgId, name: site.name, changes },
    );
    return siteView(site);
  });
}

export async function deleteSite(ctx: RequestContext, id: string): Promise<void> {
  const site = await accessibleSite(ctx, id, 'sites:delete');
  await withTransaction(ctx, async (tx) => {
    await tx.em.nativeDelete(Site, { id });
    await recordChange(
      tx,
      { action: 'site.delete', resourceType: 'site', resourceId: id, orgId: site.orgId, partnerId: await tx.partnerOfOrg(site.orgId), details: { name: site.name } },
      { siteId: id, orgId: site.orgId, name: site.name },
    );
  });
}

/** A site's events reach those of the organization who see the site. */
export const siteEventSight = shownWhen(async (ctx, event) => {
  const sites = visibleSiteIds(ctx, event.orgId);
  return !sites || sites.includes((event.data as DomainEventMap['site.updated']).siteId);
});
