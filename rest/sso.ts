import type { Request, Response } from 'express';
import { z } from 'zod';
import type { OpenApiRegistry } from '../src/http/openapi.js';
import { listSchema } from '../src/pagination.js';
import type { RateLimit } from '../src/http/rate-limit.js';
import * as sso from '../src/services/sso/sso.js';
import * as ssoAccounts from '../src/services/sso/sso-accounts.js';
import * as ssoLinks from '../src/services/sso/sso-links.js';
import * as ssoOidc from '../src/services/sso/sso-oidc.js';
import * as ssoProviders from '../src/services/sso/sso-providers.js';
import * as ssoPresets from '../src/services/sso/sso-presets.js';
import * as ssoSaml from '../src/services/sso/sso-saml.js';
import { call, pathId, RestRouter } from './router.js';

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
function redirectWith(res: Response, status: number, { url, cookie }: ssoAccounts.LoginRedirect): void {
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

  r.get('/sso/presets', { summary: 'Provider presets with their default scopes and attribute mappings', response: listSchema(ssoPresets.SsoPresetSchema, 'SsoPresetList') }, async (ctx) => ({ data: ssoPresets.listSsoPresets(ctx) }));
  r.get('/sso/providers', { summary: "An organization's SSO providers", query: ssoProviders.ListSsoProvidersQuery, response: ssoProviders.SsoProviderPageSchema }, call(ssoProviders.listSsoProviders));
  r.get('/sso/providers/:id', { summary: 'One SSO provider (never its client secret)', params: provider, response: ssoProviders.SsoProviderViewSchema }, call(ssoProviders.getSsoProvider));
  r.post('/sso/providers', { summary: 'Create an SSO provider (status inactive)', body: ssoProviders.CreateSsoProviderSchema, status: 201, response: ssoProviders.SsoProviderViewSchema }, call(ssoProviders.createSsoProvider));
  r.patch('/sso/providers/:id', { summary: 'Change an SSO provider', params: provider, body: ssoProviders.UpdateSsoProviderSchema, response: ssoProviders.SsoProviderViewSchema }, call(ssoProviders.updateSsoProvider));
  r.delete('/sso/providers/:id', { summary: 'Delete an SSO provider with its login sessions and identity links', params: provider, status: 204 }, call(ssoProviders.deleteSsoProvider));
  r.post('/sso/providers/:id/status', { summary: 'Set the status: active, inactive or testing', params: provider, body: ssoProviders.SsoProviderStatusInput, response: ssoProviders.SsoProviderViewSchema }, call(ssoProviders.setSsoProviderStatus));
  r.post('/sso/providers/:id/test', { summary: 'Check the configuration: OIDC discovery, or the SAML settings', params: provider, response: ssoProviders.SsoProviderTestResultSchema }, call(ssoProviders.testSsoProvider));

  // Any text: an id that names no organization, malformed or not, answers ssoEnabled false.
  r.get('/sso/check/:orgId', { summary: 'Whether an organization signs in through SSO', params: { orgId: z.string() }, public: true, limit, response: sso.SsoCheckSchema }, call(sso.checkSso));
  r.get('/sso/login/:orgId', { summary: "Start an SSO login: redirect to the organization's IdP", params: organization, query: sso.LoginQuery, public: true, status: 302, limit }, async (ctx, { params, query, res }) =>
    redirectWith(res, 302, await sso.startSsoLogin(ctx, params.orgId, query)),
  );
  r.get('/sso/callback', { summary: 'OIDC redirect URI: finishes the login, redirects with #ssoCode or ?error', public: true, status: 302, limit }, async (ctx, { req, res }) => {
    const state = typeof req.query.state === 'string' ? req.query.state : undefined;
    redirectWith(res, 302, await ssoOidc.completeOidcLogin(ctx, { originalUrl: req.originalUrl, state, cookie: readCookie(req, ssoOidc.STATE_COOKIE) }));
  });
  r.post('/sso/link/:orgId', { summary: "Link the signed-in account to its identity at the organization's IdP: a URL to open in the browser", params: organization, body: ssoLinks.SsoLinkInput, limit, response: ssoLinks.SsoLinkStartSchema }, call(ssoLinks.startSsoLink));
  r.get('/sso/link', { summary: 'Open a link started by POST /sso/link/:orgId (once, in the browser): redirect to the IdP', public: true, status: 302, limit }, async (ctx, { req, res }) =>
    redirectWith(res, 302, await ssoLinks.openSsoLink(ctx, typeof req.query.token === 'string' ? req.query.token : undefined)),
  );
  r.post('/sso/exchange', { summary: 'Trade the one-time #ssoCode for an access and refresh token', body: ssoAccounts.ExchangeInput, public: true, limit }, call(ssoAccounts.redeemExchangeCode));

  r.get('/sso/saml/metadata', { summary: 'SAML service-provider metadata (XML)', public: true }, async (ctx, { res }) => {
    res.type('application/samlmetadata+xml').send(await ssoSaml.samlMetadata(ctx));
  });
  r.post('/sso/saml/acs', { summary: 'SAML assertion consumer service (HTTP-POST binding)', public: true, status: 303, limit }, async (ctx, { req, res }) => {
    const post = { samlResponse: formField(req, 'SAMLResponse'), relayState: formField(req, 'RelayState'), cookie: readCookie(req, ssoSaml.SAML_STATE_COOKIE) };
    redirectWith(res, 303, await ssoSaml.completeSamlLogin(ctx, post));
  });

  return r;
}
