import { field, id, input, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
import { pageSchema } from '../src/pagination.js';
import * as organizations from '../src/services/tenancy/organizations.js';
import * as sites from '../src/services/tenancy/sites.js';
import { pageConnectionOf, paged } from './shared.js';

export const SiteResolver = operations(sites.SiteViewSchema, {
  sites: query(pageConnectionOf(pageSchema(sites.SiteViewSchema, 'SitePage')), [pageArgs('SiteListArgs', sites.SiteListQuery)], paged(sites.listSites), {
    description: 'Sites the caller can see (organization users limited to some sites see only those).',
  }),
  site: query(sites.SiteViewSchema, [id], sites.getSite, { description: 'One site.' }),
  createSite: mutation(sites.SiteViewSchema, [input('CreateSiteInput', sites.CreateSiteSchema)], sites.createSite, { description: 'Creates a site of an organization.' }),
  updateSite: mutation(sites.SiteViewSchema, [id, input('UpdateSiteInput', sites.UpdateSiteSchema)], sites.updateSite, { description: 'Renames a site or changes its time zone or address.' }),
  deleteSite: mutation(Boolean, [id], sites.deleteSite, { description: 'Deletes a site with its enrollment keys and site-scoped groups; its devices stay in the organization without a site.' }),
  organization: field(organizations.OrganizationViewSchema, [], (ctx, site: sites.SiteView) => organizations.visibleOrganization(ctx, site.orgId), {
    nullable: true,
    description: 'null unless the caller may read the organization',
  }),
});
