import { Arg, Args, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import { argsType, inputType, objectType } from '../src/graphql/contract.js';
import type { GraphqlContext } from '../src/graphql/context.js';
import { pageSchema } from '../src/pagination.js';
import {
  CreateOrganizationSchema,
  OrganizationListQuery,
  OrganizationViewSchema,
  TenancyViewSchema,
  UpdateOrganizationSchema,
  createOrganization,
  deleteOrganization,
  getOrganization,
  getTenancy,
  listOrganizations,
  updateOrganization,
  type CreateOrganizationInput,
  type OrganizationListInput,
  type OrganizationView,
  type UpdateOrganizationInput,
} from '../src/services/organizations.js';
import { visiblePartner } from '../src/services/partners.js';
import { PartnerObject } from './partner.js';

export const OrganizationObject = objectType('Organization', OrganizationViewSchema);
const TenancyObject = objectType('Tenancy', TenancyViewSchema);
const OrganizationPage = objectType('OrganizationPage', pageSchema(OrganizationViewSchema, 'OrganizationPage'));
const OrganizationListArgs = argsType('OrganizationListArgs', OrganizationListQuery);
const CreateOrganizationInput = inputType('CreateOrganizationInput', CreateOrganizationSchema);
const UpdateOrganizationInput = inputType('UpdateOrganizationInput', UpdateOrganizationSchema);

@Resolver(() => OrganizationObject)
export class OrganizationResolver {
  @Query(() => TenancyObject)
  tenancy(@Ctx() { ctx }: GraphqlContext, @Args(() => OrganizationListArgs) args: OrganizationListInput) {
    return getTenancy(ctx, args);
  }

  @Query(() => OrganizationPage, { description: 'Organizations the caller can see.' })
  organizations(@Ctx() { ctx }: GraphqlContext, @Args(() => OrganizationListArgs) args: OrganizationListInput) {
    return listOrganizations(ctx, args);
  }

  @Query(() => OrganizationObject)
  organization(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string) {
    return getOrganization(ctx, id);
  }

  @Mutation(() => OrganizationObject)
  createOrganization(@Ctx() { ctx }: GraphqlContext, @Arg('input', () => CreateOrganizationInput) input: CreateOrganizationInput) {
    return createOrganization(ctx, input);
  }

  @Mutation(() => OrganizationObject)
  updateOrganization(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string, @Arg('input', () => UpdateOrganizationInput) input: UpdateOrganizationInput) {
    return updateOrganization(ctx, id, input);
  }

  @Mutation(() => Boolean, { description: 'Deletes the organization with its sites.' })
  async deleteOrganization(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string): Promise<boolean> {
    await deleteOrganization(ctx, id);
    return true;
  }

  @FieldResolver(() => PartnerObject, { nullable: true, description: 'null unless the caller may read the partner' })
  partner(@Ctx() { ctx }: GraphqlContext, @Root() org: OrganizationView) {
    return visiblePartner(ctx, org.partnerId);
  }
}
