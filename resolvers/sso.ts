import { ID } from 'type-graphql';
import { arg, args, id, input, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
import * as sso from '../src/services/sso/sso.js';
import * as ssoLinks from '../src/services/sso/sso-links.js';
import * as ssoProviders from '../src/services/sso/sso-providers.js';
import * as ssoPresets from '../src/services/sso/sso-presets.js';
import { pageConnectionOf, paged } from './shared.js';

export const SsoResolver = operations({
  ssoCheck: query(sso.SsoCheckSchema, [arg('orgId', ID, { description: 'The organization signing in.' })], sso.checkSso, { description: 'Public: whether the organization signs in through SSO.' }),
  // Before ssoPresets: a type several schemas share takes its description from the first to derive it (SsoAttributeMapping: the provider view's).
  ssoProviders: query(pageConnectionOf(ssoProviders.SsoProviderPageSchema), [pageArgs('SsoProviderListArgs', ssoProviders.ListSsoProvidersQuery)], paged(ssoProviders.listSsoProviders), {
    description: 'Identity providers of an organization.',
  }),
  ssoProvider: query(ssoProviders.SsoProviderViewSchema, [id], ssoProviders.getSsoProvider, { description: 'One identity provider (never its client secret).' }),
  ssoPresets: query([ssoPresets.SsoPresetSchema], [], ssoPresets.listSsoPresets, { description: 'Ready-made configurations for common identity providers (a short fixed list).' }),
  createSsoProvider: mutation(ssoProviders.SsoProviderViewSchema, [input('CreateSsoProviderInput', ssoProviders.CreateSsoProviderSchema)], ssoProviders.createSsoProvider, {
    description: 'Adds an identity provider to an organization, inactive until setSsoProviderStatus.',
  }),
  updateSsoProvider: mutation(ssoProviders.SsoProviderViewSchema, [id, input('UpdateSsoProviderInput', ssoProviders.UpdateSsoProviderSchema)], ssoProviders.updateSsoProvider, { description: 'Changes an identity provider’s configuration.' }),
  deleteSsoProvider: mutation(Boolean, [id], ssoProviders.deleteSsoProvider, { description: 'Deletes the provider with its login sessions and identity links.' }),
  setSsoProviderStatus: mutation(ssoProviders.SsoProviderViewSchema, [id, args('SsoProviderStatusArgs', ssoProviders.SsoProviderStatusInput)], (ctx, provider, { status }) => ssoProviders.setSsoProviderStatus(ctx, provider, { status }), {
    description: 'Activates, tests or deactivates an identity provider.',
  }),
  testSsoProvider: mutation(ssoProviders.SsoProviderTestResultSchema, [id], ssoProviders.testSsoProvider, { description: 'Checks a provider’s configuration (OIDC discovery, SAML certificate) without signing anyone in.' }),
  startSsoLink: mutation(
    ssoLinks.SsoLinkStartSchema,
    [arg('orgId', ID, { description: 'The organization whose identity provider to link.' }), arg('redirect', String, { nullable: true, description: 'a path on the dashboard to return to' })],
    (ctx, orgId, redirect) => ssoLinks.startSsoLink(ctx, orgId, { redirect }),
    { description: "Links the signed-in account to its identity at the organization's IdP (user sessions only)." },
  ),
});
