import { Arg, Args, ArgsType, Ctx, Field, FieldResolver, ID, InputType, Mutation, ObjectType, Query, Resolver, Root } from 'type-graphql';
import type { GraphqlContext } from '../src/graphql/context.js';
import { visibleOrganization } from '../src/services/organizations.js';
import { createSite, deleteSite, getSite, listSites, updateSite, type SiteView } from '../src/services/sites.js';
import { OrganizationObject } from './organization.js';
import { PageArgs, PageOf } from './shared.js';

@ObjectType('Site')
export class SiteObject implements SiteView {
  @Field(() => ID)
  id!: string;

  @Field(() => ID)
  orgId!: string;

  @Field(() => String)
  name!: string;

  @Field(() => String, { description: 'IANA time zone' })
  timezone!: string;

  @Field(() => String, { nullable: true })
  address!: string | null;

  @Field(() => String)
  createdAt!: string;

  @Field(() => String)
  updatedAt!: string;
}

const SitePage = PageOf(SiteObject, 'SitePage');

@ArgsType()
class SiteListArgs extends PageArgs {
  @Field(() => ID, { nullable: true })
  orgId?: string;

  @Field(() => String, { nullable: true, description: 'part of the name' })
  search?: string;
}

@InputType()
class CreateSiteInput {
  @Field(() => String)
  name!: string;

  @Field(() => ID, { nullable: true, description: 'organization users: their own organization by default; others: required' })
  orgId?: string;

  @Field(() => String, { nullable: true, description: 'IANA time zone, UTC by default' })
  timezone?: string;

  @Field(() => String, { nullable: true })
  address?: string | null;
}

@InputType()
class UpdateSiteInput {
  @Field(() => String, { nullable: true })
  name?: string;

  @Field(() => String, { nullable: true })
  timezone?: string;

  @Field(() => String, { nullable: true })
  address?: string | null;
}

@Resolver(() => SiteObject)
export class SiteResolver {
  @Query(() => SitePage, { description: 'Sites the caller can see (organization users limited to some sites see only those).' })
  sites(@Ctx() { ctx }: GraphqlContext, @Args(() => SiteListArgs) args: SiteListArgs) {
    return listSites(ctx, args);
  }

  @Query(() => SiteObject)
  site(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string) {
    return getSite(ctx, id);
  }

  @Mutation(() => SiteObject)
  createSite(@Ctx() { ctx }: GraphqlContext, @Arg('input', () => CreateSiteInput) input: CreateSiteInput) {
    return createSite(ctx, input);
  }

  @Mutation(() => SiteObject)
  updateSite(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string, @Arg('input', () => UpdateSiteInput) input: UpdateSiteInput) {
    return updateSite(ctx, id, input);
  }

  @Mutation(() => Boolean)
  async deleteSite(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string): Promise<boolean> {
    await deleteSite(ctx, id);
    return true;
  }

  @FieldResolver(() => OrganizationObject, { nullable: true, description: 'null unless the caller may read the organization' })
  organization(@Ctx() { ctx }: GraphqlContext, @Root() site: SiteView) {
    return visibleOrganization(ctx, site.orgId);
  }
}
