import type { Request, Response } from 'express';
import type { OpenApiRegistry } from '../src/http/openapi.js';
import { rateLimit } from '../src/http/rate-limit.js';
import { LoginQuery, checkSso, startSsoLogin } from '../src/services/sso.js';
import { ExchangeInput, redeemExchangeCode, type LoginRedirect } from '../src/services/sso-accounts.js';
import { SsoLinkInput, openSsoLink, startSsoLink } from '../src/services/sso-links.js';
import { STATE_COOKIE, completeOidcLogin } from '../src/services/sso-oidc.js';
import {
  CreateSsoProviderInput,
  ListSsoProvidersQuery,
  SsoProviderStatusInput,
  UpdateSsoProviderInput,
  createSsoProvider,
  deleteSsoProvider,
  getSsoProvider,
  listSsoPresets,
  listSsoProviders,
  setSsoProviderStatus,
  testSsoProvider,
  updateSsoProvider,
} from '../src/services/sso-providers.js';
import { SAML_STATE_COOKIE, completeSamlLogin, samlMetadata } from '../src/services/sso-saml.js';
import { RestRouter } from './router.js';

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

  // Public login routes: per client IP and route (one login passes through several), per instance.
  r.router.use(
    ['/sso/check', '/sso/login', '/sso/link', '/sso/callback', '/sso/saml/acs', '/sso/exchange'],
    rateLimit({
      windowMs: 60_000,
      limit: (req) => req.ctx.runtime.config.ssoRateLimitPerMinute,
      key: (req) => `${req.ip ?? 'unknown'} ${req.originalUrl.split('?')[0]!.split('/').slice(0, 5).join('/')}`,
    }),
  );

  r.get('/sso/presets', { summary: 'Provider presets with their default scopes and attribute mappings' }, async (ctx) => ({ data: listSsoPresets(ctx) }));
  r.get('/sso/providers', { summary: "An organization's SSO providers", query: ListSsoProvidersQuery }, (ctx, { query }) => listSsoProviders(ctx, query));
  r.get('/sso/providers/:id', { summary: 'One SSO provider (never its client secret)' }, (ctx, { params }) => getSsoProvider(ctx, params.id!));
  r.post('/sso/providers', { summary: 'Create an SSO provider (status inactive)', body: CreateSsoProviderInput, status: 201 }, (ctx, { body }) =>
    createSsoProvider(ctx, body),
  );
  r.patch('/sso/providers/:id', { summary: 'Change an SSO provider', body: UpdateSsoProviderInput }, (ctx, { params, body }) =>
    updateSsoProvider(ctx, params.id!, body),
  );
  r.delete('/sso/providers/:id', { summary: 'Delete an SSO provider with its login sessions and identity links', status: 204 }, (ctx, { params }) =>
    deleteSsoProvider(ctx, params.id!),
  );
  r.post('/sso/providers/:id/status', { summary: 'Set the status: active, inactive or testing', body: SsoProviderStatusInput }, (ctx, { params, body }) =>
    setSsoProviderStatus(ctx, params.id!, body),
  );
  r.post('/sso/providers/:id/test', { summary: 'Check the configuration: OIDC discovery, or the SAML settings' }, (ctx, { params }) =>
    testSsoProvider(ctx, params.id!),
  );

  r.get('/sso/check/:orgId', { summary: 'Whether an organization signs in through SSO', public: true }, (ctx, { params }) => checkSso(ctx, params.orgId!));
  r.get('/sso/login/:orgId', { summary: "Start an SSO login: redirect to the organization's IdP", query: LoginQuery, public: true, status: 302 }, async (ctx, { params, query, res }) =>
    redirectWith(res, 302, await startSsoLogin(ctx, params.orgId!, query)),
  );
  r.get('/sso/callback', { summary: 'OIDC redirect URI: finishes the login, redirects with #ssoCode or ?error', public: true, status: 302 }, async (ctx, { req, res }) => {
    const state = typeof req.query.state === 'string' ? req.query.state : undefined;
    redirectWith(res, 302, await completeOidcLogin(ctx, { originalUrl: req.originalUrl, state, cookie: readCookie(req, STATE_COOKIE) }));
  });
  r.post('/sso/link/:orgId', { summary: "Link the signed-in account to its identity at the organization's IdP: a URL to open in the browser", body: SsoLinkInput }, (ctx, { params, body }) =>
    startSsoLink(ctx, params.orgId!, body),
  );
  r.get('/sso/link', { summary: 'Open a link started by POST /sso/link/:orgId (once, in the browser): redirect to the IdP', public: true, status: 302 }, async (ctx, { req, res }) =>
    redirectWith(res, 302, await openSsoLink(ctx, typeof req.query.token === 'string' ? req.query.token : undefined)),
  );
  r.post('/sso/exchange', { summary: 'Trade the one-time #ssoCode for an access and refresh token', body: ExchangeInput, public: true }, (ctx, { body }) =>
    redeemExchangeCode(ctx, body),
  );

  r.get('/sso/saml/metadata', { summary: 'SAML service-provider metadata (XML)', public: true }, async (ctx, { res }) => {
    res.type('application/samlmetadata+xml').send(await samlMetadata(ctx));
  });
  r.post('/sso/saml/acs', { summary: 'SAML assertion consumer service (HTTP-POST binding)', public: true, status: 303 }, async (ctx, { req, res }) => {
    const post = { samlResponse: formField(req, 'SAMLResponse'), relayState: formField(req, 'RelayState'), cookie: readCookie(req, SAML_STATE_COOKIE) };
    redirectWith(res, 303, await completeSamlLogin(ctx, post));
  });

  return r;
}
