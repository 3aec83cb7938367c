import { args, field, id, input, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
import * as organizations from '../src/services/tenancy/organizations.js';
import * as partners from '../src/services/tenancy/partners.js';
import { pageConnectionOf, paged } from './shared.js';

const listArgs = args('OrganizationListArgs', organizations.OrganizationListQuery);

export const OrganizationResolver = operations(organizations.OrganizationViewSchema, {
  tenancy: query(organizations.TenancyViewSchema, [listArgs], organizations.getTenancy, { description: 'Who the caller is in the tenancy tree, with the organizations it sees (REST `GET /orgs/`).' }),
  organizations: query(pageConnectionOf(organizations.OrganizationPageSchema), [pageArgs('OrganizationConnectionArgs', organizations.OrganizationListQuery)], paged(organizations.listOrganizations), {
    description: 'Organizations the caller can see.',
  }),
  organization: query(organizations.OrganizationViewSchema, [id], organizations.getOrganization, { description: 'One organization.' }),
  createOrganization: mutation(organizations.OrganizationViewSchema, [input('CreateOrganizationInput', organizations.CreateOrganizationSchema)], organizations.createOrganization, {
    description: 'Creates an organization under a partner (partner callers: their own).',
  }),
  updateOrganization: mutation(organizations.OrganizationViewSchema, [id, input('UpdateOrganizationInput', organizations.UpdateOrganizationSchema)], organizations.updateOrganization, {
    description: 'Renames, suspends or reconfigures an organization.',
  }),
  deleteOrganization: mutation(Boolean, [id], organizations.deleteOrganization, { description: 'Deletes the organization with its sites.' }),
  partner: field(partners.PartnerViewSchema, [], (ctx, org: organizations.OrganizationView) => partners.visiblePartner(ctx, org.partnerId), {
    nullable: true,
    description: 'null unless the caller may read the partner',
  }),
});
