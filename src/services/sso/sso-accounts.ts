// The part of an SSO login both protocols share (spec rules 9-15): the identity the IdP vouched for becomes a
// local user and membership, the identity link is written, a session is issued and handed to the browser as
// a one-time exchange code.
import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { SsoExchangeCode, SsoIdentity, type SsoProvider } from '../../../entities/sso.js';
import { Membership, User } from '../../../entities/user.js';
import type { RequestContext } from '../../auth/context.js';
import { skipAuthorization } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { badRequest } from '../../errors.js';
import { randomToken, sha256Hex } from '../../secrets.js';
import { parseInput } from '../../validation.js';
import { recordAudit } from '../audit/api.js';
import { issueSession, type SessionTokens } from '../identity/api.js';
import { usableDefaultRole } from './sso-idp.js';

/** The `error` query values of `<publicUrl>/login?error=<code>`. */
export type SsoErrorCode =
  | 'session_expired'
  | 'domain_not_allowed'
  | 'user_not_found'
  | 'default_role_required'
  | 'no_org_access'
  | 'account_link_required'
  | 'email_missing'
  | 'email_not_verified'
  | 'account_disabled'
  | 'sso_error';

/** An expected refusal of a login; anything else thrown during a login redirects with `sso_error`. */
export class SsoLoginError extends Error {
  constructor(readonly code: SsoErrorCode, detail?: string) {
    super(detail ?? code);
    this.name = 'SsoLoginError';
  }
}

const EXCHANGE_CODE_TTL_MS = 2 * 60_000;
const INVALID_EXCHANGE_CODE = 'Invalid or expired token exchange code';

/**
 * Where the browser goes after the IdP: a path on the dashboard, never another origin (`//host`, `/\host`,
 * `https://…`), and without a fragment of its own since `#ssoCode=` is appended.
 */
export const RedirectPath = z
  .string()
  .max(500)
  .refine((p) => /^\/(?![/\\])[^\\#\s\u0000-\u001f\u007f]*$/.test(p), 'must be a path on this site, such as /devices');

/** What either protocol learned about the person from the IdP. */
export interface SsoIdentityClaims {
  /** OIDC `sub`, SAML NameID */
  externalId: string;
  email: string | null;
  /** OIDC `email_verified` when the email came from the `email` claim; false refuses the login */
  emailVerified: boolean | null;
  name: string | null;
  firstName: string | null;
  lastName: string | null;
  groups: string[];
  /** full UserInfo / SAML profile, stored on the identity link */
  profile: Record<string, unknown>;
  idpTokens: { accessToken: string; refreshToken: string | null; expiresAt: Date | null } | null;
}

/** A cookie binding a login to the browser that started it; `value: null` deletes it. */
export interface LoginCookie {
  name: string;
  value: string | null;
  path: string;
  maxAgeMs: number;
  secure: boolean;
  sameSite: 'lax' | 'none';
}

/** Where to send the browser, and the cookie to set (login start) or delete (login end), if any. */
export interface LoginRedirect {
  url: string;
  cookie: LoginCookie | null;
}

/** The path browsers see for a route, under PUBLIC_URL's own path when the service sits below one. */
export function publicPath(ctx: RequestContext, routePath: string): string {
  return `${new URL(ctx.runtime.config.publicUrl).pathname.replace(/\/$/, '')}${routePath}`;
}

export const LOGIN_TTL_MS = 10 * 60_000;
/** How long the URL of a link a signed-in user started stays good: the front end opens it at once. */
export const LINK_START_TTL_MS = 2 * 60_000;

/**
 * `<value>.<signature>`: HMAC-SHA256 (secrets.sign, keyed from the encryption key) over the purpose and the
 * value, base64url, so a value sealed for one purpose is worthless for another.
 */
export function seal(ctx: RequestContext, purpose: string, value: string): string {
  return `${value}.${Buffer.from(ctx.runtime.secrets.sign(`${purpose}:${value}`), 'hex').toString('base64url')}`;
}

/** The value of a sealed string, or null when it is malformed or its signature does not verify (constant time). */
export function unseal(ctx: RequestContext, purpose: string, sealed: string | undefined): string | null {
  const dot = sealed?.lastIndexOf('.') ?? -1;
  if (!sealed || dot <= 0) return null;
  const value = sealed.slice(0, dot);
  const signature = Buffer.from(sealed.slice(dot + 1), 'base64url').toString('hex');
  return ctx.runtime.secrets.verify(`${purpose}:${value}`, signature) ? value : null;
}

function loginErrorUrl(ctx: RequestContext, code: SsoErrorCode): string {
  return `${ctx.runtime.config.publicUrl}/login?error=${code}`;
}

/**
 * The redirect for a login that failed with `error`: its own code for an SsoLoginError, `sso_error` for
 * anything else (logged). With the provider known the failure is audited as `auth.login` (result failure).
 */
export async function failedLoginUrl(ctx: RequestContext, error: unknown, provider: SsoProvider | null): Promise<string> {
  const code = error instanceof SsoLoginError ? error.code : 'sso_error';
  ctx.log.warn({ code, providerId: provider?.id, err: (error as Error).message }, 'SSO login refused');
  if (provider) {
    // A refused login still ends in the error redirect, even when the audit write fails.
    await (async () =>
      recordAudit(ctx, {
        action: 'auth.login',
        resourceType: 'sso_provider',
        resourceId: provider.id,
        orgId: provider.orgId,
        partnerId: await ctx.partnerOfOrg(provider.orgId),
        result: 'failure',
        details: { method: 'sso', type: provider.type, reason: code },
      }))().catch((auditError: Error) => ctx.log.error({ err: auditError.message }, 'could not audit an SSO login failure'));
  }
  return loginErrorUrl(ctx, code);
}

function emailDomainAllowed(email: string, allowedDomains: string | null): boolean {
  if (!allowedDomains) return true;
  const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
  return allowedDomains.split(',').some((d) => d.trim().toLowerCase() === domain);
}

function displayName(claims: SsoIdentityClaims, email: string): string {
  const combined = [claims.firstName, claims.lastName].filter(Boolean).join(' ');
  return (claims.name || combined || email.slice(0, email.indexOf('@'))).slice(0, 255);
}

interface ResolvedAccount {
  user: User;
  membership: Membership;
  /** the link of this (provider, subject), null on its first login */
  identity: SsoIdentity | null;
}

/**
 * Rules 10-12, with identities matched by (provider, subject): a linked subject signs in its user, whatever
 * email it asserts now. A first login takes an existing account found by email only when the provider's
 * organization owns it alone (every active membership is there: its own and invited users), or when the
 * account's owner confirmed the link while signed in (`linkUserId`). Otherwise the organization, which runs
 * the IdP, could sign in as anyone sharing an email with it: a platform admin, another tenant's user.
 */
async function resolveAccount(tx: RequestContext, provider: SsoProvider, claims: SsoIdentityClaims, email: string, linkUserId: string | null): Promise<ResolvedAccount> {
  if (!emailDomainAllowed(email, provider.allowedDomains)) throw new SsoLoginError('domain_not_allowed');
  const identity = await tx.em.findOne(SsoIdentity, { providerId: provider.id, externalId: claims.externalId });
  if (identity && linkUserId && identity.userId !== linkUserId) throw new SsoLoginError('account_link_required', 'the subject is linked to another account');
  // A linked or owner-confirmed account exists (its rows cascade with it); otherwise the email decides.
  const boundUserId = identity?.userId ?? linkUserId;
  let user = boundUserId ? await tx.em.findOneOrFail(User, { id: boundUserId }) : await tx.em.findOne(User, { email });
  const matchedByEmail = !boundUserId && user !== null;
  if (!user) {
    if (!provider.autoProvision) throw new SsoLoginError('user_not_found');
    if (!(await usableDefaultRole(tx.em, provider.orgId, provider.defaultRoleId))) throw new SsoLoginError('default_role_required');
    user = await provisionUser(tx, provider, email, displayName(claims, email));
  }
  if (user.status === 'disabled') throw new SsoLoginError('account_disabled', `user status ${user.status}`);
  // A pending membership is an invitation its owner has not accepted: it grants nothing, here neither.
  const memberships = await tx.em.find(Membership, { userId: user.id, status: 'active' });
  const membership = memberships.find((m) => m.scope === 'organization' && m.orgId === provider.orgId);
  if (!membership) throw new SsoLoginError('no_org_access');
  if (matchedByEmail) {
    if (memberships.some((m) => m.orgId !== provider.orgId)) throw new SsoLoginError('account_link_required', 'the account has access outside the organization');
    if ((await tx.em.count(SsoIdentity, { providerId: provider.id, userId: user.id })) > 0) {
      throw new SsoLoginError('account_link_required', 'the account is linked to another subject at this provider');
    }
  }
  // The IdP vouches for the invited person: signing in through it accepts the invitation.
  if (user.status === 'invited') Object.assign(user, { status: 'active', inviteTokenHash: null, inviteExpiresAt: null });
  return { user, membership, identity };
}

/** Rule 11, auto-provisioning: a user without a password, member of the provider's organization with its default role. */
async function provisionUser(tx: RequestContext, provider: SsoProvider, email: string, name: string): Promise<User> {
  const user = tx.em.create(User, { email, name, passwordHash: null, status: 'active' });
  tx.em.create(Membership, { userId: user.id, scope: 'organization', orgId: provider.orgId, roleId: provider.defaultRoleId! });
  await tx.em.flush();
  await recordAudit(tx, {
    action: 'user.create',
    resourceType: 'user',
    resourceId: user.id,
    orgId: provider.orgId,
    partnerId: await tx.partnerOfOrg(provider.orgId),
    details: { email, roleId: provider.defaultRoleId, source: 'sso', providerId: provider.id },
  });
  return user;
}

/**
 * Refreshes the link of this subject, or links it to `user`: a new row, or (the owner confirming) the row that
 * held the account's previous subject at this provider. A new link is audited.
 */
async function writeIdentityLink(tx: RequestContext, provider: SsoProvider, account: ResolvedAccount, claims: SsoIdentityClaims, email: string, ownerConfirmed: boolean): Promise<void> {
  const { secrets } = tx.runtime;
  const { user } = account;
  const tokens = claims.idpTokens;
  const identity =
    account.identity ??
    (await tx.em.findOne(SsoIdentity, { providerId: provider.id, userId: user.id })) ??
    tx.em.create(SsoIdentity, { userId: user.id, providerId: provider.id, externalId: claims.externalId, email });
  const previousExternalId = identity.externalId === claims.externalId ? null : identity.externalId;
  tx.em.assign(identity, {
    externalId: claims.externalId,
    email,
    profile: { ...claims.profile, groups: claims.groups },
    accessToken: tokens ? secrets.encrypt(tokens.accessToken) : null,
    refreshToken: tokens?.refreshToken ? secrets.encrypt(tokens.refreshToken) : null,
    tokenExpiresAt: tokens?.expiresAt ?? null,
    lastLoginAt: new Date(),
  });
  await tx.em.flush();
  if (account.identity) return;
  await recordAudit(tx, {
    action: 'sso.identity.link',
    resourceType: 'sso_identity',
    resourceId: identity.id,
    orgId: provider.orgId,
    partnerId: await tx.partnerOfOrg(provider.orgId),
    details: { userId: user.id, providerId: provider.id, externalId: claims.externalId, email, ownerConfirmed, ...(previousExternalId ? { previousExternalId } : {}) },
  });
}

/**
 * Rules 9-14 after the IdP response was validated: returns `<publicUrl><redirectPath>#ssoCode=<code>`.
 * Throws SsoLoginError for the refusals the spec names; everything is rolled back then.
 */
export async function finishSsoLogin(
  ctx: RequestContext,
  provider: SsoProvider,
  claims: SsoIdentityClaims,
  login: { redirectPath: string; linkUserId: string | null },
): Promise<string> {
  const email = claims.email?.trim().toLowerCase();
  if (!email || !/^[^\s@]+@[^\s@]+$/.test(email) || email.length > 255) throw new SsoLoginError('email_missing');
  if (claims.emailVerified === false) throw new SsoLoginError('email_not_verified');
  if (!claims.externalId || claims.externalId.length > 255) throw new SsoLoginError('sso_error', 'external id missing or longer than 255');

  const code = await withTransaction(ctx, async (tx) => {
    const account = await resolveAccount(tx, provider, claims, email, login.linkUserId);
    await writeIdentityLink(tx, provider, account, claims, email, login.linkUserId !== null);
    // An IdP login is not counted as a second factor: the service cannot verify how the IdP authenticated.
    return issueExchangeCode(tx, await issueSession(tx, account.user, account.membership, { method: 'sso', mfa: false }));
  });
  return `${ctx.runtime.config.publicUrl}${login.redirectPath}#ssoCode=${code}`;
}

/** Stored as a hash with the encrypted tokens, so any instance can redeem it and a database reader cannot. */
async function issueExchangeCode(tx: RequestContext, tokens: SessionTokens): Promise<string> {
  const code = randomToken(32);
  tx.em.create(SsoExchangeCode, {
    codeHash: sha256Hex(code),
    tokens: tx.runtime.secrets.encrypt(JSON.stringify({ accessToken: tokens.accessToken, refreshToken: tokens.refreshToken })),
    expiresAt: new Date(Date.now() + EXCHANGE_CODE_TTL_MS),
  });
  await tx.em.flush();
  return code;
}

// Any string: a missing, empty or mangled code gets the spec's message from the lookup below, not a schema error.
export const ExchangeInput = z.object({ code: z.string().max(4096).optional() }).strict();

/** `POST /sso/exchange`: single use (the row is deleted by the statement that reads it), 2 minutes. */
export async function redeemExchangeCode(ctx: RequestContext, body: z.input<typeof ExchangeInput>): Promise<{ accessToken: string; refreshToken: string }> {
  skipAuthorization(ctx, 'the one-time exchange code is the credential');
  const { code = '' } = parseInput(ExchangeInput, body);
  const [row] = (await (ctx.em as EntityManager).execute(`delete from sso_exchange_code where code_hash = ? returning tokens, expires_at`, [sha256Hex(code)])) as {
    tokens: string;
    expires_at: Date;
  }[];
  if (!row || new Date(row.expires_at).getTime() <= Date.now()) throw badRequest(INVALID_EXCHANGE_CODE);
  try {
    const { accessToken, refreshToken } = JSON.parse(ctx.runtime.secrets.decrypt(row.tokens)) as { accessToken: string; refreshToken: string };
    return { accessToken, refreshToken };
  } catch {
    throw badRequest(INVALID_EXCHANGE_CODE);
  }
}
