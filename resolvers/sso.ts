import { ID } from 'type-graphql';
import { arg, args, id, input, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
import { SsoCheckSchema, checkSso } from '../src/services/sso/sso.js';
import { SsoLinkStartSchema, startSsoLink } from '../src/services/sso/sso-links.js';
import {
  CreateSsoProviderSchema,
  ListSsoProvidersQuery,
  SsoProviderPageSchema,
  SsoProviderTestResultSchema,
  SsoProviderStatusInput,
  SsoProviderViewSchema,
  UpdateSsoProviderSchema,
  createSsoProvider,
  deleteSsoProvider,
  getSsoProvider,
  listSsoProviders,
  setSsoProviderStatus,
  testSsoProvider,
  updateSsoProvider,
} from '../src/services/sso/sso-providers.js';
import { SsoPresetSchema, listSsoPresets } from '../src/services/sso/sso-presets.js';
import { pageConnectionOf, paged } from './shared.js';

export const SsoResolver = operations({
  ssoCheck: query(SsoCheckSchema, [arg('orgId', ID, { description: 'The organization signing in.' })], checkSso, { description: 'Public: whether the organization signs in through SSO.' }),
  // Before ssoPresets: a type several schemas share takes its description from the first to derive it (SsoAttributeMapping: the provider view's).
  ssoProviders: query(pageConnectionOf(SsoProviderPageSchema), [pageArgs('SsoProviderListArgs', ListSsoProvidersQuery)], paged(listSsoProviders), {
    description: 'Identity providers of an organization.',
  }),
  ssoProvider: query(SsoProviderViewSchema, [id], getSsoProvider, { description: 'One identity provider (never its client secret).' }),
  ssoPresets: query([SsoPresetSchema], [], listSsoPresets, { description: 'Ready-made configurations for common identity providers (a short fixed list).' }),
  createSsoProvider: mutation(SsoProviderViewSchema, [input('CreateSsoProviderInput', CreateSsoProviderSchema)], createSsoProvider, {
    description: 'Adds an identity provider to an organization, inactive until setSsoProviderStatus.',
  }),
  updateSsoProvider: mutation(SsoProviderViewSchema, [id, input('UpdateSsoProviderInput', UpdateSsoProviderSchema)], updateSsoProvider, { description: 'Changes an identity provider’s configuration.' }),
  deleteSsoProvider: mutation(Boolean, [id], deleteSsoProvider, { description: 'Deletes the provider with its login sessions and identity links.' }),
  setSsoProviderStatus: mutation(SsoProviderViewSchema, [id, args('SsoProviderStatusArgs', SsoProviderStatusInput)], (ctx, provider, { status }) => setSsoProviderStatus(ctx, provider, { status }), {
    description: 'Activates, tests or deactivates an identity provider.',
  }),
  testSsoProvider: mutation(SsoProviderTestResultSchema, [id], testSsoProvider, { description: 'Checks a provider’s configuration (OIDC discovery, SAML certificate) without signing anyone in.' }),
  startSsoLink: mutation(
    SsoLinkStartSchema,
    [arg('orgId', ID, { description: 'The organization whose identity provider to link.' }), arg('redirect', String, { nullable: true, description: 'a path on the dashboard to return to' })],
    (ctx, orgId, redirect) => startSsoLink(ctx, orgId, { redirect }),
    { description: "Links the signed-in account to its identity at the organization's IdP (user sessions only)." },
  ),
});
