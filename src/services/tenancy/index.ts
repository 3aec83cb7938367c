import { Organization } from '../../../entities/organization.js';
import { Partner } from '../../../entities/partner.js';
import { Site } from '../../../entities/site.js';
import { orgsRouter } from '../../../rest/orgs.js';
import { PartnerResolver } from '../../../resolvers/partners.js';
import { OrganizationResolver } from '../../../resolvers/organizations.js';
import { SiteResolver } from '../../../resolvers/sites.js';
import { defineDomain } from '../../domain-module.js';
import { tenancyAuditActions } from './events.js';
import { siteEventSight } from './sites.js';

const permissions = {
  partners: ['read', 'write', 'delete'],
  organizations: ['read', 'write', 'delete'],
  sites: ['read', 'write', 'delete'],
} as const;
type TenancyPermissions = typeof permissions;
declare module '../../auth/permissions.js' {
  interface PermissionCatalog extends TenancyPermissions {}
}

/** Partners (MSPs), their organizations and the organizations’ sites. */
export const tenancyDomain = defineDomain({
  name: 'tenancy',
  eventSight: { site: siteEventSight },
  entities: [Partner, Organization, Site],
  rest: [orgsRouter],
  resolvers: [PartnerResolver, OrganizationResolver, SiteResolver],
  auditActions: tenancyAuditActions,
  permissions,
});
