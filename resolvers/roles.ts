import { FieldResolver, Resolver, Root } from 'type-graphql';
import { id, input, mutation, objectType, operations, pageArgs, query } from '../src/graphql/contract.js';
import {
  CloneRoleSchema,
  CreateRoleSchema,
  PermissionCatalogViewSchema,
  RoleListQuery,
  RolePageSchema,
  RoleViewSchema,
  UpdateRoleSchema,
  availablePermissions,
  cloneRole,
  createRole,
  deleteRole,
  effectivePermissionsAt,
  getRole,
  listRoles,
  updateRole,
  type RoleView,
} from '../src/services/identity/roles.js';
import { pageConnectionOf, paged } from './shared.js';

@Resolver(() => objectType('Role', RoleViewSchema))
export class RoleResolver extends operations({
  roles: query(pageConnectionOf(RolePageSchema), [pageArgs('RoleListArgs', RoleListQuery)], paged(listRoles), {
    description: 'System roles and the custom roles the caller sees.',
  }),
  role: query(RoleViewSchema, [id], getRole, { description: 'One role.' }),
  availablePermissions: query(PermissionCatalogViewSchema, [], availablePermissions, {
    description: 'Every permission a role can grant.',
  }),
  createRole: mutation(RoleViewSchema, [input('CreateRoleInput', CreateRoleSchema)], createRole, { description: 'Needs an MFA session.' }),
  updateRole: mutation(RoleViewSchema, [id, input('UpdateRoleInput', UpdateRoleSchema)], updateRole, { description: 'Custom roles only; needs an MFA session.' }),
  deleteRole: mutation(Boolean, [id], deleteRole, { description: 'Custom roles nobody holds; needs an MFA session.' }),
  cloneRole: mutation(RoleViewSchema, [id, input('CloneRoleInput', CloneRoleSchema, { nullable: true })], (ctx, role, clone) => cloneRole(ctx, role, clone ?? {}), {
    description: 'Needs an MFA session.',
  }),
}) {
  // Reads no request context, so it makes no access decision: it only expands what an authorized field loaded.
  @FieldResolver(() => [String], { description: 'The catalog permissions the role grants, wildcards expanded (REST `effective-permissions`).' })
  effectivePermissions(@Root() role: RoleView): string[] {
    return effectivePermissionsAt(role.scope, role.permissions);
  }
}
