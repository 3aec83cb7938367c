import { Arg, Args, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import { argsType, inputType, objectType } from '../src/graphql/contract.js';
import type { GraphqlContext } from '../src/graphql/context.js';
import { pageSchema } from '../src/pagination.js';
import { SsoCheckSchema, checkSso } from '../src/services/sso.js';
import { SsoLinkStartSchema, startSsoLink } from '../src/services/sso-links.js';
import {
  CreateSsoProviderSchema,
  ListSsoProvidersQuery,
  SsoPresetSchema,
  SsoProviderTestResultSchema,
  SsoProviderStatusInput,
  SsoProviderViewSchema,
  UpdateSsoProviderSchema,
  createSsoProvider,
  deleteSsoProvider,
  getSsoProvider,
  listSsoPresets,
  listSsoProviders,
  setSsoProviderStatus,
  testSsoProvider,
  updateSsoProvider,
  type CreateSsoProviderInput,
  type ListSsoProvidersInput,
  type SsoProviderStatusChange,
  type UpdateSsoProviderInput,
} from '../src/services/sso-providers.js';

const SsoProviderObject = objectType('SsoProvider', SsoProviderViewSchema);
const SsoProviderPage = objectType('SsoProviderPage', pageSchema(SsoProviderViewSchema, 'SsoProviderPage'));
const SsoPresetObject = objectType('SsoPreset', SsoPresetSchema);
const SsoCheckObject = objectType('SsoCheck', SsoCheckSchema);
const SsoProviderTestResultObject = objectType('SsoProviderTestResult', SsoProviderTestResultSchema);
const SsoLinkStartObject = objectType('SsoLinkStart', SsoLinkStartSchema);
const SsoProviderStatusArgs = argsType('SsoProviderStatusArgs', SsoProviderStatusInput);
const SsoProviderListArgs = argsType('SsoProviderListArgs', ListSsoProvidersQuery);
const CreateSsoProviderInput = inputType('CreateSsoProviderInput', CreateSsoProviderSchema);
const UpdateSsoProviderInput = inputType('UpdateSsoProviderInput', UpdateSsoProviderSchema);

@Resolver()
export class SsoResolver {
  @Query(() => [SsoPresetObject])
  ssoPresets(@Ctx() { ctx }: GraphqlContext) {
    return listSsoPresets(ctx);
  }

  @Query(() => SsoProviderPage)
  ssoProviders(@Ctx() { ctx }: GraphqlContext, @Args(() => SsoProviderListArgs) args: ListSsoProvidersInput) {
    return listSsoProviders(ctx, args);
  }

  @Query(() => SsoProviderObject)
  ssoProvider(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string) {
    return getSsoProvider(ctx, id);
  }

  @Query(() => SsoCheckObject, { description: 'Public: whether the organization signs in through SSO.' })
  ssoCheck(@Ctx() { ctx }: GraphqlContext, @Arg('orgId', () => ID) orgId: string) {
    return checkSso(ctx, orgId);
  }

  @Mutation(() => SsoProviderObject)
  createSsoProvider(@Ctx() { ctx }: GraphqlContext, @Arg('input', () => CreateSsoProviderInput) input: CreateSsoProviderInput) {
    return createSsoProvider(ctx, input);
  }

  @Mutation(() => SsoProviderObject)
  updateSsoProvider(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string, @Arg('input', () => UpdateSsoProviderInput) input: UpdateSsoProviderInput) {
    return updateSsoProvider(ctx, id, input);
  }

  @Mutation(() => Boolean, { description: 'Deletes the provider with its login sessions and identity links.' })
  async deleteSsoProvider(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string): Promise<boolean> {
    await deleteSsoProvider(ctx, id);
    return true;
  }

  @Mutation(() => SsoProviderObject)
  setSsoProviderStatus(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string, @Args(() => SsoProviderStatusArgs) { status }: SsoProviderStatusChange) {
    return setSsoProviderStatus(ctx, id, { status });
  }

  @Mutation(() => SsoProviderTestResultObject)
  testSsoProvider(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string) {
    return testSsoProvider(ctx, id);
  }

  @Mutation(() => SsoLinkStartObject, { description: "Links the signed-in account to its identity at the organization's IdP (user sessions only)." })
  startSsoLink(
    @Ctx() { ctx }: GraphqlContext,
    @Arg('orgId', () => ID) orgId: string,
    @Arg('redirect', () => String, { nullable: true, description: 'a path on the dashboard to return to' }) redirect?: string | null,
  ) {
    return startSsoLink(ctx, orgId, { redirect });
  }
}
