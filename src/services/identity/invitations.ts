import { LockMode, type FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { Membership, User } from '../../../entities/user.js';
import type { Scope } from '../../../entities/role.js';
import type { Principal, RequestContext } from '../../auth/context.js';
import { hashPassword } from '../../auth/passwords.js';
import { authorize, isUuid, requirePrincipal, skipAuthorization, targetOrgId } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { badRequest, conflict, forbidden, notFound } from '../../errors.js';
import { listSchema } from '../../pagination.js';
import { randomToken, sha256Hex } from '../../secrets.js';
import { parseInput, timestamp, uuid } from '../../validation.js';
import { recordAudit, recordChange } from '../audit/api.js';
import { sendMail } from '../shared/mailer.js';
import { checkOwnPassword, consumeSecondFactor, issueSession, passwordLoginAllowed, proveOwnCredentials, sessionUser, SSO_ENFORCED, type AuthSession } from './auth.js';
import { ScopeSchema, assignableRole, type MembershipTarget } from './roles.js';
import { UserViewSchema, userView } from './user-view.js';
import {
  MEMBERSHIP_ORDER,
  assertAccountControl,
  assertOutranks,
  email,
  loadManagedUser,
  membershipView,
  personName,
  reachesAll,
  rolesOf,
  tenantOf,
  type MembershipView,
} from './users.js';

/*
 * Invitations: a new account's one-time link, a pending membership offered to an existing account, and
 * the caller's own pending invitations (accept, decline). Managing users once they belong is users.ts.
 */

export const InviteUserSchema = z
  .object({
    email: email(),
    name: personName(),
    roleId: uuid().describe('The role the new member holds; one the caller may assign (see assignableRoles).'),
    orgId: uuid().optional().describe('the organization to join; partner callers leave it out to invite a partner-level member'),
  })
  .strict().describe('Who to invite, and the role they will hold.');
export type InviteUserInput = z.input<typeof InviteUserSchema>;

export const ResendInviteSchema = z.object({ userId: uuid() }).strict();

export const AcceptInviteSchema = z
  .object({
    token: z.string().min(1).max(200).describe('The `token` parameter of the invitation link.'),
    password: z.string().min(1).max(1024).describe("a new account's new password (12 to 256 characters), or an existing account's own password"),
    code: z.string().trim().min(1).max(64).optional().describe('existing accounts with MFA: a TOTP or recovery code'),
  })
  .strict().describe('An invitation link being accepted.');
export type AcceptInviteInput = z.input<typeof AcceptInviteSchema>;

/** A pending membership as its invitee sees it. */
export const InvitationViewSchema = z
  .object({
    id: uuid().describe('the pending membership: accept or decline it by this id'),
    scope: ScopeSchema.describe('The level the offered membership acts at.'),
    partnerId: uuid().nullable().describe('The partner offering a partner membership; null otherwise.'),
    orgId: uuid().nullable().describe('The organization offering an organization membership; null otherwise.'),
    tenantName: z.string().describe("the organization's or partner's name"),
    roleId: uuid().describe('The role offered.'),
    roleName: z.string().describe('Its display name.'),
    invitedAt: timestamp().describe('When the invitation was sent.'),
    expiresAt: timestamp().nullable().describe('When the invitation lapses; null if it does not.'),
  })
  .meta({ title: 'Invitation', description: 'A membership another organization or partner offered to the caller, not accepted yet.' });
export type InvitationView = z.output<typeof InvitationViewSchema>;
export const InvitationListSchema = listSchema(InvitationViewSchema, 'InvitationList');

/** Accepting a pending invitation signed in; an SSO session also proves the account's own password. */
export const AcceptMyInvitationSchema = z
  .object({
    currentPassword: z.string().min(1).max(1024).optional().describe('required when the session signed in through SSO and the account has a password'),
  })
  .strict();
export type AcceptMyInvitationInput = z.input<typeof AcceptMyInvitationSchema>;

/**
 * The one-time invitation link. For a new account it sets the password; for an existing account it
 * only accepts the membership, and asks for that account's own password. The answer has the same
 * shape either way, so it tells the inviter nothing about accounts outside their reach.
 */
export const InviteResultSchema = z
  .object({
    user: UserViewSchema.describe('The invited user, seen through the new pending membership.'),
    inviteUrl: z.string().nullable().describe("one-time link: sets a new account's password, or accepts the membership with an existing account's own password"),
  })
  .meta({ title: 'InviteResult', description: 'An invitation sent: the invited user and the link emailed to them.' });
export type InviteResult = z.output<typeof InviteResultSchema>;

const NewPassword = z.object({ password: z.string().min(12, 'must be at least 12 characters').max(256, 'must be at most 256 characters') });

const INVITE_TTL_MS = 7 * 24 * 3600 * 1000;
const INVALID_INVITATION = 'Invalid or expired invitation';

interface Invitation {
  tokenHash: string;
  expiresAt: Date;
  url: string;
}

/** A random one-time token: only its SHA-256 is stored; the link is shown to the inviter once and emailed. */
function newInvitation(ctx: RequestContext): Invitation {
  const token = randomToken(32);
  return {
    tokenHash: sha256Hex(token),
    expiresAt: new Date(Date.now() + INVITE_TTL_MS),
    url: `${ctx.runtime.config.publicUrl}/accept-invite?token=${token}`,
  };
}

/** Mail goes out after the commit and never fails the request: the inviter holds the link either way. */
function mailAfterCommit(ctx: RequestContext, to: string, subject: string, text: string): void {
  sendMail(ctx, { to, subject, text }).catch((error: unknown) => {
    ctx.log.warn({ to, err: error instanceof Error ? error.message : String(error) }, 'could not send email');
  });
}

function invitationMail(ctx: RequestContext, to: string, name: string, invitation: Invitation, existingAccount: boolean): void {
  const action = existingAccount
    ? 'Sign in and accept it under your invitations, or open this link and confirm with your password'
    : 'Choose a password to activate your account';
  mailAfterCommit(
    ctx,
    to,
    'You have been invited to rmm-service',
    `Hello ${name},\n\nYou have been invited to rmm-service. ${action}:\n\n${invitation.url}\n\nThe link works once and expires in 7 days.\n`,
  );
}

/**
 * A new membership reaches no further than its inviter's: a partner user limited to selected
 * organizations passes the limit on, as does an organization user limited to some sites.
 */
function inheritedLimits(principal: Principal, target: MembershipTarget): Partial<Pick<Membership, 'orgAccess' | 'orgIds' | 'siteIds'>> {
  if (target.scope === 'partner' && principal.scope === 'partner' && principal.orgAccess === 'selected') return { orgAccess: 'selected', orgIds: principal.orgIds };
  if (target.scope === 'organization' && principal.orgId === target.orgId && principal.siteIds.length > 0) return { siteIds: principal.siteIds };
  return {};
}

/**
 * `POST /users/invite`. A new email gets an account in status `invited` and a one-time link that sets
 * its password. An email that already has an account gets a `pending` membership: it grants nothing
 * until the account's owner accepts it, signed in (`POST /users/me/invitations/:id/accept`) or through
 * the link with their own password. Both answers look alike, so an invite reveals nothing about
 * accounts outside the inviter's reach.
 */
export async function inviteUser(ctx: RequestContext, rawInput: InviteUserInput): Promise<InviteResult> {
  const input = parseInput(InviteUserSchema, rawInput);
  const caller = requirePrincipal(ctx);
  const target: MembershipTarget =
    !input.orgId && caller.scope === 'partner'
      ? { scope: 'partner', orgId: null, partnerId: caller.partnerId }
      : { scope: 'organization', orgId: await targetOrgId(ctx, input.orgId), partnerId: null };
  const principal = await authorize(ctx, 'users:write', { orgId: target.orgId, partnerId: target.partnerId, resource: 'Organization' });
  const role = await assignableRole(ctx, input.roleId, target);
  const invitation = newInvitation(ctx);
  const result = await withTransaction(ctx, async (tx) => {
    let user = await tx.em.findOne(User, { email: input.email }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    const newAccount = !user;
    // An account this inviter's own tenants created and nobody has claimed yet is still theirs to extend.
    let ownUnclaimed = false;
    if (user) {
      const existing = await tx.em.find(Membership, { userId: user.id });
      if (existing.some((m) => m.orgId === target.orgId && (m.orgId !== null || m.partnerId === target.partnerId))) {
        throw conflict(`A user with this email already belongs to this ${target.scope === 'partner' ? 'partner' : 'organization'}`);
      }
      ownUnclaimed = user.status === 'invited' && existing.every((m) => m.status === 'active') && (await reachesAll(tx, principal, existing));
      if (ownUnclaimed) Object.assign(user, { inviteTokenHash: invitation.tokenHash, inviteExpiresAt: invitation.expiresAt });
    } else {
      user = tx.em.create(User, { email: input.email, name: input.name, status: 'invited', inviteTokenHash: invitation.tokenHash, inviteExpiresAt: invitation.expiresAt });
    }
    const pending = !newAccount && !ownUnclaimed;
    const membership = tx.em.create(Membership, {
      userId: user.id,
      ...target,
      roleId: role.id,
      ...inheritedLimits(principal, target),
      ...(pending ? { status: 'pending', inviteTokenHash: invitation.tokenHash, inviteExpiresAt: invitation.expiresAt, invitedName: input.name } : {}),
    });
    await tx.em.flush();
    await recordChange(
      tx,
      {
        action: 'user.invite',
        resourceType: 'user',
        resourceId: user.id,
        orgId: target.orgId,
        partnerId: target.partnerId,
        changes: newAccount ? ['email', 'name', 'roleId'] : ['roleId'],
        details: { email: user.email, membershipId: membership.id, roleId: role.id, newAccount },
      },
      { userId: user.id, email: user.email, roleId: role.id, partnerId: target.partnerId, newAccount },
    );
    return { user, membership };
  });
  invitationMail(ctx, result.user.email, input.name, invitation, result.membership.status === 'pending');
  return { user: userView(result.user, result.membership), inviteUrl: invitation.url };
}

/**
 * A new link for an invitation not accepted yet (a new account's, or a pending membership's); the
 * previous link stops working.
 */
export async function resendInvite(ctx: RequestContext, rawInput: z.input<typeof ResendInviteSchema>): Promise<InviteResult> {
  const input = parseInput(ResendInviteSchema, rawInput);
  const invitation = newInvitation(ctx);
  const target = await withTransaction(ctx, async (tx) => {
    const found = await loadManagedUser(tx, input.userId, 'users:write', true);
    const pending = found.managed.find((m) => m.status === 'pending');
    if (pending) {
      await assertOutranks(tx, found.principal, [pending]);
      Object.assign(pending, { inviteTokenHash: invitation.tokenHash, inviteExpiresAt: invitation.expiresAt });
    } else {
      if (found.user.status !== 'invited') throw conflict(`Only invited users can get a new invitation (this user is ${found.user.status})`);
      await assertAccountControl(tx, found);
      Object.assign(found.user, { inviteTokenHash: invitation.tokenHash, inviteExpiresAt: invitation.expiresAt });
    }
    await tx.em.flush();
    const membership = pending ?? found.primary;
    await recordAudit(tx, {
      action: 'user.invite.resend',
      resourceType: 'user',
      resourceId: found.user.id,
      ...tenantOf(membership),
      changes: ['inviteExpiresAt'],
      details: { email: found.user.email, membershipId: membership?.id ?? null },
    });
    return { user: found.user, membership };
  });
  invitationMail(ctx, target.user.email, userView(target.user, target.membership).name, invitation, target.membership?.status === 'pending');
  return { user: userView(target.user, target.membership), inviteUrl: invitation.url };
}

/**
 * `POST /auth/accept-invite` (public: the token is the credential). A new account's token sets the
 * password, activates the account and starts a session through its first membership. A pending
 * membership's token accepts that membership, and only with the account's own password (so the
 * inviter, who holds the link too, cannot); accounts with MFA then take the second step as at login.
 */
export async function acceptInvite(ctx: RequestContext, rawInput: AcceptInviteInput): Promise<AuthSession> {
  skipAuthorization(ctx, 'the invitation token is the credential');
  const input = parseInput(AcceptInviteSchema, rawInput);
  const tokenHash = sha256Hex(input.token);
  const pending = await ctx.em.findOne(Membership, { inviteTokenHash: tokenHash, status: 'pending' });
  if (pending) return acceptMembershipWithPassword(ctx, pending, input);
  const { password } = parseInput(NewPassword, { password: input.password });
  const passwordHash = await hashPassword(password);
  return withTransaction(ctx, async (tx) => {
    // The row lock makes a token good once even when two requests present it together.
    const user = await tx.em.findOne(User, { inviteTokenHash: tokenHash }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
    if (!user || user.status !== 'invited' || !user.inviteExpiresAt || user.inviteExpiresAt <= new Date()) throw badRequest(INVALID_INVITATION);
    const membership = await tx.em.findOne(Membership, { userId: user.id, status: 'active' }, { orderBy: MEMBERSHIP_ORDER });
    if (!membership) throw badRequest(INVALID_INVITATION);
    // A password would be a way around the organization's enforced SSO: the invitation is accepted by signing in through the IdP instead.
    if (!(await passwordLoginAllowed(tx.em, membership))) throw forbidden(`${SSO_ENFORCED}: accept the invitation by signing in with your identity provider`);
    Object.assign(user, { passwordHash, status: 'active', inviteTokenHash: null, inviteExpiresAt: null });
    await tx.em.flush();
    await recordChange(
      tx,
      { action: 'user.invite.accept', resourceType: 'user', resourceId: user.id, ...tenantOf(membership), changes: ['passwordHash', 'status'], details: { email: user.email } },
      { userId: user.id, email: user.email },
    );
    const session = await issueSession(tx, user, membership, { method: 'password', mfa: false });
    return { ...session, user: userView(user, membership) };
  });
}

/**
 * The link of a pending membership: a wrong password answers like a wrong token; an account with MFA
 * gives its code in the same request.
 */
async function acceptMembershipWithPassword(ctx: RequestContext, pending: Membership, input: z.output<typeof AcceptInviteSchema>): Promise<AuthSession> {
  const user = await ctx.em.findOne(User, { id: pending.userId });
  // The inviter holds the link too: a wrong password counts like a failed login, so the link is no way to guess it.
  if (!user || user.status !== 'active' || !(await checkOwnPassword(ctx, user, input.password, 'user.membership.accept'))) throw badRequest(INVALID_INVITATION);
  if (!(await passwordLoginAllowed(ctx.em, pending))) throw forbidden(`${SSO_ENFORCED}: sign in and accept the invitation under your invitations`);
  return withTransaction(ctx, async (tx) => {
    const locked = await tx.em.findOneOrFail(User, { id: user.id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
    const membership = await lockPendingMembership(tx, { inviteTokenHash: pending.inviteTokenHash, userId: user.id });
    if (!membership) throw badRequest(INVALID_INVITATION);
    if (locked.mfaEnabled && !(input.code && (await consumeSecondFactor(tx, locked, input.code)))) throw badRequest('Invalid MFA code');
    await activateMembership(tx, locked, membership);
    return { ...(await issueSession(tx, locked, membership, { method: 'password', mfa: locked.mfaEnabled })), user: userView(locked, membership) };
  });
}

/** A pending membership not yet expired, locked so it is accepted once; null otherwise. */
async function lockPendingMembership(tx: RequestContext, where: FilterQuery<Membership>): Promise<Membership | null> {
  const membership = await tx.em.findOne(Membership, { ...(where as object), status: 'pending' }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
  return membership?.inviteExpiresAt && membership.inviteExpiresAt > new Date() ? membership : null;
}

async function activateMembership(tx: RequestContext, user: User, membership: Membership): Promise<void> {
  Object.assign(membership, { status: 'active', inviteTokenHash: null, inviteExpiresAt: null, invitedName: null });
  await tx.em.flush();
  await recordChange(
    tx,
    { action: 'user.membership.accept', resourceType: 'user', resourceId: user.id, ...tenantOf(membership), changes: ['status'], details: { email: user.email, membershipId: membership.id } },
    { userId: user.id, membershipId: membership.id, partnerId: membership.partnerId },
  );
}

// ---------------------------------------------------------------------------------------------------------
// The caller's own invitations: pending memberships another tenant offered to this account

/** `GET /users/me/invitations`: pending memberships not yet expired, newest first. */
export async function listMyInvitations(ctx: RequestContext): Promise<z.output<typeof InvitationListSchema>> {
  const principal = sessionUser(ctx);
  if (principal.sessionMethod === 'sso') return { data: [] };
  const rows = (await ctx.em.execute(
    `select m.id, m.scope, m.partner_id, m.org_id, m.role_id, r.name as role_name, m.created_at, m.invite_expires_at,
            coalesce(o.name, p.name) as tenant_name
       from membership m
       join role r on r.id = m.role_id
       left join organization o on o.id = m.org_id
       left join partner p on p.id = m.partner_id
      where m.user_id = ? and m.status = 'pending' and m.invite_expires_at > now()
      order by m.created_at desc, m.id`,
    [principal.userId],
  )) as { id: string; scope: Scope; partner_id: string | null; org_id: string | null; role_id: string; role_name: string; created_at: Date; invite_expires_at: Date | null; tenant_name: string | null }[];
  return {
    data: rows.map((r) => ({
      id: r.id,
      scope: r.scope,
      partnerId: r.partner_id,
      orgId: r.org_id,
      tenantName: r.tenant_name ?? '',
      roleId: r.role_id,
      roleName: r.role_name,
      invitedAt: new Date(r.created_at).toISOString(),
      expiresAt: r.invite_expires_at ? new Date(r.invite_expires_at).toISOString() : null,
    })),
  };
}

/**
 * `POST /users/me/invitations/:id/accept`: the signed-in owner joins the tenant. A session started
 * through an organization's IdP proves that IdP's word, not the account's own credentials, so it
 * needs the account's password as well when the account has one.
 */
export async function acceptMyInvitation(ctx: RequestContext, id: string, rawInput: AcceptMyInvitationInput): Promise<MembershipView> {
  const input = parseInput(AcceptMyInvitationSchema, rawInput);
  const principal = sessionUser(ctx);
  await proveOwnCredentials(ctx, principal, input.currentPassword, 'user.membership.accept');
  return withTransaction(ctx, async (tx) => {
    const user = await tx.em.findOneOrFail(User, { id: principal.userId });
    const membership = isUuid(id) ? await lockPendingMembership(tx, { id, userId: user.id }) : null;
    if (!membership) throw notFound('Invitation');
    await activateMembership(tx, user, membership);
    return membershipView(membership, await rolesOf(tx, [membership]));
  });
}

/** `POST /users/me/invitations/:id/decline`: the pending membership is removed. */
export async function declineMyInvitation(ctx: RequestContext, id: string): Promise<void> {
  const principal = sessionUser(ctx);
  await withTransaction(ctx, async (tx) => {
    const membership = isUuid(id) ? await tx.em.findOne(Membership, { id, userId: principal.userId, status: 'pending' }) : null;
    if (!membership) throw notFound('Invitation');
    await tx.em.nativeDelete(Membership, { id: membership.id });
    await recordChange(
      tx,
      { action: 'user.membership.decline', resourceType: 'user', resourceId: principal.userId, ...tenantOf(membership), details: { membershipId: membership.id } },
      { userId: principal.userId, membershipId: membership.id, partnerId: membership.partnerId },
    );
  });
}
