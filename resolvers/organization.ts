import { Arg, Args, ArgsType, Ctx, Field, FieldResolver, ID, InputType, Mutation, ObjectType, Query, Resolver, Root } from 'type-graphql';
import type { GraphqlContext } from '../src/graphql/context.js';
import {
  createOrganization,
  deleteOrganization,
  getOrganization,
  getTenancy,
  listOrganizations,
  updateOrganization,
  type OrganizationView,
} from '../src/services/organizations.js';
import { visiblePartner } from '../src/services/partners.js';
import { AgentUpdateWindowObject, PartnerObject, TenantSettingsInput, TenantSettingsObject } from './partner.js';
import { PageArgs, PageOf } from './shared.js';

@ObjectType('EffectiveAgentUpdateWindow')
class EffectiveAgentUpdateWindowObject extends AgentUpdateWindowObject {
  @Field(() => String, { description: 'organization or partner: whose setting applies' })
  source!: 'organization' | 'partner';
}

@ObjectType('Organization')
export class OrganizationObject implements OrganizationView {
  @Field(() => ID)
  id!: string;

  @Field(() => ID)
  partnerId!: string;

  @Field(() => String)
  name!: string;

  @Field(() => String, { description: 'active or suspended' })
  status!: OrganizationView['status'];

  @Field(() => String, { nullable: true })
  contactEmail!: string | null;

  @Field(() => Boolean, { description: 'every member must sign in with a second factor' })
  requireMfa!: boolean;

  @Field(() => TenantSettingsObject)
  settings!: TenantSettingsObject;

  @Field(() => EffectiveAgentUpdateWindowObject, { nullable: true, description: "The organization's own window, else its partner's; null: agents update on every heartbeat." })
  effectiveAgentUpdateWindow!: EffectiveAgentUpdateWindowObject | null;

  @Field(() => String)
  createdAt!: string;

  @Field(() => String)
  updatedAt!: string;
}

const OrganizationPage = PageOf(OrganizationObject, 'OrganizationPage');

@ObjectType('Tenancy', { description: "The caller's place in the tenancy tree (REST `GET /orgs/`)." })
class TenancyObject {
  @Field(() => String, { description: 'system, partner or organization' })
  scope!: string;

  @Field(() => PartnerObject, { nullable: true, description: "partner callers allowed to read partners: their own partner" })
  partner!: PartnerObject | null;

  @Field(() => OrganizationPage)
  organizations!: InstanceType<typeof OrganizationPage>;
}

@ArgsType()
class OrganizationListArgs extends PageArgs {
  @Field(() => ID, { nullable: true })
  partnerId?: string;

  @Field(() => String, { nullable: true, description: 'part of the name' })
  search?: string;

  @Field(() => String, { nullable: true, description: 'active or suspended' })
  status?: string;
}

@InputType()
class CreateOrganizationInput {
  @Field(() => String)
  name!: string;

  @Field(() => ID, { nullable: true, description: "partner callers: their own partner by default; platform administrators: required" })
  partnerId?: string;

  @Field(() => String, { nullable: true })
  contactEmail?: string | null;

  @Field(() => Boolean, { nullable: true, description: 'changing it needs an MFA session' })
  requireMfa?: boolean;

  @Field(() => TenantSettingsInput, { nullable: true })
  settings?: TenantSettingsInput;
}

@InputType()
class UpdateOrganizationInput {
  @Field(() => String, { nullable: true })
  name?: string;

  @Field(() => String, { nullable: true })
  contactEmail?: string | null;

  @Field(() => Boolean, { nullable: true, description: 'changing it needs an MFA session' })
  requireMfa?: boolean;

  @Field(() => TenantSettingsInput, { nullable: true, description: 'merged key by key' })
  settings?: TenantSettingsInput;

  @Field(() => String, { nullable: true, description: 'active or suspended; partner and platform callers only' })
  status?: string;
}

@Resolver(() => OrganizationObject)
export class OrganizationResolver {
  @Query(() => TenancyObject)
  tenancy(@Ctx() { ctx }: GraphqlContext, @Args(() => OrganizationListArgs) args: OrganizationListArgs) {
    return getTenancy(ctx, args);
  }

  @Query(() => OrganizationPage, { description: 'Organizations the caller can see.' })
  organizations(@Ctx() { ctx }: GraphqlContext, @Args(() => OrganizationListArgs) args: OrganizationListArgs) {
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
