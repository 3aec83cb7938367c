import { args, field, id, input, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
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
  type OrganizationView,
} from '../src/services/tenancy/organizations.js';
import { PartnerViewSchema, visiblePartner } from '../src/services/tenancy/partners.js';
import { pageConnectionOf, paged } from './shared.js';

const listArgs = args('OrganizationListArgs', OrganizationListQuery);

export const OrganizationResolver = operations(OrganizationViewSchema, {
  tenancy: query(TenancyViewSchema, [listArgs], getTenancy, { description: 'Who the caller is in the tenancy tree, with the organizations it sees (REST `GET /orgs/`).' }),
  organizations: query(pageConnectionOf(OrganizationPageSchema), [pageArgs('OrganizationConnectionArgs', OrganizationListQuery)], paged(listOrganizations), {
    description: 'Organizations the caller can see.',
  }),
  organization: query(OrganizationViewSchema, [id], getOrganization, { description: 'One organization.' }),
  createOrganization: mutation(OrganizationViewSchema, [input('CreateOrganizationInput', CreateOrganizationSchema)], createOrganization, {
    description: 'Creates an organization under a partner (partner callers: their own).',
  }),
  updateOrganization: mutation(OrganizationViewSchema, [id, input('UpdateOrganizationInput', UpdateOrganizationSchema)], updateOrganization, {
    description: 'Renames, suspends or reconfigures an organization.',
  }),
  deleteOrganization: mutation(Boolean, [id], deleteOrganization, { description: 'Deletes the organization with its sites.' }),
  partner: field(PartnerViewSchema, [], (ctx, org: OrganizationView) => visiblePartner(ctx, org.partnerId), {
    nullable: true,
    description: 'null unless the caller may read the partner',
  }),
});
