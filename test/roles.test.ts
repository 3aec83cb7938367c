import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import { auditOf, sql } from './support/db.js';
import { buildOrg, buildPartner, buildRole, buildUser, systemRole, type RoleChoice } from './support/factories.js';

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => {
  await app.stop();
});

const AUDIT_COLUMNS = ['action', 'org_id', 'actor_id', 'changes', 'details'];

const ORG_ADMIN = systemRole('Organization Admin');
const ORG_TECHNICIAN = systemRole('Organization Technician');

/** Organization A with a user (holding `as`) and a custom role; organization B (another partner) with its own custom role. */
async function twoOrgs(as: RoleChoice) {
  const orgA = await buildOrg(app);
  const orgB = await buildOrg(app);
  const userA = await buildUser(app, { orgId: orgA.id, ...as });
  const roleA = await buildRole(app, { scope: 'organization', orgId: orgA.id, permissions: ['devices:read'] });
  const roleB = await buildRole(app, { scope: 'organization', orgId: orgB.id, permissions: ['devices:read'] });
  return { orgA, orgB, userA, roleA, roleB };
}

describe('reading roles', () => {
  test('an organization user sees the organization system roles and its own custom roles only', async () => {
    const { userA, roleA, roleB } = await twoOrgs({ role: 'Organization Viewer' });
    const api = rest(app, userA.as);
    const list = await api.get('/roles');
    expect(list.status).toBe(200);
    const ids = list.body.data.map((r: any) => r.id);
    expect(ids).toEqual([ORG_ADMIN, ORG_TECHNICIAN, systemRole('Organization Viewer'), roleA.id]);
    expect(list.body.pagination).toEqual({ page: 1, limit: 100, total: 4 });
    expect(ids).not.toContain(roleB.id);
    expect((await api.get('/roles?scope=partner')).body.data).toEqual([]);
    expect((await api.get('/roles?scope=nope')).status).toBe(400);

    expect((await api.get(`/roles/${ORG_TECHNICIAN}`)).body).toMatchObject({ name: 'Organization Technician', isSystem: true, scope: 'organization' });
    expect((await api.get(`/roles/${systemRole('Platform Admin')}`)).status).toBe(404);
    const effective = await api.get(`/roles/${ORG_TECHNICIAN}/effective-permissions`);
    expect(effective.body.roleId).toBe(ORG_TECHNICIAN);
    expect(effective.body.permissions).toEqual(expect.arrayContaining(['devices:read', 'devices:execute', 'alerts:write', 'users:read']));
    expect(effective.body.permissions).not.toContain('users:write');
  });

  test('the permission catalog', async () => {
    const { userA } = await twoOrgs({ role: 'Organization Viewer' });
    const res = await rest(app, userA.as).get('/roles/permissions/available');
    expect(res.status).toBe(200);
    expect(res.body.resources).toContainEqual({ resource: 'roles', actions: ['read', 'write', 'delete'] });
    expect(res.body.permissions).toContain('devices:execute');
  });

  test('members holding a role, as far as the caller reaches', async () => {
    const { orgA, orgB, userA } = await twoOrgs({ role: 'Organization Viewer' });
    const techA = await buildUser(app, { orgId: orgA.id, role: 'Organization Technician' });
    const techB = await buildUser(app, { orgId: orgB.id, role: 'Organization Technician' });
    const res = await rest(app, userA.as).get(`/roles/${ORG_TECHNICIAN}/users`);
    expect(res.status).toBe(200);
    expect(res.body.data.map((u: any) => u.id)).toEqual([techA.user.id]);
    expect(res.body.data.map((u: any) => u.id)).not.toContain(techB.user.id);
  });
});

describe('custom roles', () => {
  test('create, read, update, clone and delete, each audited', async () => {
    // granting devices:read and alerts:* takes holding them; moving the holder to roleA takes users:write
    const { orgA, userA, roleA } = await twoOrgs({ can: ['roles:read', 'roles:write', 'roles:delete', 'users:write', 'devices:read', 'alerts:read', 'alerts:write'] });
    const api = rest(app, userA.as);
    const created = await api.post('/roles', { name: 'Helpdesk', scope: 'organization', permissions: ['devices:read', 'alerts:*'], description: 'First line' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      name: 'Helpdesk',
      scope: 'organization',
      orgId: orgA.id,
      partnerId: null,
      permissions: ['devices:read', 'alerts:*'],
      isSystem: false,
      requireMfa: false,
      createdBy: userA.user.id,
    });
    const id = created.body.id;
    expect((await api.get(`/roles/${id}`)).body).toEqual(created.body);
    expect((await api.get(`/roles/${id}/effective-permissions`)).body).toEqual({ roleId: id, permissions: ['devices:read', 'alerts:read', 'alerts:write'] });

    const patched = await api.patch(`/roles/${id}`, { name: 'Helpdesk L1', permissions: ['devices:read'], description: 'First line' });
    expect(patched).toMatchObject({ status: 200, body: { name: 'Helpdesk L1', permissions: ['devices:read'] } });

    const clone = await api.post(`/roles/${id}/clone`, {});
    expect(clone).toMatchObject({ status: 201, body: { name: 'Helpdesk L1 (copy)', orgId: orgA.id, permissions: ['devices:read'], isSystem: false } });

    // still held by someone: refused
    const holder = await buildUser(app, { orgId: orgA.id, role: id });
    expect(await api.delete(`/roles/${id}`)).toMatchObject({ status: 409, body: { code: 'CONFLICT' } });
    expect((await api.post(`/users/${holder.user.id}/role`, { roleId: roleA.id })).status).toBe(200);
    expect((await api.delete(`/roles/${id}`)).status).toBe(204);
    expect((await api.get(`/roles/${id}`)).status).toBe(404);

    expect(await auditOf(app, id, AUDIT_COLUMNS, { successOnly: true })).toEqual([
      { action: 'role.create', org_id: orgA.id, actor_id: userA.user.id, changes: ['name', 'scope', 'permissions', 'description'], details: {} },
      // the description was sent unchanged: only what changed is listed
      { action: 'role.update', org_id: orgA.id, actor_id: userA.user.id, changes: ['name', 'permissions'], details: {} },
      { action: 'role.delete', org_id: orgA.id, actor_id: userA.user.id, changes: [], details: { name: 'Helpdesk L1' } },
    ]);
    expect(await auditOf(app, clone.body.id, AUDIT_COLUMNS, { successOnly: true })).toEqual([
      { action: 'role.clone', org_id: orgA.id, actor_id: userA.user.id, changes: ['name', 'scope', 'permissions', 'description', 'requireMfa'], details: { sourceRoleId: id } },
    ]);
    expect(await sql(app, `select type from outbox_event where data->>'roleId' = ? order by created_at`, [id])).toEqual([
      { type: 'role.created' },
      { type: 'role.updated' },
      { type: 'role.deleted' },
    ]);
  });

  test('a custom role grants only what its creator holds; permissions must exist', async () => {
    // the highest organization role, which still lacks organizations:delete
    const { userA, roleA } = await twoOrgs({ role: 'Organization Admin' });
    const api = rest(app, userA.as);
    expect(await api.post('/roles', { name: 'Too much', scope: 'organization', permissions: ['devices:read', 'organizations:delete', 'api_keys:*'] })).toMatchObject({
      status: 403,
      body: { code: 'FORBIDDEN', message: 'You cannot grant permissions you do not hold: organizations:delete' },
    });
    expect(await api.patch(`/roles/${roleA.id}`, { permissions: ['*'] })).toMatchObject({ status: 403, body: { code: 'FORBIDDEN' } });
    expect(await api.post('/roles', { name: 'Bogus', scope: 'organization', permissions: ['devices:fly', 'nothing'] })).toMatchObject({
      status: 400,
      body: { code: 'VALIDATION_ERROR', message: 'permissions: unknown permissions: devices:fly, nothing' },
    });
    expect((await api.post('/roles', { name: 'X', scope: 'organization', permissions: ['devices:read'], isSystem: true })).status).toBe(400);
    // organization users create organization roles only
    expect(await api.post('/roles', { name: 'P', scope: 'partner', permissions: ['devices:read'] })).toMatchObject({ status: 403 });
    // the Viewer's `*:read` includes partners:read, which means nothing inside an organization: it can be cloned
    expect((await api.post(`/roles/${systemRole('Organization Viewer')}/clone`, { name: 'Readers' })).status).toBe(201);
  });

  test('system roles are read-only', async () => {
    const { userA } = await twoOrgs({ can: ['roles:write', 'roles:delete'] });
    const api = rest(app, userA.as);
    for (const res of [await api.patch(`/roles/${ORG_TECHNICIAN}`, { name: 'Mine now' }), await api.delete(`/roles/${ORG_TECHNICIAN}`)]) {
      expect(res).toMatchObject({ status: 403, body: { code: 'FORBIDDEN', message: 'System roles cannot be changed' } });
    }
    expect((await sql(app, `select name from role where id = ?`, [ORG_TECHNICIAN]))[0].name).toBe('Organization Technician');
  });

  test('role writes need an MFA session', async () => {
    const { orgA, roleA } = await twoOrgs({ role: 'Organization Viewer' });
    const noMfa = await buildUser(app, { orgId: orgA.id, can: ['roles:read', 'roles:write', 'roles:delete', 'users:write'], mfa: false });
    const tech = await buildUser(app, { orgId: orgA.id, role: 'Organization Technician' });
    const api = rest(app, noMfa.as);
    for (const res of [
      await api.post('/roles', { name: 'N', scope: 'organization', permissions: ['devices:read'] }),
      await api.patch(`/roles/${roleA.id}`, { name: 'N' }),
      await api.delete(`/roles/${roleA.id}`),
      await api.post(`/roles/${roleA.id}/clone`, {}),
      await api.post(`/users/${tech.user.id}/role`, { roleId: roleA.id }),
    ]) {
      expect(res).toMatchObject({ status: 403, body: { code: 'MFA_REQUIRED' } });
    }
    // reading needs no second factor
    expect((await api.get(`/roles/${roleA.id}`)).status).toBe(200);
    const denied = await sql(app, `select count(*)::int as n from audit_log where action = 'access.denied' and actor_id = ? and details->>'reason' = 'mfa_required'`, [noMfa.user.id]);
    expect(denied[0].n).toBe(5);
  });

  test('partner users create partner roles and organization roles in their organizations', async () => {
    const partner = await buildPartner(app);
    const org = await buildOrg(app, { partnerId: partner.id });
    const member = await buildUser(app, { partnerId: partner.id, can: ['roles:read', 'roles:write', 'devices:read', 'devices:write', 'devices:delete', 'devices:execute'] });
    const api = rest(app, member.as);
    const partnerRole = await api.post('/roles', { name: 'Dispatch', scope: 'partner', permissions: ['devices:*'] });
    expect(partnerRole).toMatchObject({ status: 201, body: { scope: 'partner', partnerId: partner.id, orgId: null } });
    expect(await api.post('/roles', { name: 'Local', scope: 'organization', permissions: ['devices:read'] })).toMatchObject({
      status: 400,
      body: { message: 'Organization context required' },
    });
    const orgRole = await api.post('/roles', { name: 'Local', scope: 'organization', orgId: org.id, permissions: ['devices:read'] });
    expect(orgRole).toMatchObject({ status: 201, body: { orgId: org.id } });
    const ids = (await api.get('/roles')).body.data.map((r: any) => r.id);
    expect(ids).toEqual(expect.arrayContaining([systemRole('Partner Admin'), ORG_ADMIN, partnerRole.body.id, orgRole.body.id]));
    expect(ids).not.toContain(systemRole('Platform Admin'));
    // an organization user of that partner does not see the partner's own roles
    const orgUser = await buildUser(app, { orgId: org.id, role: 'Organization Viewer' });
    expect((await rest(app, orgUser.as).get(`/roles/${partnerRole.body.id}`)).status).toBe(404);
  });
});

describe('tenancy', () => {
  test('an organization user cannot read, change, clone, delete or list another organization’s roles (REST)', async () => {
    // everything these requests need on the organization's own roles: each 404 comes from the tenant
    const { userA, roleA, roleB } = await twoOrgs({ can: ['roles:read', 'roles:write', 'roles:delete', 'users:read', 'users:write', 'devices:read'] });
    const api = rest(app, userA.as);
    for (const res of [
      await api.get(`/roles/${roleB.id}`),
      await api.patch(`/roles/${roleB.id}`, { name: 'Hijacked' }),
      await api.delete(`/roles/${roleB.id}`),
      await api.post(`/roles/${roleB.id}/clone`, {}),
      await api.get(`/roles/${roleB.id}/users`),
      await api.get(`/roles/${roleB.id}/effective-permissions`),
    ]) {
      expect(res).toMatchObject({ status: 404, body: { code: 'NOT_FOUND', message: 'Role not found' } });
    }
    expect((await api.get('/roles')).body.data.map((r: any) => r.id)).not.toContain(roleB.id);
    expect((await sql(app, `select name from role where id = ?`, [roleB.id]))[0].name).toBe(roleB.name);
    // nor assign it to one of its own users
    const holderA = await buildUser(app, { orgId: userA.membership.orgId!, role: roleA.id });
    expect((await api.post(`/users/${holderA.user.id}/role`, { roleId: roleB.id })).status).toBe(404);
  });

  test('… nor over GraphQL', async () => {
    const { userA, roleB } = await twoOrgs({ can: ['roles:read', 'roles:write', 'roles:delete'] });
    const list = await gql(app, userA.as, '{ roles { data { id } } }');
    expect(list.body.data.roles.data.map((r: any) => r.id)).not.toContain(roleB.id);
    for (const query of [
      `{ role(id: "${roleB.id}") { id } }`,
      `mutation { updateRole(id: "${roleB.id}", input: { name: "Hijacked" }) { id } }`,
      `mutation { deleteRole(id: "${roleB.id}") }`,
      `mutation { cloneRole(id: "${roleB.id}") { id } }`,
    ]) {
      const res = await gql(app, userA.as, query);
      expect(res.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    }
  });
});

describe('GraphQL', () => {
  test('roles, role, catalog, create, update, clone and delete', async () => {
    const { orgA, userA } = await twoOrgs({ can: ['roles:read', 'roles:write', 'roles:delete', 'alerts:read', 'alerts:write'] });
    const created = await gql(app, userA.as, `mutation($input: CreateRoleInput!) { createRole(input: $input) { id orgId permissions effectivePermissions } }`, {
      input: { name: 'Night shift', scope: 'organization', permissions: ['alerts:*'] },
    });
    const role = created.body.data.createRole;
    expect(role).toEqual({ id: expect.any(String), orgId: orgA.id, permissions: ['alerts:*'], effectivePermissions: ['alerts:read', 'alerts:write'] });
    const listed = await gql(app, userA.as, '{ roles(scope: organization) { data { name isSystem } pagination { total } } }');
    expect(listed.body.data.roles.data).toContainEqual({ name: 'Night shift', isSystem: false });
    expect((await gql(app, userA.as, `{ role(id: "${role.id}") { name } }`)).body.data.role).toEqual({ name: 'Night shift' });
    const catalog = await gql(app, userA.as, '{ availablePermissions { resources { resource actions } permissions } }');
    expect(catalog.body.data.availablePermissions.permissions).toContain('roles:write');

    const updated = await gql(app, userA.as, `mutation { updateRole(id: "${role.id}", input: { requireMfa: true }) { requireMfa } }`);
    expect(updated.body.data.updateRole).toEqual({ requireMfa: true });
    const cloned = await gql(app, userA.as, `mutation { cloneRole(id: "${role.id}", input: { name: "Day shift" }) { name requireMfa } }`);
    expect(cloned.body.data.cloneRole).toEqual({ name: 'Day shift', requireMfa: true });
    const tooMuch = await gql(app, userA.as, `mutation { updateRole(id: "${role.id}", input: { permissions: ["organizations:delete"] }) { id } }`);
    expect(tooMuch.body.errors?.[0]).toMatchObject({ message: 'You cannot grant permissions you do not hold: organizations:delete', extensions: { code: 'FORBIDDEN' } });
    const system = await gql(app, userA.as, `mutation { deleteRole(id: "${ORG_ADMIN}") }`);
    expect(system.body.errors?.[0]).toMatchObject({ message: 'System roles cannot be changed', extensions: { code: 'FORBIDDEN' } });
    expect((await gql(app, userA.as, `mutation { deleteRole(id: "${role.id}") }`)).body.data).toEqual({ deleteRole: true });
    expect((await auditOf(app, role.id, AUDIT_COLUMNS, { successOnly: true })).map((a) => a.action)).toEqual(['role.create', 'role.update', 'role.delete']);
  });
});
