import type { OpenApiRegistry } from '../src/http/openapi.js';
import { pageSchema } from '../src/pagination.js';
import * as organizations from '../src/services/tenancy/organizations.js';
import * as partners from '../src/services/tenancy/partners.js';
import * as sites from '../src/services/tenancy/sites.js';
import { call, pathId, RestRouter } from './router.js';

/** The tenancy tree: partners, organizations, sites, and the caller's place in it (`GET /orgs/`). */
export function orgsRouter(openapi: OpenApiRegistry): RestRouter {
  const r = new RestRouter(openapi, 'Organizations');
  const partner = { id: pathId('Partner') };
  const organization = { id: pathId('Organization') };
  const site = { id: pathId('Site') };
  const SitePage = pageSchema(sites.SiteViewSchema, 'SitePage');

  r.get('/orgs/', { summary: "The caller's scope, own partner and a page of visible organizations", query: organizations.OrganizationListQuery, response: organizations.TenancyViewSchema }, call(organizations.getTenancy));

  r.get('/orgs/partners', { summary: 'List partners (platform: all; partner: its own)', query: partners.PartnerListQuery, response: partners.PartnerPageSchema }, call(partners.listPartners));
  r.post('/orgs/partners', { summary: 'Create a partner (platform administrators)', body: partners.CreatePartnerSchema, status: 201, response: partners.PartnerViewSchema }, call(partners.createPartner));
  r.get('/orgs/partners/me', { summary: "The partner-scoped caller's own partner", response: partners.PartnerViewSchema }, call(partners.getMyPartner));
  r.patch('/orgs/partners/me', { summary: "Update the partner-scoped caller's own partner", body: partners.UpdatePartnerSchema, response: partners.PartnerViewSchema }, call(partners.updateMyPartner));
  r.get('/orgs/partners/:id', { summary: 'Get a partner', params: partner, response: partners.PartnerViewSchema }, call(partners.getPartner));
  r.patch('/orgs/partners/:id', { summary: 'Update a partner', params: partner, body: partners.UpdatePartnerSchema, response: partners.PartnerViewSchema }, call(partners.updatePartner));
  r.delete('/orgs/partners/:id', { summary: 'Delete a partner with its organizations', params: partner, status: 204 }, call(partners.deletePartner));

  r.get('/orgs/organizations', { summary: 'List visible organizations', query: organizations.OrganizationListQuery, response: organizations.OrganizationPageSchema }, call(organizations.listOrganizations));
  r.post('/orgs/organizations', { summary: 'Create an organization', body: organizations.CreateOrganizationSchema, status: 201, response: organizations.OrganizationViewSchema }, call(organizations.createOrganization));
  r.get('/orgs/organizations/:id', { summary: 'Get an organization', params: organization, response: organizations.OrganizationViewSchema }, call(organizations.getOrganization));
  r.patch('/orgs/organizations/:id', { summary: 'Update an organization', params: organization, body: organizations.UpdateOrganizationSchema, response: organizations.OrganizationViewSchema }, call(organizations.updateOrganization));
  r.delete('/orgs/organizations/:id', { summary: 'Delete an organization with its sites', params: organization, status: 204 }, call(organizations.deleteOrganization));

  r.get('/orgs/sites', { summary: 'List visible sites', query: sites.SiteListQuery, response: SitePage }, call(sites.listSites));
  r.post('/orgs/sites', { summary: 'Create a site', body: sites.CreateSiteSchema, status: 201, response: sites.SiteViewSchema }, call(sites.createSite));
  r.get('/orgs/sites/:id', { summary: 'Get a site', params: site, response: sites.SiteViewSchema }, call(sites.getSite));
  r.patch('/orgs/sites/:id', { summary: 'Update a site', params: site, body: sites.UpdateSiteSchema, response: sites.SiteViewSchema }, call(sites.updateSite));
  r.delete('/orgs/sites/:id', { summary: 'Delete a site', params: site, status: 204 }, call(sites.deleteSite));

  return r;
}
