import { field, id, input, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
import { pageSchema } from '../src/pagination.js';
import { OrganizationViewSchema, visibleOrganization } from '../src/services/tenancy/organizations.js';
import { CreateSiteSchema, SiteListQuery, SiteViewSchema, UpdateSiteSchema, createSite, deleteSite, getSite, listSites, updateSite, type SiteView } from '../src/services/tenancy/sites.js';
import { pageConnectionOf, paged } from './shared.js';

export const SiteResolver = operations(SiteViewSchema, {
  sites: query(pageConnectionOf(pageSchema(SiteViewSchema, 'SitePage')), [pageArgs('SiteListArgs', SiteListQuery)], paged(listSites), {
    description: 'Sites the caller can see (organization users limited to some sites see only those).',
  }),
  site: query(SiteViewSchema, [id], getSite, { description: 'One site.' }),
  createSite: mutation(SiteViewSchema, [input('CreateSiteInput', CreateSiteSchema)], createSite, { description: 'Creates a site of an organization.' }),
  updateSite: mutation(SiteViewSchema, [id, input('UpdateSiteInput', UpdateSiteSchema)], updateSite, { description: 'Renames a site or changes its time zone or address.' }),
  deleteSite: mutation(Boolean, [id], deleteSite, { description: 'Deletes a site with its enrollment keys and site-scoped groups; its devices stay in the organization without a site.' }),
  organization: field(OrganizationViewSchema, [], (ctx, site: SiteView) => visibleOrganization(ctx, site.orgId), {
    nullable: true,
    description: 'null unless the caller may read the organization',
  }),
});
