// OIDC login (authorization code + PKCE S256), spec rules 2-9: state, nonce and verifier stored server-side,
// the state bound to the browser by a signed cookie, the callback checked and the code exchanged.
import type { EntityManager } from '@mikro-orm/postgresql';
import { SsoProvider, SsoSession } from '../../../entities/sso.js';
import type { RequestContext } from '../../auth/context.js';
import { buildAuthorizationUrl, completeAuthorization, createLoginSecrets, pkceChallenge, type OidcClientSettings } from '../../auth/oidc-toolkit.js';
import { skipAuthorization } from '../../auth/policy.js';
import { badRequest } from '../../errors.js';
import { safeEqual } from '../../secrets.js';
import {
  LINK_START_TTL_MS,
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
import { assertBrowserUrl, idpFetch } from './sso-idp.js';

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
  assertBrowserUrl(ctx.runtime.config, 'authorizationUrl', provider.authorizationUrl);
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

function stateCookie(ctx: RequestContext, value: string | null): LoginCookie {
  const { isProduction } = ctx.runtime.config;
  return { name: STATE_COOKIE, value, path: publicPath(ctx, CALLBACK_PATH), maxAgeMs: LOGIN_TTL_MS, secure: isProduction, sameSite: 'lax' };
}

async function createSession(ctx: RequestContext, provider: SsoProvider, redirectPath: string, link: { userId: string; ttlMs: number } | null) {
  const secrets = createLoginSecrets();
  const createdAt = new Date();
  ctx.em.create(SsoSession, {
    providerId: provider.id,
    state: secrets.state,
    nonce: secrets.nonce,
    codeVerifier: secrets.codeVerifier,
    redirectPath,
    linkUserId: link?.userId ?? null,
    createdAt,
    expiresAt: new Date(createdAt.getTime() + (link?.ttlMs ?? LOGIN_TTL_MS)),
  });
  await ctx.em.flush();
  return secrets;
}

function toIdp(ctx: RequestContext, settings: OidcClientSettings, login: { state: string; nonce: string; codeChallenge: string }): LoginRedirect {
  return {
    url: buildAuthorizationUrl(settings, { redirectUri: redirectUri(ctx), ...login }),
    cookie: stateCookie(ctx, seal(ctx, COOKIE_PURPOSE, login.state)),
  };
}

/** Rules 2-4: a session row for 10 minutes, the signed state cookie, and the IdP's authorization URL. */
export async function startOidcLogin(ctx: RequestContext, provider: SsoProvider, redirectPath: string): Promise<LoginRedirect> {
  const settings = clientSettings(ctx, provider);
  return toIdp(ctx, settings, await createSession(ctx, provider, redirectPath, null));
}

/**
 * A login bound to a signed-in user who confirms a link (`POST /sso/link/:orgId`). Its state is a placeholder,
 * good for a short while, until the browser opens the link: returns that placeholder.
 */
export async function prepareOidcLink(ctx: RequestContext, provider: SsoProvider, redirectPath: string, userId: string): Promise<string> {
  clientSettings(ctx, provider);
  return (await createSession(ctx, provider, redirectPath, { userId, ttlMs: LINK_START_TTL_MS })).state;
}

/**
 * `GET /sso/link` in the browser: replaces the placeholder with the real state in the statement that finds
 * the row, so one link starts one login in one browser; null when the placeholder is unknown, spent or expired.
 */
export async function openOidcLink(ctx: RequestContext, placeholder: string): Promise<LoginRedirect | null> {
  const { state } = createLoginSecrets();
  const [row] = (await ctx.em.execute(
    `update sso_session set state = ?, expires_at = ? where state = ? and link_user_id is not null and expires_at > now() returning provider_id, nonce, code_verifier`,
    [state, new Date(Date.now() + LOGIN_TTL_MS), placeholder],
  )) as { provider_id: string; nonce: string; code_verifier: string }[];
  if (!row) return null;
  const provider = await ctx.em.findOne(SsoProvider, { id: row.provider_id, type: 'oidc', status: 'active' });
  if (!provider) throw new Error('provider is no longer active');
  return toIdp(ctx, clientSettings(ctx, provider), { state, nonce: row.nonce, codeChallenge: pkceChallenge(row.code_verifier) });
}

interface ConsumedSession {
  provider_id: string;
  nonce: string;
  code_verifier: string;
  redirect_path: string;
  link_user_id: string | null;
}

/** Deletes and returns the session of `state` if it has not expired: one statement, so a state is good once. */
async function consumeSession(em: EntityManager, state: string): Promise<ConsumedSession | null> {
  const rows = (await em.execute(
    `delete from sso_session where state = ? and expires_at > now() returning provider_id, nonce, code_verifier, redirect_path, link_user_id`,
    [state],
  )) as ConsumedSession[];
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
    return await finishSsoLogin(ctx, provider, { ...claims, idpTokens: result.tokens }, { redirectPath: session.redirect_path, linkUserId: session.link_user_id });
  } catch (error) {
    return failedLoginUrl(ctx, error, provider);
  }
}
