import { Arg, Args, ArgsType, Ctx, Field, ID, InputType, Mutation, ObjectType, Query, Resolver, registerEnumType } from 'type-graphql';
import type { GraphqlContext } from '../src/graphql/context.js';
import {
  WEEKDAYS,
  createPartner,
  deletePartner,
  getMyPartner,
  getPartner,
  listPartners,
  updatePartner,
  type PartnerView,
  type Weekday,
} from '../src/services/partners.js';
import { PageArgs, PageOf } from './shared.js';

// GraphQL enum values spelled as in REST (`mon` ... `sun`).
const WeekdayEnum = Object.fromEntries(WEEKDAYS.map((d) => [d, d]));
registerEnumType(WeekdayEnum, { name: 'Weekday' });

@ObjectType('AgentUpdateWindow', { description: 'Days and UTC times during which agents may update themselves (end before start runs past midnight; equal times mean all day).' })
export class AgentUpdateWindowObject {
  @Field(() => [WeekdayEnum])
  days!: Weekday[];

  @Field(() => String, { description: 'HH:MM, UTC' })
  startUtc!: string;

  @Field(() => String, { description: 'HH:MM, UTC' })
  endUtc!: string;
}

@ObjectType('TenantSettings')
export class TenantSettingsObject {
  @Field(() => AgentUpdateWindowObject, { nullable: true })
  agentUpdateWindow!: AgentUpdateWindowObject | null;
}

@InputType('AgentUpdateWindowInput')
export class AgentUpdateWindowInput {
  @Field(() => [WeekdayEnum])
  days!: Weekday[];

  @Field(() => String, { description: 'HH:MM, UTC' })
  startUtc!: string;

  @Field(() => String, { description: 'HH:MM, UTC' })
  endUtc!: string;
}

@InputType('TenantSettingsInput')
export class TenantSettingsInput {
  @Field(() => AgentUpdateWindowInput, { nullable: true, description: 'null clears the window' })
  agentUpdateWindow?: AgentUpdateWindowInput | null;
}

@ObjectType('Partner')
export class PartnerObject implements PartnerView {
  @Field(() => ID)
  id!: string;

  @Field(() => String)
  name!: string;

  @Field(() => String, { description: 'active or suspended' })
  status!: PartnerView['status'];

  @Field(() => String, { nullable: true })
  contactEmail!: string | null;

  @Field(() => Boolean, { description: 'every member must sign in with a second factor' })
  requireMfa!: boolean;

  @Field(() => TenantSettingsObject)
  settings!: TenantSettingsObject;

  @Field(() => String)
  createdAt!: string;

  @Field(() => String)
  updatedAt!: string;
}

const PartnerPage = PageOf(PartnerObject, 'PartnerPage');

@ArgsType()
class PartnerListArgs extends PageArgs {
  @Field(() => String, { nullable: true, description: 'part of the name' })
  search?: string;
}

@InputType()
class CreatePartnerInput {
  @Field(() => String)
  name!: string;

  @Field(() => String, { nullable: true })
  contactEmail?: string | null;

  @Field(() => Boolean, { nullable: true, description: 'changing it needs an MFA session' })
  requireMfa?: boolean;

  @Field(() => TenantSettingsInput, { nullable: true })
  settings?: TenantSettingsInput;
}

@InputType()
class UpdatePartnerInput {
  @Field(() => String, { nullable: true })
  name?: string;

  @Field(() => String, { nullable: true })
  contactEmail?: string | null;

  @Field(() => Boolean, { nullable: true, description: 'changing it needs an MFA session' })
  requireMfa?: boolean;

  @Field(() => TenantSettingsInput, { nullable: true, description: 'merged key by key' })
  settings?: TenantSettingsInput;

  @Field(() => String, { nullable: true, description: 'active or suspended; platform administrators only' })
  status?: string;
}

@Resolver(() => PartnerObject)
export class PartnerResolver {
  @Query(() => PartnerPage, { description: 'Platform administrators: every partner; partner users: their own.' })
  partners(@Ctx() { ctx }: GraphqlContext, @Args(() => PartnerListArgs) args: PartnerListArgs) {
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
