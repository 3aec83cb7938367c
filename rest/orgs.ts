import type { OpenApiRegistry } from '../src/http/openapi.js';
import { pageSchema } from '../src/pagination.js';
import {
  CreateOrganizationSchema,
  OrganizationListQuery,
  OrganizationPageSchema,
  OrganizationViewSchema,
  TenancyViewSchema,
  UpdateOrganizationSchema,
  createOrganization,
  deleteOrganization,
  getOrganization,
  getTenancy,
  listOrganizations,
  updateOrganization,
} from '../src/services/tenancy/organizations.js';
import {
  CreatePartnerSchema,
  PartnerListQuery,
  PartnerPageSchema,
  PartnerViewSchema,
  UpdatePartnerSchema,
  createPartner,
  deletePartner,
  getMyPartner,
  getPartner,
  listPartners,
  updateMyPartner,
  updatePartner,
} from '../src/services/tenancy/partners.js';
import { CreateSiteSchema, SiteListQuery, SiteViewSchema, UpdateSiteSchema, createSite, deleteSite, getSite, listSites, updateSite } from '../src/services/tenancy/sites.js';
import { RestRouter, pathId } from './router.js';

/** The tenancy tree: partners, organizations, sites, and the caller's place in it (`GET /orgs/`). */
export function orgsRouter(openapi: OpenApiRegistry): RestRouter {
  const r = new RestRouter(openapi, 'Organizations');
  const partner = { id: pathId('Partner') };
  const organization = { id: pathId('Organization') };
  const site = { id: pathId('Site') };
  const SitePage = pageSchema(SiteViewSchema, 'SitePage');

  r.get('/orgs/', { summary: "The caller's scope, own partner and a page of visible organizations", query: OrganizationListQuery, response: TenancyViewSchema }, (ctx, { query }) =>
    getTenancy(ctx, query),
  );

  r.get('/orgs/partners', { summary: 'List partners (platform: all; partner: its own)', query: PartnerListQuery, response: PartnerPageSchema }, (ctx, { query }) => listPartners(ctx, query));
  r.post('/orgs/partners', { summary: 'Create a partner (platform administrators)', body: CreatePartnerSchema, status: 201, response: PartnerViewSchema }, (ctx, { body }) => createPartner(ctx, body));
  r.get('/orgs/partners/me', { summary: "The partner-scoped caller's own partner", response: PartnerViewSchema }, (ctx) => getMyPartner(ctx));
  r.patch('/orgs/partners/me', { summary: "Update the partner-scoped caller's own partner", body: UpdatePartnerSchema, response: PartnerViewSchema }, (ctx, { body }) => updateMyPartner(ctx, body));
  r.get('/orgs/partners/:id', { summary: 'Get a partner', params: partner, response: PartnerViewSchema }, (ctx, { params }) => getPartner(ctx, params.id));
  r.patch('/orgs/partners/:id', { summary: 'Update a partner', params: partner, body: UpdatePartnerSchema, response: PartnerViewSchema }, (ctx, { params, body }) => updatePartner(ctx, params.id, body));
  r.delete('/orgs/partners/:id', { summary: 'Delete a partner with its organizations', params: partner, status: 204 }, (ctx, { params }) => deletePartner(ctx, params.id));

  r.get('/orgs/organizations', { summary: 'List visible organizations', query: OrganizationListQuery, response: OrganizationPageSchema }, (ctx, { query }) => listOrganizations(ctx, query));
  r.post('/orgs/organizations', { summary: 'Create an organization', body: CreateOrganizationSchema, status: 201, response: OrganizationViewSchema }, (ctx, { body }) => createOrganization(ctx, body));
  r.get('/orgs/organizations/:id', { summary: 'Get an organization', params: organization, response: OrganizationViewSchema }, (ctx, { params }) => getOrganization(ctx, params.id));
  r.patch('/orgs/organizations/:id', { summary: 'Update an organization', params: organization, body: UpdateOrganizationSchema, response: OrganizationViewSchema }, (ctx, { params, body }) =>
    updateOrganization(ctx, params.id, body),
  );
  r.delete('/orgs/organizations/:id', { summary: 'Delete an organization with its sites', params: organization, status: 204 }, (ctx, { params }) => deleteOrganization(ctx, params.id));

  r.get('/orgs/sites', { summary: 'List visible sites', query: SiteListQuery, response: SitePage }, (ctx, { query }) => listSites(ctx, query));
  r.post('/orgs/sites', { summary: 'Create a site', body: CreateSiteSchema, status: 201, response: SiteViewSchema }, (ctx, { body }) => createSite(ctx, body));
  r.get('/orgs/sites/:id', { summary: 'Get a site', params: site, response: SiteViewSchema }, (ctx, { params }) => getSite(ctx, params.id));
  r.patch('/orgs/sites/:id', { summary: 'Update a site', params: site, body: UpdateSiteSchema, response: SiteViewSchema }, (ctx, { params, body }) => updateSite(ctx, params.id, body));
  r.delete('/orgs/sites/:id', { summary: 'Delete a site', params: site, status: 204 }, (ctx, { params }) => deleteSite(ctx, params.id));

  return r;
}
