import { LockMode } from '@mikro-orm/core';
import { z } from 'zod';
import { Organization } from '../../../entities/organization.js';
import { Role } from '../../../entities/role.js';
import { Site } from '../../../entities/site.js';
import { Membership, User } from '../../../entities/user.js';
import type { Principal, RequestContext } from '../../auth/context.js';
import { authenticated, authorize, canAccessOrg, canAccessPartner, isUuid, requirePrincipal, tenantSql } from '../../auth/policy.js';
import type { Permission } from '../../auth/permissions.js';
import { requestRows, statement } from '../../db/prepared.js';
import { lookupCoalescer } from '../../db/coalesce.js';
import { withTransaction } from '../../db/transaction.js';
import { badRequest, forbidden, notFound, unauthenticated } from '../../errors.js';
import { onePer } from '../../memo.js';
import { PageQuery, pageOptions, toPage, type Page } from '../../pagination.js';
import type { Runtime } from '../../runtime.js';
import { enumValues, parseInput, uuid } from '../../validation.js';
import { recordChange } from '../audit/api.js';
import { ScopeSchema, assertCanGrant, assignableRole, effectivePermissionsAt, readableRole } from './roles.js';
import { UserStatusSchema, UserViewSchema, userView, type MembershipFields, type UserFields, type UserView } from './user-view.js';
import { containsPattern } from '../../db/like.js';

export const email = () => z.email({ message: 'must be an email address' }).max(255).toLowerCase().describe('Email address, up to 255 characters (stored lowercase).');
export const personName = () => z.string().trim().min(1).max(255).describe('Full name: 1 to 255 characters, surrounding spaces trimmed.');
const ids = () => z.array(uuid()).max(1000).transform((list) => [...new Set(list)]);

const OrgAccessSchema = z.enum(['all', 'selected']).meta({
  title: 'OrgAccess',
  description: "Which of its partner's organizations a partner membership reaches."
}).register(enumValues, { all: 'Every organization of the partner, present and future.', selected: 'Only the organizations in orgIds.' });

export const UpdateUserSchema = z
  .object({
    name: personName().optional(),
    status: z
      .enum(['active', 'disabled'])
      .meta({ title: 'UserStatusChange', description: 'A status an administrator may set.' })
      .register(enumValues, { active: 'Lets the user sign in again.', disabled: 'Stops the user signing in and ends their sessions.' })
      .optional()
      .describe('Enables or disables the user.'),
    orgAccess: OrgAccessSchema.optional().describe('partner members: every organization of the partner, or only orgIds'),
    orgIds: ids().optional().describe('Partner members with orgAccess selected: the organizations they reach.'),
    siteIds: ids().optional().describe('organization members: limited to these sites (empty: every site)'),
  })
  .strict().describe('Changes to a user and the membership the caller manages; a field left out keeps its value.');
export type UpdateUserInput = z.input<typeof UpdateUserSchema>;

export const UpdateMeSchema = z.object({ name: personName() }).strict().describe('Changes to the caller\'s own profile.');
export type UpdateMeInput = z.input<typeof UpdateMeSchema>;

export const SetUserRoleSchema = z.object({ roleId: uuid() }).strict();

export const UserListQuery = PageQuery.extend({
  orgId: uuid().optional().describe('Only users with a membership in this organization.'),
  status: UserStatusSchema.optional().describe('Only users in this state.'),
  search: z.string().trim().min(1).max(255).optional().describe('part of the name or email'),
  roleId: uuid().optional().describe('Only users holding this role.'),
}).strict();
export type UserListInput = z.input<typeof UserListQuery>;

export const RoleUsersQuery = PageQuery.strict();

export const MembershipViewSchema = z
  .object({
    id: uuid().describe('Unique ID of the membership (what switchMembership takes).'),
    scope: ScopeSchema.describe('The level the membership acts at.'),
    partnerId: uuid().nullable().describe('The partner of a partner membership; null otherwise.'),
    orgId: uuid().nullable().describe('The organization of an organization membership; null otherwise.'),
    roleId: uuid().describe('The role held.'),
    roleName: z.string().describe('Its display name.'),
    orgAccess: OrgAccessSchema.describe('partner memberships: all or selected organizations'),
    orgIds: z.array(uuid()).describe('Partner memberships with orgAccess selected: the organizations reached.'),
    siteIds: z.array(uuid()).describe('organization memberships: limited to these sites (empty: every site)'),
    status: z
      .enum(['active', 'pending'])
      .meta({ title: 'MembershipStatus', description: 'Whether a membership grants anything yet.' })
      .register(enumValues, { active: 'Grants its role.', pending: 'An invitation the user has not accepted: grants nothing.' })
      .describe('pending: an invitation not accepted yet'),
  })
  .meta({ title: 'Membership', description: 'A user\'s place in a tenant: the role they hold there and what it reaches.' });
export type MembershipView = z.output<typeof MembershipViewSchema>;

/** `GET /users/me`: the caller, what it may do through the current membership, and every membership it holds. */
export const MeViewSchema = UserViewSchema.extend({
  permissions: z.array(z.string()).describe('the catalog permissions of the current session, wildcards expanded'),
  memberships: z.array(MembershipViewSchema).describe('Every membership the caller holds, pending invitations included.'),
}).meta({ title: 'Me', description: 'The caller (REST `GET /users/me`).' });
export type MeView = z.output<typeof MeViewSchema>;

export const MEMBERSHIP_ORDER = { createdAt: 'asc', id: 'asc' } as const;

/** Whether the caller reaches a membership: through its organization, its partner, or (system rows) only as a system caller. */
async function reaches(ctx: RequestContext, principal: Principal, membership: Membership): Promise<boolean> {
  if (membership.orgId) return canAccessOrg(ctx, membership.orgId);
  if (membership.partnerId) return canAccessPartner(principal, membership.partnerId);
  return principal.scope === 'system';
}

export async function reachesAll(ctx: RequestContext, principal: Principal, memberships: Membership[]): Promise<boolean> {
  for (const m of memberships) if (!(await reaches(ctx, principal, m))) return false;
  return true;
}

/**
 * The membership a user is shown and managed through: an active one before a pending invitation, one
 * at the caller's own level if any (a partner member's partner row), else the oldest.
 */
function primaryMembership<M extends Pick<Membership, 'status' | 'scope'>>(principal: Principal, memberships: M[]): M | null {
  const ordered = [...memberships.filter((m) => m.status === 'active'), ...memberships.filter((m) => m.status !== 'active')];
  return ordered.find((m) => m.scope === principal.scope) ?? ordered[0] ?? null;
}

/** authorize() options for acting on a membership's tenant. */
export function tenantOf(membership: Membership | null): { orgId: string | null; partnerId: string | null } {
  if (!membership) return { orgId: null, partnerId: null };
  return membership.orgId ? { orgId: membership.orgId, partnerId: null } : { orgId: null, partnerId: membership.partnerId };
}

interface ManagedUser {
  user: User;
  principal: Principal;
  /** every membership of the user */
  all: Membership[];
  /** those the caller reaches */
  managed: Membership[];
  primary: Membership | null;
}

/**
 * A user the caller reaches through at least one membership (any user, for system callers), with
 * `permission` authorized on that membership's tenant; others are 404. Pass `lock` inside a
 * transaction that changes the user.
 */
export async function loadManagedUser(ctx: RequestContext, id: string, permission: Permission, lock = false): Promise<ManagedUser> {
  const caller = requirePrincipal(ctx);
  const user = isUuid(id) ? await ctx.em.findOne(User, { id }, lock ? { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true } : {}) : null;
  if (!user) throw notFound('User');
  const all = await ctx.em.find(Membership, { userId: user.id }, { orderBy: MEMBERSHIP_ORDER });
  const managed: Membership[] = [];
  for (const membership of all) if (await reaches(ctx, caller, membership)) managed.push(membership);
  if (managed.length === 0 && caller.scope !== 'system') throw notFound('User');
  const primary = primaryMembership(caller, managed);
  const principal = await authorize(ctx, permission, { ...tenantOf(primary), resource: 'User' });
  return { user, principal, all, managed, primary };
}

export async function rolesOf(ctx: RequestContext, memberships: Membership[]): Promise<Map<string, Role>> {
  const roles = await ctx.em.find(Role, { id: { $in: [...new Set(memberships.map((m) => m.roleId))] } });
  return new Map(roles.map((r) => [r.id, r]));
}

/**
 * Nobody removes or changes the access of someone whose role grants more than they hold, or whose
 * reach is wider than theirs: a partner member limited to selected organizations, or an organization
 * member limited to some sites, only manages members limited at least as narrowly.
 */
export async function assertOutranks(ctx: RequestContext, principal: Principal, memberships: Membership[]): Promise<void> {
  const roles = await rolesOf(ctx, memberships);
  for (const m of memberships) {
    assertCanGrant(principal, m.scope, roles.get(m.roleId)?.permissions ?? [], 'You cannot manage a user whose role grants permissions you do not hold');
    if (!reachCovers(principal, m)) throw forbidden('You cannot manage a user whose access reaches further than yours');
  }
}

function reachCovers(principal: Principal, m: Membership): boolean {
  const within = (limited: string[], mine: string[]) => limited.length > 0 && limited.every((id) => mine.includes(id));
  if (m.scope === 'partner' && principal.scope === 'partner' && principal.orgAccess === 'selected') {
    return m.orgAccess === 'selected' && (m.orgIds.length === 0 || m.orgIds.every((id) => principal.orgIds.includes(id)));
  }
  if (m.scope === 'organization' && principal.scope === 'organization' && principal.siteIds.length > 0) return within(m.siteIds, principal.siteIds);
  return true;
}

/**
 * The account itself (name, status, a new invitation link) is shared by every tenant the person
 * belongs to: changing it takes managing all of their memberships, and outranking each.
 */
export async function assertAccountControl(ctx: RequestContext, target: ManagedUser): Promise<void> {
  if (target.managed.length < target.all.length) {
    throw forbidden('This user also belongs to another organization or partner: only their membership here can be changed');
  }
  // An invitation the owner has not accepted gives the inviter no say over the account.
  if (target.managed.some((m) => m.status === 'pending')) throw forbidden('This user has not accepted the invitation yet: only the invitation can be changed');
  await assertOutranks(ctx, target.principal, target.managed);
}

export function membershipView(membership: Membership, roles: Map<string, Role>): MembershipView {
  return {
    id: membership.id,
    scope: membership.scope,
    partnerId: membership.partnerId,
    orgId: membership.orgId,
    roleId: membership.roleId,
    roleName: roles.get(membership.roleId)?.name ?? '',
    orgAccess: membership.orgAccess,
    orgIds: membership.orgIds,
    siteIds: membership.siteIds,
    status: membership.status,
  };
}

// ---------------------------------------------------------------------------------------------------------
// Reads

// The hot reads below (the caller's own profile, the user list) are hand-written statements whose rows
// become views directly: no entities are hydrated for data that is only shown.

const USER_COLUMNS = `u.id, u.email, u.name, u.status, u.mfa_enabled as "mfaEnabled", u.last_login_at as "lastLoginAt",
  u.created_at as "createdAt", u.updated_at as "updatedAt"`;
const MEMBERSHIP_JSON = `'id', m.id, 'userId', m.user_id, 'scope', m.scope, 'partnerId', m.partner_id, 'orgId', m.org_id, 'roleId', m.role_id,
  'orgAccess', m.org_access, 'orgIds', m.org_ids, 'siteIds', m.site_ids, 'status', m.status, 'invitedName', m.invited_name,
  'createdAt', m.created_at, 'updatedAt', m.updated_at`;

/** Timestamps arrive as text (PostgreSQL's, as the ORM's driver is set up, or ISO inside JSON), which Date parses. */
const date = (value: string | Date) => new Date(value);
function userRow<T extends UserFields>(row: T): T {
  return { ...row, createdAt: date(row.createdAt), updatedAt: date(row.updatedAt), lastLoginAt: row.lastLoginAt && date(row.lastLoginAt) };
}
function membershipRow(row: MembershipRow): MembershipRow {
  return { ...row, createdAt: date(row.createdAt), updatedAt: date(row.updatedAt) };
}

/** What a list row carries of one reached membership (null columns: the user has none the list reaches). */
interface ListedMembership {
  mStatus: Membership['status'] | null;
  mScope: Membership['scope'] | null;
  mInvitedName: string | null;
  mCreatedAt: string | null;
  mUpdatedAt: string | null;
  mPartnerId: string | null;
  mOrgId: string | null;
  mRoleId: string | null;
}

/** A membership as the lean reads return it (with its role's name where the read joins it). */
type MembershipRow = MembershipFields &
  Pick<Membership, 'id' | 'userId' | 'scope' | 'orgAccess' | 'orgIds' | 'siteIds' | 'status'> & { roleName?: string | null };

function membershipRowView(m: MembershipRow): MembershipView {
  return {
    id: m.id,
    scope: m.scope,
    partnerId: m.partnerId,
    orgId: m.orgId,
    roleId: m.roleId,
    roleName: m.roleName ?? '',
    orgAccess: m.orgAccess,
    orgIds: m.orgIds,
    siteIds: m.siteIds,
    status: m.status,
  };
}

/** Users and their memberships (with their roles' names), all of them or the one given, for the `/users/me` of every request that arrived together. */
const ME = statement(`select k.n, ${USER_COLUMNS}, coalesce(json_agg(json_build_object(${MEMBERSHIP_JSON}, 'roleName', r.name) order by m.created_at, m.id)
    filter (where m.id is not null), '[]') as memberships
  from unnest(?::uuid[], ?::uuid[]) with ordinality as k(user_id, only_membership, n)
  join "user" u on u.id = k.user_id
  left join membership m on m.user_id = u.id and (k.only_membership is null or m.id = k.only_membership)
  left join role r on r.id = m.role_id
  group by k.n, u.id`);

type MeRow = UserFields & { memberships: MembershipRow[] };

/** Committed state, as the principal read just before it: the dashboard's most frequent read, shared between the requests of the moment (src/db/coalesce.ts). */
const meRows = onePer((runtime: Runtime) =>
  lookupCoalescer<{ userId: string; onlyMembership: string | null }, MeRow>(runtime.orm, ME, (keys) => [keys.map((k) => k.userId), keys.map((k) => k.onlyMembership)]),
);

export async function getMe(ctx: RequestContext): Promise<MeView> {
  const principal = authenticated(ctx);
  if (!principal.userId) throw unauthenticated();
  // An SSO session acts in its provider's organization only and carries nothing of the account's other tenants.
  const onlyMembership = principal.sessionMethod === 'sso' ? principal.membershipId : null;
  const row = await meRows(ctx.runtime).submit({ userId: principal.userId, onlyMembership });
  if (!row) throw unauthenticated();
  const { memberships, ...user } = row;
  const own = memberships.find((m) => m.id === principal.membershipId);
  return {
    ...userView(userRow(user), own ? membershipRow(own) : null),
    permissions: effectivePermissionsAt(principal.scope, principal.permissions),
    memberships: memberships.map(membershipRowView),
  };
}

async function userPage(ctx: RequestContext, principal: Principal, query: z.output<typeof UserListQuery>): Promise<Page<UserView>> {
  // The memberships the list reaches (null: all, for system callers), optionally within one organization.
  const reach = await tenantSql(ctx, { org: 'm.org_id', partner: 'm.partner_id', requestedOrgId: query.orgId });
  const membershipWhere = [...(reach ? [reach] : []), ...(query.roleId ? [{ sql: 'm.role_id = ?', params: [query.roleId] }] : [])];
  const reached = { sql: membershipWhere.map((c) => `(${c.sql})`).join(' and ') || 'true', params: membershipWhere.flatMap((c) => c.params) };
  const where: string[] = [];
  const params: unknown[] = [];
  if (membershipWhere.length > 0) {
    where.push(`u.id in (select m.user_id from membership m where ${reached.sql})`);
    params.push(...reached.params);
  }
  if (query.status) {
    where.push('u.status = ?');
    params.push(query.status);
  }
  if (query.search) {
    where.push('(u.email ilike ? or u.name ilike ?)');
    params.push(containsPattern(query.search), containsPattern(query.search));
  }
  const filter = where.length > 0 ? `where ${where.join(' and ')}` : '';
  const { limit, offset } = pageOptions(query);
  // One statement: the page of users with the total riding along, a row for each membership the list
  // reaches (what the view shows of it, as plain columns; the primary one is picked below). A page past
  // the end has no row to carry the total, so it is counted apart.
  const page = statement(
    `select p.*, m.status as "mStatus", m.scope as "mScope", m.invited_name as "mInvitedName", m.created_at as "mCreatedAt",
        m.updated_at as "mUpdatedAt", m.partner_id as "mPartnerId", m.org_id as "mOrgId", m.role_id as "mRoleId"
     from (select ${USER_COLUMNS}, count(*) over () as "total" from "user" u ${filter} order by u.name asc, u.id asc limit ? offset ?) p
     left join membership m on m.user_id = p.id and ${reached.sql}
     order by p.name asc, p.id asc, m.created_at, m.id`,
  );
  const rows = await requestRows<UserFields & { total: string } & ListedMembership>(ctx.em, page, [...params, limit, offset, ...reached.params]);
  const total = Number(
    rows.length > 0 ? rows[0]!.total : (await requestRows<{ total: string }>(ctx.em, statement(`select count(*) as "total" from "user" u ${filter}`), params))[0]!.total,
  );
  // Rows come grouped by user, in page order.
  const users = new Map<string, { user: UserFields; memberships: MembershipFields[] }>();
  for (const { total: _total, mStatus, mScope, mInvitedName, mCreatedAt, mUpdatedAt, mPartnerId, mOrgId, mRoleId, ...user } of rows) {
    let listed = users.get(user.id);
    if (!listed) users.set(user.id, (listed = { user: userRow(user), memberships: [] }));
    if (mStatus !== null) {
      listed.memberships.push({ status: mStatus, scope: mScope!, invitedName: mInvitedName, createdAt: date(mCreatedAt!), updatedAt: date(mUpdatedAt!), partnerId: mPartnerId, orgId: mOrgId, roleId: mRoleId! });
    }
  }
  return toPage(
    [...users.values()].map(({ user, memberships }) => userView(user, primaryMembership(principal, memberships))),
    total,
    query,
  );
}

/** Users with a membership the caller reaches; each shown through that membership (the one in `orgId`/`roleId` when filtered). */
export async function listUsers(ctx: RequestContext, rawQuery: UserListInput): Promise<Page<UserView>> {
  const query = parseInput(UserListQuery, rawQuery);
  const principal = await authorize(ctx, 'users:read', { orgId: query.orgId, resource: 'Organization' });
  return userPage(ctx, principal, query);
}

/** `GET /roles/:id/users`: the members holding a role, as far as the caller reaches. */
export async function listRoleUsers(ctx: RequestContext, roleId: string, rawQuery: z.input<typeof RoleUsersQuery>): Promise<Page<UserView>> {
  const query = parseInput(RoleUsersQuery, rawQuery);
  const role = await readableRole(ctx, roleId);
  const principal = await authorize(ctx, 'users:read');
  return userPage(ctx, principal, { ...query, roleId: role.id });
}

export async function getUser(ctx: RequestContext, id: string): Promise<UserView> {
  const { user, primary } = await loadManagedUser(ctx, id, 'users:read');
  return userView(user, primary);
}

// ---------------------------------------------------------------------------------------------------------
// Writes

export async function updateMe(ctx: RequestContext, rawInput: UpdateMeInput): Promise<UserView> {
  const input = parseInput(UpdateMeSchema, rawInput);
  const principal = authenticated(ctx);
  if (!principal.userId) throw unauthenticated();
  const userId = principal.userId;
  return withTransaction(ctx, async (tx) => {
    const user = await tx.em.findOneOrFail(User, { id: userId }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
    const membership = principal.membershipId ? await tx.em.findOne(Membership, { id: principal.membershipId }) : null;
    if (user.name === input.name) return userView(user, membership);
    user.name = input.name;
    await tx.em.flush();
    await recordChange(
      tx,
      { action: 'user.update', resourceType: 'user', resourceId: user.id, orgId: membership?.orgId, changes: ['name'], details: { self: true } },
      { userId: user.id, changes: ['name'] },
    );
    return userView(user, membership);
  });
}

/** Disabling ends every token at once and kills a pending invitation; re-enabling a never-used account makes it invited again. */
export function applyStatus(user: User, status: 'active' | 'disabled'): void {
  if (status === 'disabled') {
    Object.assign(user, { status: 'disabled', tokenVersion: user.tokenVersion + 1, inviteTokenHash: null, inviteExpiresAt: null });
  } else {
    user.status = user.passwordHash || user.lastLoginAt ? 'active' : 'invited';
  }
}

/**
 * `PATCH /users/:id`. `name` and `status` belong to the account (see assertAccountControl);
 * `orgAccess`/`orgIds` (partner members) and `siteIds` (organization members) to the membership the
 * caller manages, and reach no further than the caller's own.
 */
export async function updateUser(ctx: RequestContext, id: string, rawInput: UpdateUserInput): Promise<UserView> {
  const input = parseInput(UpdateUserSchema, rawInput);
  return withTransaction(ctx, async (tx) => {
    const target = await loadManagedUser(tx, id, 'users:write', true);
    const { user, principal, primary } = target;
    const changes: string[] = [];
    if (input.name !== undefined && input.name !== user.name) changes.push('name');
    if (input.status !== undefined && input.status !== user.status) {
      if (input.status === 'active' && user.status === 'invited') throw badRequest('status: an invited user becomes active by accepting the invitation');
      if (user.id === principal.userId) throw badRequest('You cannot disable yourself');
      changes.push('status');
    }
    if (changes.length > 0) await assertAccountControl(tx, target);

    const membershipChanges = await membershipUpdate(tx, principal, primary, input);
    if (membershipChanges.length > 0) {
      await assertOutranks(tx, principal, [primary!]);
      changes.push(...membershipChanges);
    }
    if (changes.length === 0) return userView(user, primary);

    if (changes.includes('name')) user.name = input.name!;
    if (changes.includes('status')) applyStatus(user, input.status!);
    for (const field of membershipChanges) Object.assign(primary!, { [field]: input[field as 'orgAccess' | 'orgIds' | 'siteIds'] });
    await tx.em.flush();
    await recordChange(tx, { action: 'user.update', resourceType: 'user', resourceId: user.id, ...tenantOf(primary), changes, details: { email: user.email } }, { userId: user.id, changes });
    return userView(user, primary);
  });
}

/** Validates the membership part of a PATCH and names the fields it changes. */
async function membershipUpdate(tx: RequestContext, principal: Principal, membership: Membership | null, input: z.output<typeof UpdateUserSchema>): Promise<string[]> {
  const changes: string[] = [];
  if (input.orgAccess !== undefined || input.orgIds !== undefined) {
    if (membership?.scope !== 'partner') throw badRequest('orgAccess: applies to partner members only');
    const orgAccess = input.orgAccess ?? membership.orgAccess;
    const orgIds = input.orgIds ?? membership.orgIds;
    if (principal.scope === 'partner' && principal.orgAccess === 'selected' && (orgAccess === 'all' || orgIds.some((o) => !principal.orgIds.includes(o)))) {
      throw forbidden('You cannot give access to organizations outside your own selection');
    }
    if ((await tx.em.count(Organization, { id: { $in: orgIds }, partnerId: membership.partnerId })) !== orgIds.length) {
      throw badRequest("orgIds: every organization must belong to the member's partner");
    }
    if (orgAccess !== membership.orgAccess) changes.push('orgAccess');
    if (JSON.stringify(orgIds) !== JSON.stringify(membership.orgIds)) changes.push('orgIds');
  }
  if (input.siteIds !== undefined) {
    if (membership?.scope !== 'organization') throw badRequest('siteIds: applies to organization members only');
    const limited = principal.orgId === membership.orgId && principal.siteIds.length > 0;
    if (limited && (input.siteIds.length === 0 || input.siteIds.some((s) => !principal.siteIds.includes(s)))) {
      throw forbidden('You cannot give access to sites outside your own');
    }
    if ((await tx.em.count(Site, { id: { $in: input.siteIds }, orgId: membership.orgId! })) !== input.siteIds.length) {
      throw badRequest("siteIds: every site must belong to the member's organization");
    }
    if (JSON.stringify(input.siteIds) !== JSON.stringify(membership.siteIds)) changes.push('siteIds');
  }
  return changes;
}

/** Removes the memberships the caller manages; the account goes with its last membership. */
export async function deleteUser(ctx: RequestContext, id: string): Promise<void> {
  await withTransaction(ctx, async (tx) => {
    const { user, principal, all, managed, primary } = await loadManagedUser(tx, id, 'users:delete', true);
    if (user.id === principal.userId) throw badRequest('You cannot delete yourself');
    await assertOutranks(tx, principal, managed);
    await tx.em.nativeDelete(Membership, { id: { $in: managed.map((m) => m.id) } });
    // Revoking an invitation never deletes the account it was sent to.
    const accountDeleted = managed.length === all.length && managed.every((m) => m.status === 'active');
    if (accountDeleted) await tx.em.nativeDelete(User, { id: user.id });
    await recordChange(
      tx,
      { action: 'user.delete', resourceType: 'user', resourceId: user.id, ...tenantOf(primary), details: { email: user.email, membershipIds: managed.map((m) => m.id), accountDeleted } },
      { userId: user.id, email: user.email, accountDeleted },
    );
  });
}

/** `POST /users/:id/role`: the role of the membership the caller manages. Needs `roles:write` with MFA as well as `users:write`. */
export async function setUserRole(ctx: RequestContext, id: string, rawInput: z.input<typeof SetUserRoleSchema>): Promise<UserView> {
  const input = parseInput(SetUserRoleSchema, rawInput);
  return withTransaction(ctx, async (tx) => {
    const { user, principal, primary } = await loadManagedUser(tx, id, 'users:write', true);
    await authorize(tx, 'roles:write', { ...tenantOf(primary), mfa: true, resource: 'User' });
    if (!primary) throw badRequest('The user has no membership to give a role');
    if (user.id === principal.userId) throw badRequest('You cannot change your own role');
    await assertOutranks(tx, principal, [primary]);
    const role = await assignableRole(tx, input.roleId, primary);
    if (role.id === primary.roleId) return userView(user, primary);
    const previousRoleId = primary.roleId;
    primary.roleId = role.id;
    await tx.em.flush();
    await recordChange(
      tx,
      {
        action: 'user.role.change',
        resourceType: 'user',
        resourceId: user.id,
        ...tenantOf(primary),
        changes: ['roleId'],
        details: { email: user.email, membershipId: primary.id, previousRoleId, roleId: role.id },
      },
      { userId: user.id, membershipId: primary.id, previousRoleId, roleId: role.id },
    );
    return userView(user, primary);
  });
}

