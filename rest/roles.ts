import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as roles from '../src/services/identity/roles.js';
import * as userView from '../src/services/identity/user-view.js';
import * as users from '../src/services/identity/users.js';
import { call, pathId, RestRouter } from './router.js';

/** System and custom roles, and the permission catalog. Writes need an MFA session. */
export function rolesRouter(openapi: OpenApiRegistry): RestRouter {
  const r = new RestRouter(openapi, 'Roles');
  const role = { id: pathId('Role') };

  r.get('/roles', { summary: 'List the roles the caller sees', query: roles.RoleListQuery, response: roles.RolePageSchema }, call(roles.listRoles));
  r.post('/roles', { summary: 'Create a custom role', body: roles.CreateRoleSchema, status: 201, response: roles.RoleViewSchema }, call(roles.createRole));
  r.get('/roles/permissions/available', { summary: 'The permission catalog', response: roles.PermissionCatalogViewSchema }, call(roles.availablePermissions));
  r.get('/roles/:id', { summary: 'Get a role', params: role, response: roles.RoleViewSchema }, call(roles.getRole));
  r.patch('/roles/:id', { summary: 'Update a custom role', params: role, body: roles.UpdateRoleSchema, response: roles.RoleViewSchema }, call(roles.updateRole));
  r.delete('/roles/:id', { summary: 'Delete a custom role nobody holds', params: role, status: 204 }, call(roles.deleteRole));
  r.post('/roles/:id/clone', { summary: "Copy a role as a custom role of the caller's organization or partner", params: role, body: roles.CloneRoleSchema, status: 201, response: roles.RoleViewSchema }, call(roles.cloneRole));
  r.get('/roles/:id/users', { summary: 'Members holding the role', params: role, query: users.RoleUsersQuery, response: userView.UserPageSchema }, call(users.listRoleUsers));
  r.get('/roles/:id/effective-permissions', { summary: 'The catalog permissions the role grants, wildcards expanded', params: role, response: roles.EffectivePermissionsViewSchema }, call(roles.effectivePermissions));
  return r;
}
