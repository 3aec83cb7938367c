// OIDC login (authorization code + PKCE S256), spec rules 2-9: state, nonce and verifier stored server-side,
// the state bound to the browser by a signed cookie, the callback checked and the code exchanged.
import type { EntityManager } from '@mikro-orm/postgresql';
import { SsoProvider, SsoSession } from '../../entities/sso.js';
import type { RequestContext } from '../auth/context.js';
import { buildAuthorizationUrl, completeAuthorization, createLoginSecrets, type OidcClientSettings } from '../auth/oidc-toolkit.js';
import { skipAuthorization } from '../auth/policy.js';
import { badRequest } from '../errors.js';
import { safeEqual } from '../secrets.js';
import {
  LOGIN_TTL_MS,
  SsoLoginError,
  failedLoginUrl,
  finishSsoLogin,
  seal,
  unseal,
  publicPath,
  type LoginCookie,
  type LoginRedirect,
  type SsoIdentityClaims,
} from './sso-accounts.js';
import { idpFetch } from './sso-providers.js';

export const STATE_COOKIE = 'service_sso_state';
export const CALLBACK_PATH = '/api/v1/sso/callback';
const COOKIE_PURPOSE = 'sso-state';

function redirectUri(ctx: RequestContext): string {
  return `${ctx.runtime.config.publicUrl}${CALLBACK_PATH}`;
}

function clientSettings(ctx: RequestContext, provider: SsoProvider): OidcClientSettings {
  const required = ['issuer', 'clientId', 'clientSecret', 'authorizationUrl', 'tokenUrl', 'jwksUrl'] as const;
  const missing = required.filter((k) => !provider[k]);
  if (missing.length) throw badRequest('Provider is not fully configured', { missing });
  return {
    issuer: provider.issuer!,
    clientId: provider.clientId!,
    clientSecret: ctx.runtime.secrets.decrypt(provider.clientSecret!),
    authorizationUrl: provider.authorizationUrl!,
    tokenUrl: provider.tokenUrl!,
    userInfoUrl: provider.userInfoUrl,
    jwksUrl: provider.jwksUrl!,
    scopes: provider.scopes ?? 'openid profile email',
  };
}

/** Rules 2-4: a session row for 10 minutes, the signed state cookie, and the IdP's authorization URL. */
function stateCookie(ctx: RequestContext, value: string | null): LoginCookie {
  const { isProduction } = ctx.runtime.config;
  return { name: STATE_COOKIE, value, path: publicPath(ctx, CALLBACK_PATH), maxAgeMs: LOGIN_TTL_MS, secure: isProduction, sameSite: 'lax' };
}

export async function startOidcLogin(ctx: RequestContext, provider: SsoProvider, redirectPath: string): Promise<LoginRedirect> {
  const settings = clientSettings(ctx, provider);
  const secrets = createLoginSecrets();
  const createdAt = new Date();
  ctx.em.create(SsoSession, {
    providerId: provider.id,
    state: secrets.state,
    nonce: secrets.nonce,
    codeVerifier: secrets.codeVerifier,
    redirectPath,
    createdAt,
    expiresAt: new Date(createdAt.getTime() + LOGIN_TTL_MS),
  });
  await ctx.em.flush();
  return {
    url: buildAuthorizationUrl(settings, { redirectUri: redirectUri(ctx), ...secrets }),
    cookie: stateCookie(ctx, seal(ctx, COOKIE_PURPOSE, secrets.state)),
  };
}

/** Deletes and returns the session of `state` if it has not expired: one statement, so a state is good once. */
async function consumeSession(em: EntityManager, state: string): Promise<{ provider_id: string; nonce: string; code_verifier: string; redirect_path: string } | null> {
  const rows = (await em.execute(
    `delete from sso_session where state = ? and expires_at > now() returning provider_id, nonce, code_verifier, redirect_path`,
    [state],
  )) as { provider_id: string; nonce: string; code_verifier: string; redirect_path: string }[];
  return rows[0] ?? null;
}

/** Rule 9: claims named by the attribute mapping; `groups` kept only as strings. */
function mapClaims(provider: SsoProvider, subject: string, claims: Record<string, unknown>, userInfo: Record<string, unknown> | null): Omit<SsoIdentityClaims, 'idpTokens'> {
  const mapping = provider.attributeMapping ?? { email: 'email', name: 'name' };
  const text = (claim: string | undefined) => {
    const value = claim === undefined ? undefined : claims[claim];
    return typeof value === 'string' && value.trim() ? value.trim() : null;
  };
  const rawGroups = mapping.groups === undefined ? undefined : claims[mapping.groups];
  const groups = Array.isArray(rawGroups) ? rawGroups.filter((g): g is string => typeof g === 'string') : typeof rawGroups === 'string' ? [rawGroups] : [];
  return {
    externalId: subject,
    email: text(mapping.email),
    // email_verified speaks about the `email` claim only.
    emailVerified: mapping.email === 'email' && typeof claims.email_verified === 'boolean' ? claims.email_verified : null,
    name: text(mapping.name),
    firstName: text(mapping.firstName),
    lastName: text(mapping.lastName),
    groups,
    profile: userInfo ?? claims,
  };
}

/**
 * `GET /sso/callback`: where to send the browser (the state cookie is deleted); never throws. The state is
 * compared with the cookie before anything else, so a callback from another browser cannot spend the real
 * browser's session.
 */
export async function completeOidcLogin(ctx: RequestContext, input: OidcCallback): Promise<LoginRedirect> {
  skipAuthorization(ctx, 'SSO callback: the state cookie and the IdP response are the credentials');
  return { url: await callbackTarget(ctx, input), cookie: stateCookie(ctx, null) };
}

interface OidcCallback {
  /** path and query the browser requested */
  originalUrl: string;
  state: string | undefined;
  cookie: string | undefined;
}

async function callbackTarget(ctx: RequestContext, input: OidcCallback): Promise<string> {
  let provider: SsoProvider | null = null;
  try {
    const cookieState = unseal(ctx, COOKIE_PURPOSE, input.cookie);
    if (!cookieState || !input.state || !safeEqual(cookieState, input.state)) throw new SsoLoginError('session_expired', 'state does not match the cookie');
    const session = await consumeSession(ctx.em, input.state);
    if (!session) throw new SsoLoginError('session_expired');
    provider = await ctx.em.findOne(SsoProvider, { id: session.provider_id, type: 'oidc', status: 'active' });
    if (!provider) throw new Error('provider is no longer active');

    const callbackUrl = new URL(input.originalUrl, ctx.runtime.config.publicUrl).href;
    const result = await completeAuthorization(
      clientSettings(ctx, provider),
      { callbackUrl, expectedState: input.state, expectedNonce: session.nonce, codeVerifier: session.code_verifier, redirectUri: redirectUri(ctx) },
      idpFetch(ctx.runtime.config),
    );
    const claims = mapClaims(provider, result.subject, result.claims, result.userInfo);
    return await finishSsoLogin(ctx, provider, { ...claims, idpTokens: result.tokens }, session.redirect_path);
  } catch (error) {
    return failedLoginUrl(ctx, error, provider);
  }
}
