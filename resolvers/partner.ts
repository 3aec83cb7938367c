import { Arg, Args, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import { argsType, inputType, objectType } from '../src/graphql/contract.js';
import type { GraphqlContext } from '../src/graphql/context.js';
import { pageSchema } from '../src/pagination.js';
import {
  CreatePartnerSchema,
  PartnerListQuery,
  PartnerViewSchema,
  UpdatePartnerSchema,
  createPartner,
  deletePartner,
  getMyPartner,
  getPartner,
  listPartners,
  updatePartner,
  type CreatePartnerInput,
  type PartnerListInput,
  type UpdatePartnerInput,
} from '../src/services/partners.js';

export const PartnerObject = objectType('Partner', PartnerViewSchema);
const PartnerPage = objectType('PartnerPage', pageSchema(PartnerViewSchema, 'PartnerPage'));
const PartnerListArgs = argsType('PartnerListArgs', PartnerListQuery);
const CreatePartnerInput = inputType('CreatePartnerInput', CreatePartnerSchema);
const UpdatePartnerInput = inputType('UpdatePartnerInput', UpdatePartnerSchema);

@Resolver(() => PartnerObject)
export class PartnerResolver {
  @Query(() => PartnerPage, { description: 'Platform administrators: every partner; partner users: their own.' })
  partners(@Ctx() { ctx }: GraphqlContext, @Args(() => PartnerListArgs) args: PartnerListInput) {
    return listPartners(ctx, args);
  }

  @Query(() => PartnerObject)
  partner(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string) {
    return getPartner(ctx, id);
  }

  @Query(() => PartnerObject, { description: "The partner-scoped caller's own partner." })
  myPartner(@Ctx() { ctx }: GraphqlContext) {
    return getMyPartner(ctx);
  }

  @Mutation(() => PartnerObject, { description: 'Platform administrators only.' })
  createPartner(@Ctx() { ctx }: GraphqlContext, @Arg('input', () => CreatePartnerInput) input: CreatePartnerInput) {
    return createPartner(ctx, input);
  }

  @Mutation(() => PartnerObject)
  updatePartner(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string, @Arg('input', () => UpdatePartnerInput) input: UpdatePartnerInput) {
    return updatePartner(ctx, id, input);
  }

  @Mutation(() => Boolean, { description: 'Deletes the partner with its organizations.' })
  async deletePartner(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string): Promise<boolean> {
    await deletePartner(ctx, id);
    return true;
  }
}
