import { Arg, Args, ArgsType, Ctx, Field, ID, InputType, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import type { GraphqlContext } from '../src/graphql/context.js';
import { checkSso } from '../src/services/sso.js';
import { startSsoLink } from '../src/services/sso-links.js';
import {
  createSsoProvider,
  deleteSsoProvider,
  getSsoProvider,
  listSsoPresets,
  listSsoProviders,
  setSsoProviderStatus,
  testSsoProvider,
  updateSsoProvider,
  type SsoPreset,
  type SsoProviderView,
} from '../src/services/sso-providers.js';
import { PageArgs, PageOf } from './shared.js';

@ObjectType('SsoAttributeMapping', { description: 'Which IdP claim holds each user field.' })
class SsoAttributeMappingObject {
  @Field(() => String)
  email!: string;

  @Field(() => String)
  name!: string;

  @Field(() => String, { nullable: true, description: 'used when the name claim is missing' })
  firstName?: string;

  @Field(() => String, { nullable: true, description: 'combined with firstName into a display name' })
  lastName?: string;

  @Field(() => String, { nullable: true, description: 'a claim holding an array of strings' })
  groups?: string;
}

@InputType('SsoAttributeMappingInput')
class SsoAttributeMappingInput {
  @Field(() => String)
  email!: string;

  @Field(() => String)
  name!: string;

  @Field(() => String, { nullable: true })
  firstName?: string | null;

  @Field(() => String, { nullable: true })
  lastName?: string | null;

  @Field(() => String, { nullable: true })
  groups?: string | null;
}

@ObjectType('SsoProvider', { description: 'An organization identity provider. The client secret is write-only: see hasClientSecret.' })
class SsoProviderObject implements SsoProviderView {
  @Field(() => ID)
  id!: string;

  @Field(() => ID)
  orgId!: string;

  @Field(() => String)
  name!: string;

  @Field(() => String, { description: 'oidc or saml' })
  type!: SsoProviderView['type'];

  @Field(() => String, { description: 'inactive, testing or active; only active providers are used for login' })
  status!: SsoProviderView['status'];

  @Field(() => String, { nullable: true })
  preset!: string | null;

  @Field(() => String, { nullable: true })
  issuer!: string | null;

  @Field(() => String, { nullable: true })
  clientId!: string | null;

  @Field(() => Boolean)
  hasClientSecret!: boolean;

  @Field(() => String, { nullable: true })
  authorizationUrl!: string | null;

  @Field(() => String, { nullable: true })
  tokenUrl!: string | null;

  @Field(() => String, { nullable: true })
  userInfoUrl!: string | null;

  @Field(() => String, { nullable: true })
  jwksUrl!: string | null;

  @Field(() => String, { nullable: true })
  scopes!: string | null;

  @Field(() => SsoAttributeMappingObject, { nullable: true })
  attributeMapping!: SsoAttributeMappingObject | null;

  @Field(() => Boolean)
  autoProvision!: boolean;

  @Field(() => ID, { nullable: true })
  defaultRoleId!: string | null;

  @Field(() => String, { nullable: true, description: 'comma-separated; null allows every domain' })
  allowedDomains!: string | null;

  @Field(() => Boolean)
  enforceSSO!: boolean;

  @Field(() => String, { nullable: true, description: "SAML: the IdP's entity id" })
  entityId!: string | null;

  @Field(() => String, { nullable: true, description: "SAML: the IdP's SSO URL" })
  ssoUrl!: string | null;

  @Field(() => String, { nullable: true, description: "SAML: the IdP's signing certificate (PEM)" })
  certificate!: string | null;

  @Field(() => Boolean)
  allowIdpInitiated!: boolean;

  @Field(() => Boolean)
  forceAuthn!: boolean;

  @Field(() => String, { nullable: true })
  nameIdFormat!: string | null;

  @Field(() => ID, { nullable: true })
  createdBy!: string | null;

  @Field(() => String)
  createdAt!: string;

  @Field(() => String)
  updatedAt!: string;
}

const SsoProviderPage = PageOf(SsoProviderObject, 'SsoProviderPage');

@ObjectType('SsoPreset')
class SsoPresetObject implements SsoPreset {
  @Field(() => ID)
  id!: string;

  @Field(() => String)
  name!: string;

  @Field(() => String)
  type!: SsoPreset['type'];

  @Field(() => String, { nullable: true })
  issuerTemplate!: string | null;

  @Field(() => String, { nullable: true })
  ssoUrlTemplate!: string | null;

  @Field(() => String, { nullable: true })
  scopes!: string | null;

  @Field(() => SsoAttributeMappingObject)
  attributeMapping!: SsoAttributeMappingObject;
}

@ObjectType('SsoCheckProvider')
class SsoCheckProviderObject {
  @Field(() => ID)
  id!: string;

  @Field(() => String)
  name!: string;

  @Field(() => String)
  type!: string;
}

@ObjectType('SsoCheck', { description: 'Whether an organization signs in through SSO; the other fields are null when it does not.' })
class SsoCheckObject {
  @Field(() => Boolean)
  ssoEnabled!: boolean;

  @Field(() => SsoCheckProviderObject, { nullable: true })
  provider?: SsoCheckProviderObject;

  @Field(() => Boolean, { nullable: true })
  enforceSSO?: boolean;

  @Field(() => String, { nullable: true })
  loginUrl?: string;
}

@ObjectType('SsoOidcEndpoints')
class SsoOidcEndpointsObject {
  @Field(() => String)
  issuer!: string;

  @Field(() => String)
  authorizationUrl!: string;

  @Field(() => String)
  tokenUrl!: string;

  @Field(() => String, { nullable: true })
  userInfoUrl!: string | null;

  @Field(() => String)
  jwksUrl!: string;
}

@ObjectType('SsoSamlTest')
class SsoSamlTestObject {
  @Field(() => String)
  entityId!: string;

  @Field(() => String)
  ssoUrl!: string;

  @Field(() => String)
  certificateExpiresAt!: string;
}

@ObjectType('SsoProviderTestResult', { description: 'A failed test is an error (OIDC discovery failed, Provider is not fully configured).' })
class SsoProviderTestResultObject {
  @Field(() => Boolean)
  success!: boolean;

  @Field(() => String)
  type!: string;

  @Field(() => SsoOidcEndpointsObject, { nullable: true, description: 'OIDC: what discovery found (not stored)' })
  endpoints!: SsoOidcEndpointsObject | null;

  @Field(() => SsoSamlTestObject, { nullable: true })
  saml!: SsoSamlTestObject | null;
}

@ObjectType('SsoLinkStart', { description: 'Open url in the browser: it starts the IdP login that links the signed-in account.' })
class SsoLinkStartObject {
  @Field(() => String, { description: 'single-use, valid for two minutes' })
  url!: string;
}

// Mirror the zod inputs in src/services/sso-providers.ts, which parse them again. The shared base is not
// reachable from any operation, so it stays out of the schema.
@InputType('SsoProviderFieldsInput')
class SsoProviderFieldsInput {
  @Field(() => Boolean, { nullable: true })
  autoProvision?: boolean;

  @Field(() => ID, { nullable: true })
  defaultRoleId?: string | null;

  @Field(() => String, { nullable: true })
  allowedDomains?: string | null;

  @Field(() => Boolean, { nullable: true })
  enforceSSO?: boolean;

  @Field(() => String, { nullable: true })
  issuer?: string | null;

  @Field(() => String, { nullable: true })
  clientId?: string | null;

  @Field(() => String, { nullable: true, description: 'write-only' })
  clientSecret?: string | null;

  @Field(() => String, { nullable: true })
  authorizationUrl?: string | null;

  @Field(() => String, { nullable: true })
  tokenUrl?: string | null;

  @Field(() => String, { nullable: true })
  userInfoUrl?: string | null;

  @Field(() => String, { nullable: true })
  jwksUrl?: string | null;

  @Field(() => String, { nullable: true })
  scopes?: string;

  @Field(() => SsoAttributeMappingInput, { nullable: true })
  attributeMapping?: SsoAttributeMappingInput;

  @Field(() => String, { nullable: true })
  entityId?: string | null;

  @Field(() => String, { nullable: true })
  ssoUrl?: string | null;

  @Field(() => String, { nullable: true, description: 'PEM, with or without the BEGIN/END lines' })
  certificate?: string | null;

  @Field(() => String, { nullable: true, description: 'IdP metadata; entityId, ssoUrl and certificate are read from it' })
  metadataXml?: string;

  @Field(() => Boolean, { nullable: true })
  allowIdpInitiated?: boolean;

  @Field(() => Boolean, { nullable: true })
  forceAuthn?: boolean;

  @Field(() => String, { nullable: true })
  nameIdFormat?: string | null;
}

@InputType('UpdateSsoProviderInput')
class UpdateSsoProviderGqlInput extends SsoProviderFieldsInput {
  @Field(() => String, { nullable: true })
  name?: string;
}

@InputType('CreateSsoProviderInput')
class CreateSsoProviderGqlInput extends SsoProviderFieldsInput {
  @Field(() => ID, { nullable: true, description: 'organization callers: their own; partner and platform callers: required' })
  orgId?: string;

  @Field(() => String)
  name!: string;

  @Field(() => String, { description: 'oidc or saml' })
  type!: 'oidc' | 'saml';

  @Field(() => String, { nullable: true, description: 'a preset id from ssoPresets' })
  preset?: string;
}

@ArgsType()
class SsoProviderListArgs extends PageArgs {
  @Field(() => ID, { nullable: true, description: 'required for partner and platform callers' })
  orgId?: string;
}

@Resolver()
export class SsoResolver {
  @Query(() => [SsoPresetObject])
  ssoPresets(@Ctx() { ctx }: GraphqlContext) {
    return listSsoPresets(ctx);
  }

  @Query(() => SsoProviderPage)
  ssoProviders(@Ctx() { ctx }: GraphqlContext, @Args(() => SsoProviderListArgs) args: SsoProviderListArgs) {
    return listSsoProviders(ctx, { ...args });
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
  createSsoProvider(@Ctx() { ctx }: GraphqlContext, @Arg('input', () => CreateSsoProviderGqlInput) input: CreateSsoProviderGqlInput) {
    return createSsoProvider(ctx, { ...input });
  }

  @Mutation(() => SsoProviderObject)
  updateSsoProvider(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string, @Arg('input', () => UpdateSsoProviderGqlInput) input: UpdateSsoProviderGqlInput) {
    return updateSsoProvider(ctx, id, { ...input });
  }

  @Mutation(() => Boolean, { description: 'Deletes the provider with its login sessions and identity links.' })
  async deleteSsoProvider(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string): Promise<boolean> {
    await deleteSsoProvider(ctx, id);
    return true;
  }

  @Mutation(() => SsoProviderObject)
  setSsoProviderStatus(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string, @Arg('status', () => String, { description: 'active, inactive or testing' }) status: string) {
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
