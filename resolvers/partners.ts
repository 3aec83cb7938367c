import { id, input, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
import * as partners from '../src/services/tenancy/partners.js';
import { pageConnectionOf, paged } from './shared.js';

export const PartnerResolver = operations({
  myPartner: query(partners.PartnerViewSchema, [], partners.getMyPartner, { description: "The partner-scoped caller's own partner." }),
  partners: query(pageConnectionOf(partners.PartnerPageSchema), [pageArgs('PartnerListArgs', partners.PartnerListQuery)], paged(partners.listPartners), {
    description: 'Platform administrators: every partner; partner users: their own.',
  }),
  partner: query(partners.PartnerViewSchema, [id], partners.getPartner, { description: 'One partner.' }),
  createPartner: mutation(partners.PartnerViewSchema, [input('CreatePartnerInput', partners.CreatePartnerSchema)], partners.createPartner, { description: 'Platform administrators only.' }),
  updatePartner: mutation(partners.PartnerViewSchema, [id, input('UpdatePartnerInput', partners.UpdatePartnerSchema)], partners.updatePartner, { description: 'Renames, suspends or reconfigures a partner.' }),
  deletePartner: mutation(Boolean, [id], partners.deletePartner, { description: 'Deletes the partner with its organizations.' }),
});
