import { LockMode, type FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { Role, SCOPES, type Scope } from '../../../entities/role.js';
import { Membership } from '../../../entities/user.js';
import type { Principal, RequestContext } from '../../auth/context.js';
import { allPermissions, permissionCatalog, expandPermissions, isValidPermission, type Permission } from '../../auth/permissions.js';
import { authorize, canAccessOrg, canAccessPartner, isUuid, requirePrincipal, targetOrgId, tenantWhere } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { badRequest, conflict, forbidden, notFound } from '../../errors.js';
import { PageQuery, pageOptions, pageSchema, toPage, type Page } from '../../pagination.js';
import { enumValues, parseInput, timestamp, uuid } from '../../validation.js';
import { recordChange } from '../audit/api.js';


const PermissionList = z
  .array(z.string().max(100))
  .min(1)
  .max(200)
  .superRefine((list, check) => {
    const invalid = list.filter((p) => !isValidPermission(p));
    if (invalid.length > 0) check.addIssue({ code: 'custom', message: `unknown permissions: ${invalid.join(', ')}` });
  })
  .transform((list) => [...new Set(list)]);

const roleName = () => z.string().trim().min(1).max(255).describe('Display name: 1 to 255 characters, surrounding spaces trimmed.');
const description = () => z.string().trim().max(1000).nullable().optional().describe('What the role is for, up to 1000 characters; null clears it.');

/** Tenancy scopes, one GraphQL and OpenAPI enum. */
export const ScopeSchema = z
  .enum(SCOPES)
  .meta({ title: 'Scope', description: 'A level of the tenancy tree a role, membership or caller acts at.' })
  .register(enumValues, {
    system: 'The whole platform (platform administrators).',
    partner: 'A partner and, as its access allows, its organizations.',
    organization: 'One organization (and, when limited, some of its sites).',
  });

export const CreateRoleSchema = z
  .object({
    name: roleName(),
    // Custom roles are organization or partner roles; system roles are seeded.
    scope: z
      .enum(['partner', 'organization'])
      .meta({ title: 'CustomRoleScope', description: 'The level a custom role applies at.' })
      .register(enumValues, { partner: 'Held by partner members.', organization: 'Held by members of one organization.' })
      .describe('Who may hold the role: partner members or members of one organization.'),
    orgId: uuid().optional().describe('organization roles: the organization (organization callers: their own)'),
    permissions: PermissionList.describe('`resource:action` entries, `*` wildcards allowed; only permissions the caller holds'),
    description: description(),
    requireMfa: z.boolean().optional().describe('Whether members holding the role must sign in with a second factor (false by default).'),
  })
  .strict().describe('A new custom role: a named set of permissions members can be given.');
export type CreateRoleInput = z.input<typeof CreateRoleSchema>;

export const UpdateRoleSchema = z
  .object({
    name: roleName().optional(),
    permissions: PermissionList.optional().describe('Replaces the granted permissions: `resource:action` entries, `*` wildcards allowed; only permissions the caller holds.'),
    description: description(),
    requireMfa: z.boolean().optional().describe('Whether members holding the role must sign in with a second factor.'),
  })
  .strict().describe('Changes to a custom role; a field left out keeps its value.');
export type UpdateRoleInput = z.input<typeof UpdateRoleSchema>;

export const CloneRoleSchema = z
  .object({
    name: roleName().optional().describe('default: "<name> (copy)"'),
    orgId: uuid().optional().describe("clone into this organization; default: the caller's own organization or partner"),
  })
  .strict().describe('Where and under which name to copy a role.');
export type CloneRoleInput = z.input<typeof CloneRoleSchema>;

export const RoleListQuery = PageQuery.extend({ scope: ScopeSchema.optional().describe('Only roles of this level.') }).strict();
export type RoleListInput = z.input<typeof RoleListQuery>;

export const AssignableRolesQuery = z.object({ orgId: uuid().optional().describe('only roles that apply in this organization') }).strict();
export type AssignableRolesInput = z.input<typeof AssignableRolesQuery>;

export const RoleViewSchema = z
  .object({
    id: uuid().describe('Unique ID.'),
    name: z.string().describe('Display name.'),
    description: z.string().nullable().describe('What the role is for; null when none is set.'),
    scope: ScopeSchema.describe('The level the role applies at.'),
    partnerId: uuid().nullable().describe('The partner owning a custom role; null for system roles and organization roles.'),
    orgId: uuid().nullable().describe('The organization owning an organization role; null otherwise.'),
    permissions: z.array(z.string()).describe('as granted, wildcards included'),
    isSystem: z.boolean().describe('seeded and read-only'),
    requireMfa: z.boolean().describe('members must sign in with a second factor'),
    createdBy: uuid().nullable().describe('The user who created the role; null for system roles or when that user is gone.'),
    createdAt: timestamp().describe('When the role was created.'),
    updatedAt: timestamp().describe('When the role last changed.'),
  })
  .meta({ title: 'Role', description: 'A named set of permissions held through memberships: seeded system roles and custom roles.' });
export type RoleView = z.output<typeof RoleViewSchema>;
export const RolePageSchema = pageSchema(RoleViewSchema, 'RolePage');

export const PermissionCatalogViewSchema = z
  .object({
    resources: z.array(z.object({ resource: z.string().describe('A resource name, the part before the colon (devices, users, …).'), actions: z.array(z.string()).describe('Its actions (read, write, …).') }).meta({ title: 'PermissionResource', description: 'A resource and the actions a permission can name on it.' })).describe('The resources and the actions each takes.'),
    permissions: z.array(z.string()).describe('every `resource:action`'),
  })
  .meta({ title: 'PermissionCatalog', description: 'Every permission a role can grant, by resource.' });
export type PermissionCatalogView = z.output<typeof PermissionCatalogViewSchema>;

export const EffectivePermissionsViewSchema = z
  .object({ roleId: uuid(), permissions: z.array(z.string()).describe('the catalog permissions the role grants in its scope, wildcards expanded') })
  .meta({ title: 'EffectivePermissions' });
export type EffectivePermissionsView = z.output<typeof EffectivePermissionsViewSchema>;

export function roleView(role: Role): RoleView {
  return {
    id: role.id,
    name: role.name,
    description: role.description,
    scope: role.scope,
    partnerId: role.partnerId,
    orgId: role.orgId,
    permissions: role.permissions,
    isSystem: role.isSystem,
    requireMfa: role.requireMfa,
    createdBy: role.createdBy,
    createdAt: role.createdAt.toISOString(),
    updatedAt: role.updatedAt.toISOString(),
  };
}

// Partner records cannot be reached from inside one organization, so organization roles never carry those permissions in effect.
const OUTSIDE_SCOPE: Record<Scope, string[]> = { system: [], partner: [], organization: ['partners'] };

/** The catalog permissions a membership of `scope` actually gets from `granted`. */
export function effectivePermissionsAt(scope: Scope, granted: readonly string[]): Permission[] {
  return expandPermissions(granted).filter((p) => !OUTSIDE_SCOPE[scope].includes(p.split(':')[0]!));
}

/** Nobody hands out more than they hold: creating or editing a role, inviting, assigning or managing someone with a role. */
export function assertCanGrant(principal: Principal, scope: Scope, permissions: readonly string[], refusal = 'You cannot grant permissions you do not hold'): void {
  const held = new Set(expandPermissions(principal.permissions));
  const missing = effectivePermissionsAt(scope, permissions).filter((p) => !held.has(p));
  if (missing.length > 0) throw forbidden(`${refusal}: ${missing.join(', ')}`);
}

/** System roles a caller sees: those of its own scope and the scopes beneath it. */
function systemRoleScopes(scope: Scope): Scope[] {
  return SCOPES.slice(SCOPES.indexOf(scope));
}

/** A role the caller may see, with `permission` authorized on the role's tenant; anything else is 404. */
async function loadRole(ctx: RequestContext, id: string, permission: Permission, mfa = false): Promise<{ role: Role; principal: Principal }> {
  const caller = requirePrincipal(ctx);
  const role = isUuid(id) ? await ctx.em.findOne(Role, { id }) : null;
  if (!role || (role.isSystem && !systemRoleScopes(caller.scope).includes(role.scope))) throw notFound('Role');
  const principal = await authorize(ctx, permission, { orgId: role.orgId, partnerId: role.partnerId, mfa, resource: 'Role' });
  return { role, principal };
}

/** The roles a caller may see: fitting system roles, plus custom roles of its partner and of the organizations it can see. */
async function visibleRolesWhere(ctx: RequestContext, principal: Principal): Promise<FilterQuery<Role>> {
  const system: FilterQuery<Role> = { isSystem: true, scope: { $in: systemRoleScopes(principal.scope) } };
  if (principal.scope === 'system') return { $or: [system, { isSystem: false }] };
  const custom: FilterQuery<Role>[] = [{ $and: [{ isSystem: false }, (await tenantWhere<Role>(ctx, { org: 'orgId' })) ?? {}] }];
  if (principal.scope === 'partner') custom.push({ isSystem: false, scope: 'partner', partnerId: principal.partnerId });
  return { $or: [system, ...custom] };
}

const ROLE_ORDER = { isSystem: 'desc', scope: 'asc', name: 'asc', id: 'asc' } as const;

export async function listRoles(ctx: RequestContext, rawQuery: RoleListInput): Promise<Page<RoleView>> {
  const query = parseInput(RoleListQuery, rawQuery);
  const principal = await authorize(ctx, 'roles:read');
  const where: FilterQuery<Role> = { $and: [await visibleRolesWhere(ctx, principal), query.scope ? { scope: query.scope } : {}] };
  const [rows, total] = await ctx.em.findAndCount(Role, where, { orderBy: ROLE_ORDER, ...pageOptions(query) });
  return toPage(rows.map(roleView), total, query);
}

/**
 * `GET /users/roles`: the roles the caller could give someone (partner or organization roles it can
 * see and holds every permission of), optionally only those that apply in one organization.
 */
export async function assignableRoles(ctx: RequestContext, rawQuery: AssignableRolesInput): Promise<RoleView[]> {
  const query = parseInput(AssignableRolesQuery, rawQuery);
  const principal = await authorize(ctx, 'users:read', { orgId: query.orgId, resource: 'Organization' });
  const inOrg: FilterQuery<Role> = query.orgId ? { scope: 'organization', $or: [{ isSystem: true }, { orgId: query.orgId }] } : { scope: { $ne: 'system' } };
  const rows = await ctx.em.find(Role, { $and: [await visibleRolesWhere(ctx, principal), inOrg] }, { orderBy: ROLE_ORDER });
  const held = new Set(expandPermissions(principal.permissions));
  return rows.filter((role) => effectivePermissionsAt(role.scope, role.permissions).every((p) => held.has(p))).map(roleView);
}

export async function getRole(ctx: RequestContext, id: string): Promise<RoleView> {
  return roleView((await loadRole(ctx, id, 'roles:read')).role);
}

/** For the users service: the role the caller shows, with `roles:read` authorized (`GET /roles/:id/users`). */
export async function readableRole(ctx: RequestContext, id: string): Promise<Role> {
  return (await loadRole(ctx, id, 'roles:read')).role;
}

export async function effectivePermissions(ctx: RequestContext, id: string): Promise<EffectivePermissionsView> {
  const { role } = await loadRole(ctx, id, 'roles:read');
  return { roleId: role.id, permissions: effectivePermissionsAt(role.scope, role.permissions) };
}

export async function availablePermissions(ctx: RequestContext): Promise<PermissionCatalogView> {
  await authorize(ctx, 'roles:read');
  return {
    resources: Object.entries(permissionCatalog()).map(([resource, actions]) => ({ resource, actions: [...actions] })),
    permissions: [...allPermissions()],
  };
}

/** Where a membership lives: the role given to it must be of the same scope and, if custom, of the same tenant. */
export interface MembershipTarget {
  scope: Scope;
  orgId: string | null;
  partnerId: string | null;
}

/**
 * For invitations and role changes: a role the caller can see, that fits the membership, and that
 * grants nothing the caller lacks. Access to the membership itself is the caller's to authorize.
 */
export async function assignableRole(ctx: RequestContext, roleId: string, target: MembershipTarget): Promise<Role> {
  const principal = requirePrincipal(ctx);
  const role = isUuid(roleId) ? await ctx.em.findOne(Role, { id: roleId }) : null;
  const visible =
    role !== null &&
    (role.isSystem
      ? systemRoleScopes(principal.scope).includes(role.scope)
      : role.orgId
        ? await canAccessOrg(ctx, role.orgId)
        : role.partnerId !== null && canAccessPartner(principal, role.partnerId));
  if (!role || !visible) throw notFound('Role');
  const fits = role.scope === target.scope && (role.isSystem || (target.scope === 'organization' ? role.orgId === target.orgId : role.partnerId === target.partnerId));
  if (!fits) throw badRequest(`roleId: the role cannot be assigned here (${role.scope} role, ${target.scope} membership)`);
  assertCanGrant(principal, role.scope, role.permissions);
  return role;
}

/** Changed field names of an update, for the audit entry. */
function changedFields(role: Role, update: Record<string, unknown>): string[] {
  return Object.entries(update)
    .filter(([key, value]) => value !== undefined && JSON.stringify(value) !== JSON.stringify(role[key as keyof Role]))
    .map(([key]) => key);
}

export async function createRole(ctx: RequestContext, rawInput: CreateRoleInput): Promise<RoleView> {
  const input = parseInput(CreateRoleSchema, rawInput);
  let tenant: { orgId: string | null; partnerId: string | null };
  let principal: Principal;
  if (input.scope === 'organization') {
    const orgId = await targetOrgId(ctx, input.orgId);
    principal = await authorize(ctx, 'roles:write', { orgId, mfa: true, resource: 'Organization' });
    tenant = { orgId, partnerId: null };
  } else {
    principal = await authorize(ctx, 'roles:write', { mfa: true });
    if (input.orgId) throw badRequest('orgId: partner roles belong to the partner, not to an organization');
    if (principal.scope !== 'partner') throw forbidden('Partner roles are created by partner users');
    tenant = { orgId: null, partnerId: principal.partnerId };
  }
  assertCanGrant(principal, input.scope, input.permissions);
  return withTransaction(ctx, async (tx) => {
    const role = tx.em.create(Role, {
      name: input.name,
      scope: input.scope,
      ...tenant,
      permissions: input.permissions,
      description: input.description ?? null,
      requireMfa: input.requireMfa ?? false,
      createdBy: principal.userId,
    });
    await tx.em.flush();
    const fields = Object.keys(input).filter((k) => input[k as keyof typeof input] !== undefined);
    await recordChange(
      tx,
      { action: 'role.create', resourceType: 'role', resourceId: role.id, orgId: role.orgId, partnerId: role.partnerId, changes: fields },
      { roleId: role.id, name: role.name, scope: role.scope },
    );
    return roleView(role);
  });
}

export async function updateRole(ctx: RequestContext, id: string, rawInput: UpdateRoleInput): Promise<RoleView> {
  const input = parseInput(UpdateRoleSchema, rawInput);
  const { role: found, principal } = await loadRole(ctx, id, 'roles:write', true);
  if (found.isSystem) throw forbidden('System roles cannot be changed');
  return withTransaction(ctx, async (tx) => {
    const role = await tx.em.findOneOrFail(Role, { id: found.id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    // Editing a role more powerful than yourself (even renaming it) is out of reach, like granting it.
    assertCanGrant(principal, role.scope, input.permissions ?? role.permissions);
    const changes = changedFields(role, input);
    // A PATCH that changes nothing is not a mutation: no audit row, no event.
    if (changes.length === 0) return roleView(role);
    tx.em.assign(role, Object.fromEntries(changes.map((key) => [key, input[key as keyof typeof input]])));
    await tx.em.flush();
    await recordChange(
      tx,
      { action: 'role.update', resourceType: 'role', resourceId: role.id, orgId: role.orgId, partnerId: role.partnerId, changes },
      { roleId: role.id, name: role.name, scope: role.scope, changes },
    );
    return roleView(role);
  });
}

export async function deleteRole(ctx: RequestContext, id: string): Promise<void> {
  const { role } = await loadRole(ctx, id, 'roles:delete', true);
  if (role.isSystem) throw forbidden('System roles cannot be changed');
  await withTransaction(ctx, async (tx) => {
    const assigned = await tx.em.count(Membership, { roleId: role.id });
    if (assigned > 0) throw conflict(`The role is still assigned to ${assigned} member${assigned === 1 ? '' : 's'}`, { assigned });
    await tx.em.nativeDelete(Role, { id: role.id });
    await recordChange(
      tx,
      { action: 'role.delete', resourceType: 'role', resourceId: role.id, orgId: role.orgId, partnerId: role.partnerId, details: { name: role.name } },
      { roleId: role.id, name: role.name, scope: role.scope },
    );
  });
}

/**
 * A custom copy of any role the caller sees (system roles included). It lands in the caller's own
 * tenant: organization callers' organization, partner callers' partner, or the organization named
 * by `orgId` (required of platform administrators).
 */
export async function cloneRole(ctx: RequestContext, id: string, rawInput: CloneRoleInput): Promise<RoleView> {
  const input = parseInput(CloneRoleSchema, rawInput);
  const { role: source, principal: caller } = await loadRole(ctx, id, 'roles:read');
  const asPartnerRole = caller.scope === 'partner' && !input.orgId;
  const orgId = asPartnerRole ? null : await targetOrgId(ctx, input.orgId);
  const principal = await authorize(ctx, 'roles:write', { orgId, partnerId: asPartnerRole ? caller.partnerId : null, mfa: true, resource: 'Organization' });
  const scope: Scope = asPartnerRole ? 'partner' : 'organization';
  assertCanGrant(principal, scope, source.permissions);
  return withTransaction(ctx, async (tx) => {
    const role = tx.em.create(Role, {
      name: input.name ?? `${source.name} (copy)`,
      scope,
      orgId,
      partnerId: asPartnerRole ? principal.partnerId : null,
      permissions: source.permissions,
      description: source.description,
      requireMfa: source.requireMfa,
      createdBy: principal.userId,
    });
    await tx.em.flush();
    await recordChange(
      tx,
      {
        action: 'role.clone',
        resourceType: 'role',
        resourceId: role.id,
        orgId: role.orgId,
        partnerId: role.partnerId,
        changes: ['name', 'scope', 'permissions', 'description', 'requireMfa'],
        details: { sourceRoleId: source.id },
      },
      { roleId: role.id, name: role.name, scope: role.scope, clonedFrom: source.id },
    );
    return roleView(role);
  });
}
