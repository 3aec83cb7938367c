import type { OpenApiRegistry } from '../src/http/openapi.js';
import {
  CloneRoleSchema,
  CreateRoleSchema,
  EffectivePermissionsViewSchema,
  PermissionCatalogViewSchema,
  RoleListQuery,
  RolePageSchema,
  RoleViewSchema,
  UpdateRoleSchema,
  availablePermissions,
  cloneRole,
  createRole,
  deleteRole,
  effectivePermissions,
  getRole,
  listRoles,
  updateRole,
} from '../src/services/identity/roles.js';
import { UserPageSchema } from '../src/services/identity/user-view.js';
import { RoleUsersQuery, listRoleUsers } from '../src/services/identity/users.js';
import { RestRouter, pathId } from './router.js';

/** System and custom roles, and the permission catalog. Writes need an MFA session. */
export function rolesRouter(openapi: OpenApiRegistry): RestRouter {
  const r = new RestRouter(openapi, 'Roles');
  const role = { id: pathId('Role') };

  r.get('/roles', { summary: 'List the roles the caller sees', query: RoleListQuery, response: RolePageSchema }, (ctx, { query }) => listRoles(ctx, query));
  r.post('/roles', { summary: 'Create a custom role', body: CreateRoleSchema, status: 201, response: RoleViewSchema }, (ctx, { body }) => createRole(ctx, body));
  r.get('/roles/permissions/available', { summary: 'The permission catalog', response: PermissionCatalogViewSchema }, (ctx) => availablePermissions(ctx));
  r.get('/roles/:id', { summary: 'Get a role', params: role, response: RoleViewSchema }, (ctx, { params }) => getRole(ctx, params.id));
  r.patch('/roles/:id', { summary: 'Update a custom role', params: role, body: UpdateRoleSchema, response: RoleViewSchema }, (ctx, { params, body }) => updateRole(ctx, params.id, body));
  r.delete('/roles/:id', { summary: 'Delete a custom role nobody holds', params: role, status: 204 }, (ctx, { params }) => deleteRole(ctx, params.id));
  r.post('/roles/:id/clone', { summary: "Copy a role as a custom role of the caller's organization or partner", params: role, body: CloneRoleSchema, status: 201, response: RoleViewSchema }, (ctx, { params, body }) =>
    cloneRole(ctx, params.id, body),
  );
  r.get('/roles/:id/users', { summary: 'Members holding the role', params: role, query: RoleUsersQuery, response: UserPageSchema }, (ctx, { params, query }) => listRoleUsers(ctx, params.id, query));
  r.get('/roles/:id/effective-permissions', { summary: 'The catalog permissions the role grants, wildcards expanded', params: role, response: EffectivePermissionsViewSchema }, (ctx, { params }) =>
    effectivePermissions(ctx, params.id),
  );
  return r;
}
