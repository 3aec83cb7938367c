import { randomUUID } from 'node:crypto';
import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { LoginAttempt, RefreshToken } from '../../../entities/session.js';
import { Membership, User } from '../../../entities/user.js';
import { principalFor } from '../../auth/authenticate.js';
import { RequestContext, type Principal } from '../../auth/context.js';
import { hashPassword, verifyPassword } from '../../auth/passwords.js';
import { authenticated, skipAuthorization } from '../../auth/policy.js';
import { signAccessToken, signMfaToken, verifyMfaToken } from '../../auth/tokens.js';
import { generateTotpSecret, matchTotp, otpauthUrl, randomBase32 } from '../../auth/totp.js';
import { withTransaction } from '../../db/transaction.js';
import { badRequest, conflict, forbidden, notFound, rateLimited, unauthenticated } from '../../errors.js';
import { randomToken, safeEqual, sha256Hex } from '../../secrets.js';
import { parseInput } from '../../validation.js';
import { revokeKeysOfUser } from './api-keys.js';
import { recordAudit, recordChange } from '../audit/api.js';
import type { AuditAction } from '../../events/types.js';
import { userView } from './user-view.js';
import {
  AuthSession,
  ChangePasswordInput,
  LoginInput,
  LoginResult,
  LogoutInput,
  MfaCodeInput,
  MfaSetup,
  MfaSetupInput,
  PasswordChanged,
  RefreshInput,
  SessionTokens,
  SwitchMembershipInput,
  VerifyMfaInput,
} from './auth-schemas.js';

// The contract is its own file; importers of this service read it here too.
export * from './auth-schemas.js';

/**
 * Checks that may refuse password login for a user whose password is right (e.g. SSO enforced for the
 * user's organization). Each returns false to refuse; the caller then sees the generic login failure.
 */
export const passwordLoginPolicies: ((em: EntityManager, membership: Membership) => Promise<boolean>)[] = [];

/** Whether a password session may act through `membership` (e.g. not when its organization enforces SSO). */
export async function passwordLoginAllowed(em: EntityManager, membership: Membership): Promise<boolean> {
  for (const allowed of passwordLoginPolicies) if (!(await allowed(em, membership))) return false;
  return true;
}

export const SSO_ENFORCED = 'Your organization signs in through single sign-on';


const INVALID_LOGIN = 'Invalid email or password';
const INVALID_MFA_CODE = 'Invalid MFA code';
const WRONG_CURRENT_PASSWORD = 'Current password is incorrect';
const MFA_ISSUER = 'rmm-service';
const RECOVERY_CODE_COUNT = 10;

// ---------------------------------------------------------------------------------------------------------
// Sessions

/**
 * Starts a login session for `user` through `membership` inside the caller's transaction: refresh-token
 * family row, access token, lastLoginAt, audit `auth.login`, event `user.login` (orgId = membership.orgId).
 * Used by password login, MFA verify, invite acceptance and SSO.
 */
export async function issueSession(
  tx: RequestContext,
  user: User,
  membership: Membership,
  options: { method: 'password' | 'sso'; mfa: boolean },
): Promise<SessionTokens> {
  const tokens = await mintTokens(tx, user, membership, { familyId: randomUUID(), ...options });
  const now = new Date();
  user.lastLoginAt = now;
  // The caller's user may belong to another EntityManager; write the column directly.
  await tx.em.nativeUpdate(User, { id: user.id }, { lastLoginAt: now });
  // The acting context shares tx's EntityManager, so the event is written in the same transaction.
  await recordChange(
    await actingAs(tx, user, membership, options.mfa),
    { action: 'auth.login', resourceType: 'user', resourceId: user.id, orgId: membership.orgId, details: { method: options.method, mfa: options.mfa } },
    { userId: user.id, email: user.email, method: options.method === 'password' && options.mfa ? 'mfa' : options.method },
  );
  return tokens;
}

/** One refresh-token row of the family and the access token that names the family as its `sid`. */
async function mintTokens(
  tx: RequestContext,
  user: User,
  membership: Membership,
  session: { familyId: string; method: 'password' | 'sso'; mfa: boolean },
): Promise<SessionTokens> {
  const { config } = tx.runtime;
  const refreshToken = randomToken(32);
  tx.em.create(RefreshToken, {
    userId: user.id,
    membershipId: membership.id,
    familyId: session.familyId,
    tokenHash: sha256Hex(refreshToken),
    mfa: session.mfa,
    method: session.method,
    tokenVersion: user.tokenVersion,
    expiresAt: new Date(Date.now() + config.refreshTokenTtlSeconds * 1000),
    ip: tx.meta.ip,
    userAgent: tx.meta.userAgent,
  });
  await tx.em.flush();
  const accessToken = await signAccessToken(config, {
    sub: user.id,
    mid: membership.id,
    scope: membership.scope,
    partnerId: membership.partnerId,
    orgId: membership.orgId,
    roleId: membership.roleId,
    mfa: session.mfa,
    ver: user.tokenVersion,
    sid: session.familyId,
  });
  return { accessToken, refreshToken, expiresIn: config.accessTokenTtlSeconds };
}

/** The request as the user whose session is being created, so the audit row names them as the actor. */
async function actingAs(tx: RequestContext, user: User, membership: Membership, mfa: boolean): Promise<RequestContext> {
  const principal = await principalFor(tx.em, user, membership, { kind: 'user', id: user.id, mfa });
  return RequestContext.create(tx.runtime, principal, tx.meta).withEm(tx.em);
}

async function revokeFamilies(em: EntityManager, where: { familyId?: string | { $in: string[] }; userId?: string }): Promise<number> {
  return em.nativeUpdate(RefreshToken, { ...where, revokedAt: null }, { revokedAt: new Date() });
}

/**
 * The membership a password login signs in through: the one asked for, else the one the user signed
 * in through last, else the oldest. Only active memberships: a pending invitation grants nothing.
 */
async function loginMembership(em: EntityManager, userId: string, requested?: string): Promise<Membership | null> {
  if (requested) return em.findOne(Membership, { id: requested, userId, status: 'active' });
  const [last] = (await em.execute(
    `select m.id from refresh_token r join membership m on m.id = r.membership_id and m.status = 'active' where r.user_id = ? order by r.created_at desc limit 1`,
    [userId],
  )) as { id: string }[];
  const found = last ? await em.findOne(Membership, { id: last.id }) : null;
  return found ?? em.findOne(Membership, { userId, status: 'active' }, { orderBy: { createdAt: 'asc', id: 'asc' } });
}

// ---------------------------------------------------------------------------------------------------------
// Failed attempts: lockout per email, throttling per IP

function clientIp(ctx: RequestContext): string {
  return ctx.meta.ip ?? 'unknown';
}

/** 429 once the caller's IP has `maxFailuresPerIp` failures within the window; Retry-After is when the oldest of them leaves it. */
async function refuseThrottledIp(ctx: RequestContext): Promise<void> {
  const { maxFailuresPerIp, ipWindowMinutes } = ctx.runtime.config.login;
  const windowMs = ipWindowMinutes * 60_000;
  const [oldest] = (await ctx.em.execute(
    `select created_at from login_attempt where ip = ? and not success and created_at > ? order by created_at desc offset ? limit 1`,
    [clientIp(ctx), new Date(Date.now() - windowMs), maxFailuresPerIp - 1],
  )) as { created_at: Date }[];
  if (!oldest) return;
  const retryAfter = Math.max(1, Math.ceil((new Date(oldest.created_at).getTime() + windowMs - Date.now()) / 1000));
  throw rateLimited('Too many failed login attempts', retryAfter);
}

/** Locked: `maxFailuresPerEmail` failures within the lockout window and since the last successful login. */
async function emailLocked(ctx: RequestContext, email: string): Promise<boolean> {
  const { maxFailuresPerEmail, lockoutMinutes } = ctx.runtime.config.login;
  const [row] = (await ctx.em.execute(
    `select count(*)::int as failures from login_attempt
      where email = ? and not success and created_at > ?
        and created_at > coalesce((select max(created_at) from login_attempt where email = ? and success), '-infinity')`,
    [email, new Date(Date.now() - lockoutMinutes * 60_000), email],
  )) as { failures: number }[];
  return (row?.failures ?? 0) >= maxFailuresPerEmail;
}

/**
 * Counts a failed attempt against the email and the IP and audits it (never the password). Written on its own
 * EntityManager and transaction so it stays when the request fails.
 */
async function recordFailure(ctx: RequestContext, failure: { action: AuditAction; email: string; user: User | null; reason: string }): Promise<void> {
  const separate = ctx.withEm(ctx.runtime.orm.em.fork() as EntityManager);
  await withTransaction(separate, async (tx) => {
    tx.em.create(LoginAttempt, { email: failure.email, ip: clientIp(tx), success: false });
    const membership = failure.user ? await loginMembership(tx.em, failure.user.id) : null;
    await recordAudit(tx, {
      action: failure.action,
      resourceType: 'user',
      resourceId: failure.user?.id ?? null,
      orgId: membership?.orgId ?? null,
      partnerId: membership?.partnerId ?? (membership?.orgId ? await tx.partnerOfOrg(membership.orgId) : null),
      result: 'failure',
      details: { email: failure.email, reason: failure.reason },
    });
  });
}

// ---------------------------------------------------------------------------------------------------------
// Login

/** `POST /auth/login`: every refusal answers the same 401, after the same password-hashing work. */
export async function login(ctx: RequestContext, input: LoginInput): Promise<LoginResult> {
  skipAuthorization(ctx, 'password login');
  const { password, membershipId, ...parsed } = parseInput(LoginInput, input);
  const email = parsed.email.toLowerCase();
  await refuseThrottledIp(ctx);

  const user = await ctx.em.findOne(User, { email });
  const passwordOk = await verifyPassword(password, user?.passwordHash ?? null);
  const refuse = async (reason: string): Promise<never> => {
    await recordFailure(ctx, { action: 'auth.login', email, user, reason });
    throw unauthenticated(INVALID_LOGIN);
  };
  if (await emailLocked(ctx, email)) return refuse('locked_out');
  if (!user) return refuse('unknown_email');
  if (!passwordOk) return refuse('wrong_password');
  if (user.status !== 'active') return refuse(`user_${user.status}`);
  const membership = await loginMembership(ctx.em, user.id, membershipId);
  if (!membership) return refuse('no_membership');
  if (!(await passwordLoginAllowed(ctx.em, membership))) return refuse('password_login_not_allowed');

  if (user.mfaEnabled) {
    return { mfaRequired: true, mfaToken: await signMfaToken(ctx.runtime.config, { sub: user.id, ver: user.tokenVersion, mid: membership.id }) };
  }
  return withTransaction(ctx, (tx) => completeLogin(tx, user, membership, false));
}

/** A successful login (which also ends the email's run of failures) and its session. */
async function completeLogin(tx: RequestContext, user: User, membership: Membership, mfa: boolean): Promise<AuthSession> {
  tx.em.create(LoginAttempt, { email: user.email, ip: clientIp(tx), success: true });
  const tokens = await issueSession(tx, user, membership, { method: 'password', mfa });
  return { ...tokens, user: userView(user, membership) };
}

/** `POST /auth/mfa/verify`: the second step, with a TOTP code or an unused recovery code. */
export async function verifyMfa(ctx: RequestContext, input: VerifyMfaInput): Promise<AuthSession> {
  skipAuthorization(ctx, 'second step of a password login');
  const { mfaToken, code } = parseInput(VerifyMfaInput, input);
  const claims = await verifyMfaToken(ctx.runtime.config, mfaToken);
  if (!claims) throw unauthenticated('Invalid or expired MFA token');
  await refuseThrottledIp(ctx);

  const outcome = await withTransaction(ctx, async (tx) => {
    const user = await lockUser(tx, claims.sub);
    const membership = user ? await loginMembership(tx.em, user.id, claims.mid) : null;
    if (!user || !membership || user.status !== 'active' || user.tokenVersion !== claims.ver || !user.mfaEnabled) return { refused: 'token' as const };
    if (await emailLocked(tx, user.email)) return { refused: 'locked_out' as const, user };
    if (!(await consumeSecondFactor(tx, user, code))) return { refused: 'invalid_mfa_code' as const, user };
    return { refused: null, session: await completeLogin(tx, user, membership, true) };
  });
  if (outcome.refused === null) return outcome.session;
  if (outcome.refused === 'token') throw unauthenticated('Invalid or expired MFA token');
  await recordFailure(ctx, { action: 'auth.login', email: outcome.user.email, user: outcome.user, reason: outcome.refused });
  throw unauthenticated(INVALID_MFA_CODE);
}

async function lockUser(tx: RequestContext, id: string): Promise<User | null> {
  return tx.em.findOne(User, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
}

/**
 * Accepts a TOTP code of a time step not used before, or an unused recovery code, and consumes it on the
 * user (locked by the caller, so two requests cannot both spend the same code).
 */
export async function consumeSecondFactor(tx: RequestContext, user: User, code: string): Promise<boolean> {
  if (!user.mfaSecret) return false;
  if (/^\d{6}$/.test(code)) {
    const step = matchTotp(tx.runtime.secrets.decrypt(user.mfaSecret), code, user.mfaLastUsedStep);
    if (step === null) return false;
    user.mfaLastUsedStep = step;
    return true;
  }
  const hash = hashRecoveryCode(code);
  const remaining = user.mfaRecoveryCodes.filter((stored) => !safeEqual(stored, hash));
  if (remaining.length === user.mfaRecoveryCodes.length) return false;
  user.mfaRecoveryCodes = remaining;
  await recordAudit(tx, {
    action: 'auth.mfa.recovery_code.use',
    resourceType: 'user',
    resourceId: user.id,
    changes: ['mfaRecoveryCodes'],
    details: { remaining: remaining.length },
  });
  return true;
}

// Recovery codes are compared without dashes, spaces or case, as people retype them.
function hashRecoveryCode(code: string): string {
  return sha256Hex(code.replace(/[\s-]/g, '').toLowerCase());
}

function generateRecoveryCode(): string {
  const text = randomBase32(5).toLowerCase();
  return `${text.slice(0, 4)}-${text.slice(4)}`;
}

// ---------------------------------------------------------------------------------------------------------
// Refresh and logout

/**
 * `POST /auth/refresh`: rotates the token within its family. A used, expired or revoked token, or one whose
 * user is no longer active or has changed password, revokes the whole family.
 */
export async function refresh(ctx: RequestContext, input: RefreshInput): Promise<SessionTokens> {
  skipAuthorization(ctx, 'the refresh token is the credential');
  const { refreshToken } = parseInput(RefreshInput, input);
  const tokens = await withTransaction(ctx, async (tx) => {
    const row = await tx.em.findOne(RefreshToken, { tokenHash: sha256Hex(refreshToken) }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
    if (!row) return null;
    const familyRevoked = (await tx.em.count(RefreshToken, { familyId: row.familyId, revokedAt: { $ne: null } })) > 0;
    const user = await tx.em.findOne(User, { id: row.userId });
    const membership = await tx.em.findOne(Membership, { id: row.membershipId, status: 'active' });
    const usable = !row.usedAt && !familyRevoked && row.expiresAt > new Date() && user?.status === 'active' && user.tokenVersion === row.tokenVersion;
    if (!usable || !user || !membership) {
      await revokeFamilies(tx.em, { familyId: row.familyId });
      // A used token presented again means it was copied: the session is ended for whoever holds it.
      if (row.usedAt && !familyRevoked) {
        await recordAudit(tx, {
          action: 'auth.session.revoke',
          resourceType: 'user',
          resourceId: row.userId,
          orgId: membership?.orgId ?? null,
          result: 'failure',
          details: { reason: 'refresh_token_reuse', sessionId: row.familyId },
        });
      }
      return null;
    }
    row.usedAt = new Date();
    return mintTokens(tx, user, membership, { familyId: row.familyId, method: row.method, mfa: row.mfa });
  });
  if (!tokens) throw unauthenticated('Invalid or expired refresh token');
  return tokens;
}

export type SessionPrincipal = Principal & { userId: string; membershipId: string; email: string };

/** Account operations act on the caller's own user session; an API key cannot sign out, change passwords or second factors. */
export function sessionUser(ctx: RequestContext): SessionPrincipal {
  const principal = authenticated(ctx);
  if (principal.kind !== 'user' || !principal.userId || !principal.membershipId || !principal.email) {
    throw forbidden('This operation needs a user session, not an API key');
  }
  return principal as SessionPrincipal;
}

/** `POST /auth/logout`: ends the session of the access token and/or of the given refresh token (the caller's own only). */
export async function logout(ctx: RequestContext, input: LogoutInput = {}): Promise<void> {
  const principal = sessionUser(ctx);
  const { refreshToken } = parseInput(LogoutInput, input);
  await withTransaction(ctx, async (tx) => {
    const familyIds = new Set<string>();
    if (principal.sessionId) familyIds.add(principal.sessionId);
    if (refreshToken) {
      const row = await tx.em.findOne(RefreshToken, { tokenHash: sha256Hex(refreshToken), userId: principal.userId });
      if (row) familyIds.add(row.familyId);
    }
    if (familyIds.size > 0) await revokeFamilies(tx.em, { familyId: { $in: [...familyIds] }, userId: principal.userId });
    await recordChange(
      tx,
      { action: 'auth.logout', resourceType: 'user', resourceId: principal.userId, orgId: principal.orgId, details: { sessionIds: [...familyIds] } },
      { userId: principal.userId, email: principal.email },
    );
  });
}

/**
 * `POST /auth/switch-membership`: the same session acting through another of the user's active
 * memberships, without signing in again. The session's earlier refresh tokens are superseded (marked
 * used). An SSO session stays in the organization whose IdP started it.
 */
export async function switchMembership(ctx: RequestContext, input: SwitchMembershipInput): Promise<AuthSession> {
  const principal = sessionUser(ctx);
  const { membershipId } = parseInput(SwitchMembershipInput, input);
  if (principal.sessionMethod === 'sso') throw forbidden('A single sign-on session acts in its organization only: sign in with your password to use another membership');
  const familyId = principal.sessionId;
  if (!familyId) throw forbidden('This operation needs a login session');
  return withTransaction(ctx, async (tx) => {
    const user = (await lockUser(tx, principal.userId))!;
    const membership = await tx.em.findOne(Membership, { id: membershipId, userId: user.id, status: 'active' });
    if (!membership) throw notFound('Membership');
    if (!(await passwordLoginAllowed(tx.em, membership))) throw forbidden(SSO_ENFORCED);
    await tx.em.nativeUpdate(RefreshToken, { familyId, usedAt: null }, { usedAt: new Date() });
    const tokens = await mintTokens(tx, user, membership, { familyId, method: 'password', mfa: principal.mfa });
    // Acting as the new membership also refuses a suspended organization or partner (403).
    await recordAudit(await actingAs(tx, user, membership, principal.mfa), {
      action: 'auth.membership.switch',
      resourceType: 'user',
      resourceId: user.id,
      orgId: membership.orgId,
      details: { fromMembershipId: principal.membershipId, membershipId: membership.id },
    });
    return { ...tokens, user: userView(user, membership) };
  });
}

// ---------------------------------------------------------------------------------------------------------
// Password and MFA management (the caller's own account)

/** 429 for account operations that guess a secret (current password, MFA code) once the email is locked out. */
async function refuseLockedAccount(ctx: RequestContext, email: string): Promise<void> {
  if (await emailLocked(ctx, email)) throw rateLimited('Too many failed attempts, try again later');
}

/**
 * Whether `password` is the account's own, checked as a login is: refused (429) while the IP is
 * throttled or the email locked out, and a wrong one counted against both. Every password check
 * outside login goes through here, so none is an unthrottled way to guess a password.
 */
export async function checkOwnPassword(ctx: RequestContext, user: User, password: string, action: AuditAction): Promise<boolean> {
  await refuseThrottledIp(ctx);
  await refuseLockedAccount(ctx, user.email);
  if (await verifyPassword(password, user.passwordHash)) return true;
  await recordFailure(ctx, { action, email: user.email, user, reason: 'wrong_password' });
  return false;
}

/**
 * `POST /auth/change-password`: bumps the token version (every access token stops working), revokes every
 * session of the user and returns a new one for the caller.
 */
export async function changePassword(ctx: RequestContext, input: ChangePasswordInput): Promise<PasswordChanged> {
  const principal = sessionUser(ctx);
  const { currentPassword, newPassword, apiKeys } = parseInput(ChangePasswordInput, input);
  const user = await ctx.em.findOneOrFail(User, { id: principal.userId });
  if (!(await checkOwnPassword(ctx, user, currentPassword, 'auth.password.change'))) throw badRequest(WRONG_CURRENT_PASSWORD);
  const passwordHash = await hashPassword(newPassword);
  return withTransaction(ctx, async (tx) => {
    const locked = (await lockUser(tx, principal.userId))!;
    locked.passwordHash = passwordHash;
    locked.tokenVersion += 1;
    await revokeFamilies(tx.em, { userId: locked.id });
    const membership = await tx.em.findOneOrFail(Membership, { id: principal.membershipId });
    const tokens = await mintTokens(tx, locked, membership, { familyId: randomUUID(), method: 'password', mfa: principal.mfa });
    // Keys made while the old password was in use may be in the hands of whoever knew it.
    const apiKeysRevoked = apiKeys === 'revoke' ? await revokeKeysOfUser(tx, locked.id, 'password_changed') : 0;
    await recordChange(
      tx,
      { action: 'auth.password.change', resourceType: 'user', resourceId: locked.id, orgId: principal.orgId, changes: ['password'], details: { apiKeys } },
      { userId: locked.id, apiKeysRevoked },
    );
    return { ...tokens, apiKeysRevoked };
  });
}

/**
 * An SSO session shows what the organization's IdP vouched for, not that the caller holds the account's
 * own credentials: account-level changes (a second factor, joining another tenant) on an account with
 * a password take that password too. An account without one has the IdP as its only credential.
 */
export async function proveOwnCredentials(ctx: RequestContext, principal: SessionPrincipal, currentPassword: string | undefined, action: AuditAction): Promise<void> {
  if (principal.sessionMethod !== 'sso') return;
  const user = await ctx.em.findOneOrFail(User, { id: principal.userId });
  if (!user.passwordHash) return;
  if (!currentPassword) throw forbidden('Confirm your current password (currentPassword): this session signed in through single sign-on');
  if (!(await checkOwnPassword(ctx, user, currentPassword, action))) throw badRequest(WRONG_CURRENT_PASSWORD);
}

/** `POST /auth/mfa/setup`: a new TOTP secret, stored encrypted; MFA stays off until a code from it is confirmed. */
export async function setupMfa(ctx: RequestContext, input: MfaSetupInput = {}): Promise<MfaSetup> {
  const principal = sessionUser(ctx);
  const { currentPassword } = parseInput(MfaSetupInput, input);
  await proveOwnCredentials(ctx, principal, currentPassword, 'auth.mfa.setup');
  return withTransaction(ctx, async (tx) => {
    const user = (await lockUser(tx, principal.userId))!;
    if (user.mfaEnabled) throw conflict('MFA is already enabled; disable it before setting up a new authenticator');
    const secret = generateTotpSecret();
    user.mfaSecret = tx.runtime.secrets.encrypt(secret);
    user.mfaLastUsedStep = null;
    await recordAudit(tx, { action: 'auth.mfa.setup', resourceType: 'user', resourceId: user.id, orgId: principal.orgId, changes: ['mfaSecret'] });
    return { secret, otpauthUrl: otpauthUrl(MFA_ISSUER, user.email, secret) };
  });
}

/** `POST /auth/mfa/enable`: confirms a code from the new secret, turns MFA on and returns one-time recovery codes (only their hashes are kept). */
export async function enableMfa(ctx: RequestContext, input: MfaCodeInput): Promise<{ recoveryCodes: string[] }> {
  const principal = sessionUser(ctx);
  const { code } = parseInput(MfaCodeInput, input);
  return withTransaction(ctx, async (tx) => {
    const user = (await lockUser(tx, principal.userId))!;
    if (user.mfaEnabled) throw conflict('MFA is already enabled');
    if (!user.mfaSecret) throw badRequest('Set up MFA first: POST /auth/mfa/setup');
    const step = matchTotp(tx.runtime.secrets.decrypt(user.mfaSecret), code, user.mfaLastUsedStep);
    if (step === null) throw badRequest(INVALID_MFA_CODE);
    const recoveryCodes = Array.from({ length: RECOVERY_CODE_COUNT }, generateRecoveryCode);
    Object.assign(user, { mfaEnabled: true, mfaLastUsedStep: step, mfaRecoveryCodes: recoveryCodes.map(hashRecoveryCode) });
    await recordAudit(tx, {
      action: 'auth.mfa.enable',
      resourceType: 'user',
      resourceId: user.id,
      orgId: principal.orgId,
      changes: ['mfaEnabled', 'mfaRecoveryCodes'],
    });
    return { recoveryCodes };
  });
}

/** `POST /auth/mfa/disable`: needs a TOTP or recovery code; clears the secret and the recovery codes. */
export async function disableMfa(ctx: RequestContext, input: MfaCodeInput): Promise<void> {
  const principal = sessionUser(ctx);
  const { code } = parseInput(MfaCodeInput, input);
  await refuseLockedAccount(ctx, principal.email);
  const failed = await withTransaction(ctx, async (tx) => {
    const user = (await lockUser(tx, principal.userId))!;
    if (!user.mfaEnabled) throw badRequest('MFA is not enabled');
    if (!(await consumeSecondFactor(tx, user, code))) return user;
    Object.assign(user, { mfaEnabled: false, mfaSecret: null, mfaRecoveryCodes: [], mfaLastUsedStep: null });
    await recordAudit(tx, {
      action: 'auth.mfa.disable',
      resourceType: 'user',
      resourceId: user.id,
      orgId: principal.orgId,
      changes: ['mfaEnabled', 'mfaSecret', 'mfaRecoveryCodes'],
    });
    return null;
  });
  if (failed) {
    await recordFailure(ctx, { action: 'auth.mfa.disable', email: failed.email, user: failed, reason: 'invalid_mfa_code' });
    throw badRequest(INVALID_MFA_CODE);
  }
}

/** Housekeeping: login attempts older than every counting window, and refresh tokens a day past expiry, can go. */
export async function pruneAuthRecords(ctx: RequestContext): Promise<{ attempts: number; refreshTokens: number }> {
  const { lockoutMinutes, ipWindowMinutes } = ctx.runtime.config.login;
  const attemptsBefore = new Date(Date.now() - Math.max(24 * 60, lockoutMinutes, ipWindowMinutes) * 60_000);
  const attempts = await ctx.em.nativeDelete(LoginAttempt, { createdAt: { $lt: attemptsBefore } });
  const refreshTokens = await ctx.em.nativeDelete(RefreshToken, { expiresAt: { $lt: new Date(Date.now() - 24 * 3600_000) } });
  return { attempts, refreshTokens };
}
