import type { Request, Response } from 'express';
import { z } from 'zod';
import type { OpenApiRegistry } from '../src/http/openapi.js';
import { listSchema } from '../src/pagination.js';
import type { RateLimit } from '../src/http/rate-limit.js';
import { LoginQuery, SsoCheckSchema, checkSso, startSsoLogin } from '../src/services/sso/sso.js';
import { ExchangeInput, redeemExchangeCode, type LoginRedirect } from '../src/services/sso/sso-accounts.js';
import { SsoLinkInput, SsoLinkStartSchema, openSsoLink, startSsoLink } from '../src/services/sso/sso-links.js';
import { STATE_COOKIE, completeOidcLogin } from '../src/services/sso/sso-oidc.js';
import {
  CreateSsoProviderSchema,
  ListSsoProvidersQuery,
  SsoProviderPageSchema,
  SsoProviderTestResultSchema,
  SsoProviderViewSchema,
  SsoProviderStatusInput,
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
import { SAML_STATE_COOKIE, completeSamlLogin, samlMetadata } from '../src/services/sso/sso-saml.js';
import { RestRouter, pathId } from './router.js';

function readCookie(req: Request, name: string): string | undefined {
  for (const pair of (req.get('cookie') ?? '').split(';')) {
    const eq = pair.indexOf('=');
    if (eq > 0 && pair.slice(0, eq).trim() === name) {
      try {
        return decodeURIComponent(pair.slice(eq + 1).trim());
      } catch {
        return undefined;
      }
    }
  }
  return undefined;
}

/** Sets (or deletes) the login's binding cookie, then redirects. */
function redirectWith(res: Response, status: number, { url, cookie }: LoginRedirect): void {
  if (cookie) {
    const options = { httpOnly: true, sameSite: cookie.sameSite, secure: cookie.secure, path: cookie.path };
    if (cookie.value === null) res.clearCookie(cookie.name, options);
    else res.cookie(cookie.name, cookie.value, { ...options, maxAge: cookie.maxAgeMs });
  }
  res.redirect(status, url);
}

const formField = (req: Request, name: string): string | undefined => {
  const value = (req.body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : undefined;
};

/** SSO providers (JWT or API key) and the public login flow: OIDC callback, SAML ACS and metadata, code exchange. */
export function ssoRouter(openapi: OpenApiRegistry): RestRouter {
  const r = new RestRouter(openapi, 'Single sign-on');
  // The login routes, per client IP and route: one login passes through several.
  const limit: RateLimit = { name: 'sso', perMinute: (config) => config.ssoRateLimitPerMinute };
  const provider = { id: pathId('SSO provider') };
  const organization = { orgId: pathId('Organization') };

  r.get('/sso/presets', { summary: 'Provider presets with their default scopes and attribute mappings', response: listSchema(SsoPresetSchema, 'SsoPresetList') }, async (ctx) => ({ data: listSsoPresets(ctx) }));
  r.get('/sso/providers', { summary: "An organization's SSO providers", query: ListSsoProvidersQuery, response: SsoProviderPageSchema }, (ctx, { query }) => listSsoProviders(ctx, query));
  r.get('/sso/providers/:id', { summary: 'One SSO provider (never its client secret)', params: provider, response: SsoProviderViewSchema }, (ctx, { params }) => getSsoProvider(ctx, params.id));
  r.post('/sso/providers', { summary: 'Create an SSO provider (status inactive)', body: CreateSsoProviderSchema, status: 201, response: SsoProviderViewSchema }, (ctx, { body }) =>
    createSsoProvider(ctx, body),
  );
  r.patch('/sso/providers/:id', { summary: 'Change an SSO provider', params: provider, body: UpdateSsoProviderSchema, response: SsoProviderViewSchema }, (ctx, { params, body }) =>
    updateSsoProvider(ctx, params.id, body),
  );
  r.delete('/sso/providers/:id', { summary: 'Delete an SSO provider with its login sessions and identity links', params: provider, status: 204 }, (ctx, { params }) =>
    deleteSsoProvider(ctx, params.id),
  );
  r.post('/sso/providers/:id/status', { summary: 'Set the status: active, inactive or testing', params: provider, body: SsoProviderStatusInput, response: SsoProviderViewSchema }, (ctx, { params, body }) =>
    setSsoProviderStatus(ctx, params.id, body),
  );
  r.post('/sso/providers/:id/test', { summary: 'Check the configuration: OIDC discovery, or the SAML settings', params: provider, response: SsoProviderTestResultSchema }, (ctx, { params }) =>
    testSsoProvider(ctx, params.id),
  );

  // Any text: an id that names no organization, malformed or not, answers ssoEnabled false.
  r.get('/sso/check/:orgId', { summary: 'Whether an organization signs in through SSO', params: { orgId: z.string() }, public: true, limit, response: SsoCheckSchema }, (ctx, { params }) => checkSso(ctx, params.orgId));
  r.get('/sso/login/:orgId', { summary: "Start an SSO login: redirect to the organization's IdP", params: organization, query: LoginQuery, public: true, status: 302, limit }, async (ctx, { params, query, res }) =>
    redirectWith(res, 302, await startSsoLogin(ctx, params.orgId, query)),
  );
  r.get('/sso/callback', { summary: 'OIDC redirect URI: finishes the login, redirects with #ssoCode or ?error', public: true, status: 302, limit }, async (ctx, { req, res }) => {
    const state = typeof req.query.state === 'string' ? req.query.state : undefined;
    redirectWith(res, 302, await completeOidcLogin(ctx, { originalUrl: req.originalUrl, state, cookie: readCookie(req, STATE_COOKIE) }));
  });
  r.post('/sso/link/:orgId', { summary: "Link the signed-in account to its identity at the organization's IdP: a URL to open in the browser", params: organization, body: SsoLinkInput, limit, response: SsoLinkStartSchema }, (ctx, { params, body }) =>
    startSsoLink(ctx, params.orgId, body),
  );
  r.get('/sso/link', { summary: 'Open a link started by POST /sso/link/:orgId (once, in the browser): redirect to the IdP', public: true, status: 302, limit }, async (ctx, { req, res }) =>
    redirectWith(res, 302, await openSsoLink(ctx, typeof req.query.token === 'string' ? req.query.token : undefined)),
  );
  r.post('/sso/exchange', { summary: 'Trade the one-time #ssoCode for an access and refresh token', body: ExchangeInput, public: true, limit }, (ctx, { body }) =>
    redeemExchangeCode(ctx, body),
  );

  r.get('/sso/saml/metadata', { summary: 'SAML service-provider metadata (XML)', public: true }, async (ctx, { res }) => {
    res.type('application/samlmetadata+xml').send(await samlMetadata(ctx));
  });
  r.post('/sso/saml/acs', { summary: 'SAML assertion consumer service (HTTP-POST binding)', public: true, status: 303, limit }, async (ctx, { req, res }) => {
    const post = { samlResponse: formField(req, 'SAMLResponse'), relayState: formField(req, 'RelayState'), cookie: readCookie(req, SAML_STATE_COOKIE) };
    redirectWith(res, 303, await completeSamlLogin(ctx, post));
  });

  return r;
}
