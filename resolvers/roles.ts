import { FieldResolver, Resolver, Root } from 'type-graphql';
import { id, input, mutation, objectType, operations, pageArgs, query } from '../src/graphql/contract.js';
import * as roles from '../src/services/identity/roles.js';
import { pageConnectionOf, paged } from './shared.js';

@Resolver(() => objectType('Role', roles.RoleViewSchema))
export class RoleResolver extends operations({
  roles: query(pageConnectionOf(roles.RolePageSchema), [pageArgs('RoleListArgs', roles.RoleListQuery)], paged(roles.listRoles), {
    description: 'System roles and the custom roles the caller sees.',
  }),
  role: query(roles.RoleViewSchema, [id], roles.getRole, { description: 'One role.' }),
  availablePermissions: query(roles.PermissionCatalogViewSchema, [], roles.availablePermissions, {
    description: 'Every permission a role can grant.',
  }),
  createRole: mutation(roles.RoleViewSchema, [input('CreateRoleInput', roles.CreateRoleSchema)], roles.createRole, { description: 'Needs an MFA session.' }),
  updateRole: mutation(roles.RoleViewSchema, [id, input('UpdateRoleInput', roles.UpdateRoleSchema)], roles.updateRole, { description: 'Custom roles only; needs an MFA session.' }),
  deleteRole: mutation(Boolean, [id], roles.deleteRole, { description: 'Custom roles nobody holds; needs an MFA session.' }),
  cloneRole: mutation(roles.RoleViewSchema, [id, input('CloneRoleInput', roles.CloneRoleSchema, { nullable: true })], (ctx, role, clone) => roles.cloneRole(ctx, role, clone ?? {}), {
    description: 'Needs an MFA session.',
  }),
}) {
  // Reads no request context, so it makes no access decision: it only expands what an authorized field loaded.
  @FieldResolver(() => [String], { description: 'The catalog permissions the role grants, wildcards expanded (REST `effective-permissions`).' })
  effectivePermissions(@Root() role: roles.RoleView): string[] {
    return roles.effectivePermissionsAt(role.scope, role.permissions);
  }
}
