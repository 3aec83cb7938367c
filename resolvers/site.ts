import { Arg, Args, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root } from 'type-graphql';
import { argsType, inputType, objectType } from '../src/graphql/contract.js';
import type { GraphqlContext } from '../src/graphql/context.js';
import { pageSchema } from '../src/pagination.js';
import { visibleOrganization } from '../src/services/organizations.js';
import {
  CreateSiteSchema,
  SiteListQuery,
  SiteViewSchema,
  UpdateSiteSchema,
  createSite,
  deleteSite,
  getSite,
  listSites,
  updateSite,
  type CreateSiteInput,
  type SiteListInput,
  type SiteView,
  type UpdateSiteInput,
} from '../src/services/sites.js';
import { OrganizationObject } from './organization.js';

export const SiteObject = objectType('Site', SiteViewSchema);
const SitePage = objectType('SitePage', pageSchema(SiteViewSchema, 'SitePage'));
const SiteListArgs = argsType('SiteListArgs', SiteListQuery);
const CreateSiteInput = inputType('CreateSiteInput', CreateSiteSchema);
const UpdateSiteInput = inputType('UpdateSiteInput', UpdateSiteSchema);

@Resolver(() => SiteObject)
export class SiteResolver {
  @Query(() => SitePage, { description: 'Sites the caller can see (organization users limited to some sites see only those).' })
  sites(@Ctx() { ctx }: GraphqlContext, @Args(() => SiteListArgs) args: SiteListInput) {
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
