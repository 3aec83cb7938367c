import { id, input, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
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
  updatePartner,
} from '../src/services/tenancy/partners.js';
import { pageConnectionOf, paged } from './shared.js';

export const PartnerResolver = operations({
  myPartner: query(PartnerViewSchema, [], getMyPartner, { description: "The partner-scoped caller's own partner." }),
  partners: query(pageConnectionOf(PartnerPageSchema), [pageArgs('PartnerListArgs', PartnerListQuery)], paged(listPartners), {
    description: 'Platform administrators: every partner; partner users: their own.',
  }),
  partner: query(PartnerViewSchema, [id], getPartner, { description: 'One partner.' }),
  createPartner: mutation(PartnerViewSchema, [input('CreatePartnerInput', CreatePartnerSchema)], createPartner, { description: 'Platform administrators only.' }),
  updatePartner: mutation(PartnerViewSchema, [id, input('UpdatePartnerInput', UpdatePartnerSchema)], updatePartner, { description: 'Renames, suspends or reconfigures a partner.' }),
  deletePartner: mutation(Boolean, [id], deletePartner, { description: 'Deletes the partner with its organizations.' }),
});
