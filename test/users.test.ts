import crypto from 'node:crypto';
import net from 'node:net';
import { createTestApp, type TestApp } from './support/app.js';
import { gql, inviteToken, rest } from './support/clients.js';
import { auditOf, sql } from './support/db.js';
import { eventually } from './support/eventually.js';
import type { Permission } from '../src/auth/permissions.js';
import { buildOrg, buildPartner, buildRole, buildSite, buildUser, permissionsOf, systemRole, unique } from './support/factories.js';

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => {
  await app.stop();
});

const AUDIT_COLUMNS = ['action', 'org_id', 'actor_id', 'changes'];

const TECHNICIAN = systemRole('Organization Technician');
const VIEWER = systemRole('Organization Viewer');

/**
 * Who manages an organization's members: users:*, and what a Technician and a Viewer hold (nobody invites
 * or manages someone whose role grants more than they hold). Changing a member's role takes roles:write too.
 */
const USER_MANAGER: Permission[] = [...new Set([...permissionsOf('Organization Technician'), ...permissionsOf('Organization Viewer'), 'users:write', 'users:delete'] as const)];
const ROLE_SETTER: Permission[] = [...USER_MANAGER, 'roles:write'];

/** Two unrelated tenants: organization A (user manager holding `can`, technician) and organization B (the same). */
async function twoOrgs(can: Permission[] = USER_MANAGER) {
  const orgA = await buildOrg(app);
  const orgB = await buildOrg(app);
  const managerA = await buildUser(app, { orgId: orgA.id, can });
  const techA = await buildUser(app, { orgId: orgA.id, role: 'Organization Technician' });
  const managerB = await buildUser(app, { orgId: orgB.id, can });
  const techB = await buildUser(app, { orgId: orgB.id, role: 'Organization Technician' });
  return { orgA, orgB, managerA, techA, managerB, techB };
}

describe('the caller’s own profile', () => {
  test('GET /users/me answers the user, effective permissions and memberships; PATCH changes the name only', async () => {
    const org = await buildOrg(app);
    const me = await buildUser(app, { orgId: org.id, role: 'Organization Technician' });
    const api = rest(app, me.as);
    const res = await api.get('/users/me');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: me.user.id, email: me.user.email, status: 'active', scope: 'organization', orgId: org.id, roleId: TECHNICIAN });
    // the role's `devices:*` comes expanded
    expect(res.body.permissions).toEqual(expect.arrayContaining(['users:read', 'alerts:write', 'devices:execute']));
    expect(res.body.permissions).not.toContain('users:write');
    expect(res.body.memberships).toEqual([
      {
        id: me.membership.id,
        scope: 'organization',
        partnerId: null,
        orgId: org.id,
        roleId: TECHNICIAN,
        roleName: 'Organization Technician',
        orgAccess: 'all',
        orgIds: [],
        siteIds: [],
        status: 'active',
      },
    ]);
    expect(res.body).not.toHaveProperty('passwordHash');

    const patched = await api.patch('/users/me', { name: '  Ada Lovelace ' });
    expect(patched).toMatchObject({ status: 200, body: { id: me.user.id, name: 'Ada Lovelace' } });
    expect((await api.patch('/users/me', { name: 'X', email: 'other@example.test' })).body).toMatchObject({ code: 'VALIDATION_ERROR' });
    expect(await auditOf(app, me.user.id, AUDIT_COLUMNS, { successOnly: true })).toEqual([{ action: 'user.update', org_id: org.id, actor_id: me.user.id, changes: ['name'] }]);

    const gqlMe = await gql(app, me.as, '{ me { id name permissions memberships { roleName orgId } } }');
    expect(gqlMe.body.data.me).toMatchObject({ id: me.user.id, name: 'Ada Lovelace', memberships: [{ roleName: 'Organization Technician', orgId: org.id }] });
    const renamed = await gql(app, me.as, 'mutation { updateMe(input: { name: "Grace" }) { name } }');
    expect(renamed.body.data.updateMe).toEqual({ name: 'Grace' });
  });

  test('without credentials GET /users/me is 401', async () => {
    expect((await rest(app).get('/users/me')).status).toBe(401);
  });
});

describe('invitations', () => {
  test('invite → accept with the link’s token → the new user signs in with the chosen password', async () => {
    const { orgA, managerA } = await twoOrgs();
    const email = `New.Person.${unique()}@Example.test`;
    const invited = await rest(app, managerA.as).post('/users/invite', { email, name: 'New Person', roleId: TECHNICIAN, orgId: orgA.id });
    expect(invited.status).toBe(201);
    expect(invited.body.user).toMatchObject({ email: email.toLowerCase(), name: 'New Person', status: 'invited', orgId: orgA.id, roleId: TECHNICIAN });
    expect(invited.body.inviteUrl).toMatch(new RegExp(`^${app.server.runtime.config.publicUrl}/accept-invite\\?token=[\\w-]{40,}$`));
    const token = inviteToken(invited.body.inviteUrl);
    // only the token's SHA-256 is kept
    const [row] = await sql(app, `select invite_token_hash, invite_expires_at from "user" where id = ?`, [invited.body.user.id]);
    expect(row.invite_token_hash).toBe(crypto.createHash('sha256').update(token).digest('hex'));
    expect(new Date(row.invite_expires_at).getTime() - Date.now()).toBeGreaterThan(6.9 * 24 * 3600 * 1000);

    const tooShort = await rest(app).post('/auth/accept-invite', { token, password: 'short' });
    expect(tooShort).toMatchObject({ status: 400, body: { code: 'VALIDATION_ERROR' } });

    const password = 'a long enough password';
    const accepted = await rest(app).post('/auth/accept-invite', { token, password });
    expect(accepted.status).toBe(200);
    expect(accepted.body).toMatchObject({ accessToken: expect.any(String), refreshToken: expect.any(String), expiresIn: expect.any(Number), user: { status: 'active' } });
    const me = await rest(app, { token: accepted.body.accessToken }).get('/users/me');
    expect(me.body).toMatchObject({ email: email.toLowerCase(), orgId: orgA.id, memberships: [{ roleName: 'Organization Technician' }] });

    const login = await rest(app).post('/auth/login', { email, password });
    expect(login.status).toBe(200);
    expect(login.body.accessToken).toEqual(expect.any(String));

    // the token is good once
    expect(await rest(app).post('/auth/accept-invite', { token, password })).toMatchObject({
      status: 400,
      body: { code: 'VALIDATION_ERROR', message: 'Invalid or expired invitation' },
    });
    expect((await auditOf(app, invited.body.user.id, AUDIT_COLUMNS, { successOnly: true })).map((a) => a.action)).toEqual(['user.invite', 'user.invite.accept', 'auth.login', 'auth.login']);
    const events = await sql(app, `select type, org_id, data from outbox_event where data->>'userId' = ? and type like 'user.invite%' order by created_at`, [invited.body.user.id]);
    expect(events).toEqual([
      { type: 'user.invited', org_id: orgA.id, data: { userId: invited.body.user.id, email: email.toLowerCase(), roleId: TECHNICIAN, partnerId: null, newAccount: true } },
      { type: 'user.invite_accepted', org_id: orgA.id, data: { userId: invited.body.user.id, email: email.toLowerCase() } },
    ]);
  });

  test('an unknown or expired token is refused alike', async () => {
    const { orgA, managerA } = await twoOrgs();
    const invited = await rest(app, managerA.as).post('/users/invite', { email: `late-${unique()}@example.test`, name: 'Late', roleId: VIEWER, orgId: orgA.id });
    await sql(app, `update "user" set invite_expires_at = now() - interval '1 minute' where id = ?`, [invited.body.user.id]);
    for (const token of [inviteToken(invited.body.inviteUrl), 'no-such-token']) {
      expect(await rest(app).post('/auth/accept-invite', { token, password: 'a long enough password' })).toMatchObject({
        status: 400,
        body: { message: 'Invalid or expired invitation' },
      });
    }
  });

  test('resending gives a new link and kills the old one; an accepted user gets none', async () => {
    const { managerA } = await twoOrgs();
    const api = rest(app, managerA.as);
    const invited = await api.post('/users/invite', { email: `again-${unique()}@example.test`, name: 'Again', roleId: VIEWER });
    const resent = await api.post('/users/resend-invite', { userId: invited.body.user.id });
    expect(resent.status).toBe(200);
    expect(resent.body.inviteUrl).not.toBe(invited.body.inviteUrl);
    const password = 'a long enough password';
    expect((await rest(app).post('/auth/accept-invite', { token: inviteToken(invited.body.inviteUrl), password })).status).toBe(400);
    expect((await rest(app).post('/auth/accept-invite', { token: inviteToken(resent.body.inviteUrl), password })).status).toBe(200);
    expect(await api.post('/users/resend-invite', { userId: invited.body.user.id })).toMatchObject({ status: 409, body: { code: 'CONFLICT' } });
    expect((await auditOf(app, invited.body.user.id, AUDIT_COLUMNS, { successOnly: true })).map((a) => a.action)).toEqual(['user.invite', 'user.invite.resend', 'user.invite.accept', 'auth.login']);
  });

  test('input is validated: email address, unknown fields, duplicates in the organization', async () => {
    const { orgA, managerA, techA } = await twoOrgs();
    const api = rest(app, managerA.as);
    expect(await api.post('/users/invite', { email: 'not-an-email', name: 'X', roleId: VIEWER })).toMatchObject({
      status: 400,
      body: { code: 'VALIDATION_ERROR', message: 'email: must be an email address' },
    });
    expect(await api.post('/users/invite', { email: 'ok@example.test', name: 'X', roleId: VIEWER, status: 'active' })).toMatchObject({
      status: 400,
      body: { code: 'VALIDATION_ERROR' },
    });
    // existing email in the same organization, whatever its case
    expect(await api.post('/users/invite', { email: techA.user.email.toUpperCase(), name: 'Dup', roleId: VIEWER, orgId: orgA.id })).toMatchObject({
      status: 409,
      body: { code: 'CONFLICT' },
    });
  });

  test('nobody invites someone more powerful than themselves, or without users:write', async () => {
    const { orgA, managerA, techA } = await twoOrgs();
    const mighty = await buildRole(app, { scope: 'organization', orgId: orgA.id, permissions: ['organizations:delete', 'devices:read'] });
    const refused = await rest(app, managerA.as).post('/users/invite', { email: `m-${unique()}@example.test`, name: 'M', roleId: mighty.id });
    expect(refused).toMatchObject({ status: 403, body: { code: 'FORBIDDEN', message: 'You cannot grant permissions you do not hold: organizations:delete' } });
    const tech = await rest(app, techA.as).post('/users/invite', { email: `t-${unique()}@example.test`, name: 'T', roleId: VIEWER });
    expect(tech).toMatchObject({ status: 403, body: { code: 'FORBIDDEN' } });
    // a partner role does not fit an organization membership
    const partnerRole = await rest(app, managerA.as).post('/users/invite', { email: `p-${unique()}@example.test`, name: 'P', roleId: systemRole('Partner Viewer') });
    expect(partnerRole.status).toBe(404);
  });

  test('inviting someone who has an account elsewhere makes a pending membership that grants nothing until they accept', async () => {
    const { orgA, managerA, managerB, techA } = await twoOrgs();
    const added = await rest(app, managerB.as).post('/users/invite', { email: techA.user.email, name: 'As B Typed It', roleId: VIEWER });
    expect(added.status).toBe(201);
    expect(added.body).toMatchObject({ user: { id: techA.user.id, name: 'As B Typed It', status: 'invited', mfaEnabled: false, lastLoginAt: null, orgId: managerB.membership.orgId } });
    expect(added.body.inviteUrl).toMatch(/accept-invite\?token=/);
    const memberships = (await rest(app, techA.as).get('/users/me')).body.memberships;
    expect(memberships.map((m: { status: string }) => m.status).sort()).toEqual(['active', 'pending']);

    // B manages only its invitation: not the account, and revoking the invitation leaves the account alone
    expect(await rest(app, managerB.as).patch(`/users/${techA.user.id}`, { status: 'disabled' })).toMatchObject({ status: 403, body: { code: 'FORBIDDEN' } });
    expect(await rest(app, managerB.as).patch(`/users/${techA.user.id}`, { name: 'Renamed' })).toMatchObject({ status: 403, body: { code: 'FORBIDDEN' } });
    expect((await rest(app, managerB.as).delete(`/users/${techA.user.id}`)).status).toBe(204);
    expect((await rest(app, managerB.as).get(`/users/${techA.user.id}`)).status).toBe(404);
    expect((await rest(app, managerA.as).get(`/users/${techA.user.id}`)).body).toMatchObject({ id: techA.user.id, orgId: orgA.id, status: 'active' });
  });

  test('partner users invite partner-level members, limited to their own selection of organizations', async () => {
    const partner = await buildPartner(app);
    const org1 = await buildOrg(app, { partnerId: partner.id });
    const selected = await buildUser(app, { partnerId: partner.id, can: [...permissionsOf('Partner Technician'), 'users:write'], orgAccess: 'selected', orgIds: [org1.id] });
    const res = await rest(app, selected.as).post('/users/invite', { email: `pt-${unique()}@example.test`, name: 'Partner Tech', roleId: systemRole('Partner Technician') });
    expect(res.status).toBe(201);
    expect(res.body.user).toMatchObject({ scope: 'partner', partnerId: partner.id, orgId: null });
    const [membership] = await sql(app, `select org_access, org_ids from membership where user_id = ?`, [res.body.user.id]);
    expect(membership).toEqual({ org_access: 'selected', org_ids: [org1.id] });
  });

  test('with SMTP configured the invitation is emailed with its link', async () => {
    const smtp = await fakeSmtpServer();
    const mailing = await createTestApp({ env: { SMTP_URL: `smtp://127.0.0.1:${smtp.port}`, SMTP_FROM: 'rmm <rmm@example.test>' } });
    try {
      const org = await buildOrg(mailing);
      const inviter = await buildUser(mailing, { orgId: org.id, can: [...permissionsOf('Organization Viewer'), 'users:write'] });
      const res = await rest(mailing, inviter.as).post('/users/invite', { email: 'mailed@example.test', name: 'Mailed', roleId: VIEWER });
      expect(res.status).toBe(201);
      const message = await eventually(() => smtp.messages[0], 10_000, 'the invitation email');
      expect(message.to).toEqual(['<mailed@example.test>']);
      // quoted-printable may fold long lines with a trailing `=`
      expect(message.data.replace(/=\r\n/g, '').replace(/=3D/g, '=')).toContain(res.body.inviteUrl);
    } finally {
      await mailing.stop();
      smtp.close();
    }
  });
});

describe('managing users', () => {
  test('list with filters and pages; read one; role assignable list', async () => {
    const { orgA, managerA, techA } = await twoOrgs();
    const api = rest(app, managerA.as);
    const list = await api.get('/users');
    expect(list.status).toBe(200);
    expect(list.body.data.map((u: any) => u.id).sort()).toEqual([managerA.user.id, techA.user.id].sort());
    expect(list.body.pagination).toEqual({ page: 1, limit: 100, total: 2 });
    expect((await api.get(`/users?roleId=${TECHNICIAN}`)).body.data.map((u: any) => u.id)).toEqual([techA.user.id]);
    expect((await api.get(`/users?search=${techA.user.email.slice(0, 12)}`)).body.data.map((u: any) => u.id)).toEqual([techA.user.id]);
    expect((await api.get('/users?status=disabled')).body.data).toEqual([]);
    expect((await api.get('/users?limit=1&page=2')).body).toMatchObject({ data: [expect.any(Object)], pagination: { page: 2, limit: 1, total: 2 } });
    expect((await api.get('/users?sort=name')).status).toBe(400);

    expect((await api.get(`/users/${techA.user.id}`)).body).toMatchObject({ id: techA.user.id, orgId: orgA.id, roleId: TECHNICIAN });

    const custom = await buildRole(app, { scope: 'organization', orgId: orgA.id, permissions: ['devices:read'] });
    const tooMuch = await buildRole(app, { scope: 'organization', orgId: orgA.id, permissions: ['organizations:delete'] });
    const roles = await api.get('/users/roles');
    const names = roles.body.data.map((r: any) => r.id);
    expect(names).toEqual(expect.arrayContaining([TECHNICIAN, VIEWER, custom.id]));
    // roles granting what the caller does not hold are not offered
    expect(names).not.toContain(tooMuch.id);
    expect(names).not.toContain(systemRole('Organization Admin'));
    expect(names).not.toContain(systemRole('Partner Admin'));
  });

  test('disabling a user ends their sessions at once; nobody disables or deletes themselves', async () => {
    const { managerA, techA } = await twoOrgs();
    const api = rest(app, managerA.as);
    expect((await rest(app, techA.as).get('/users/me')).status).toBe(200);
    const disabled = await api.patch(`/users/${techA.user.id}`, { status: 'disabled' });
    expect(disabled).toMatchObject({ status: 200, body: { status: 'disabled' } });
    expect(await rest(app, techA.as).get('/users/me')).toMatchObject({ status: 401, body: { code: 'UNAUTHENTICATED' } });
    expect((await api.patch(`/users/${techA.user.id}`, { status: 'active', name: 'Back' })).body).toMatchObject({ status: 'active', name: 'Back' });
    // enabled again, the account needs a new sign-in: the old token stays dead
    expect((await rest(app, techA.as).get('/users/me')).status).toBe(401);
    expect((await rest(app).post('/auth/login', { email: techA.user.email, password: techA.password })).status).toBe(200);

    expect(await api.patch(`/users/${managerA.user.id}`, { status: 'disabled' })).toMatchObject({ status: 400, body: { message: 'You cannot disable yourself' } });
    expect(await api.delete(`/users/${managerA.user.id}`)).toMatchObject({ status: 400, body: { message: 'You cannot delete yourself' } });
    expect(await api.patch(`/users/${techA.user.id}`, { email: 'x@example.test' })).toMatchObject({ status: 400, body: { code: 'VALIDATION_ERROR' } });
    expect(await auditOf(app, techA.user.id, AUDIT_COLUMNS, { successOnly: true })).toEqual([
      { action: 'user.update', org_id: managerA.membership.orgId, actor_id: managerA.user.id, changes: ['status'] },
      { action: 'user.update', org_id: managerA.membership.orgId, actor_id: managerA.user.id, changes: ['name', 'status'] },
      { action: 'auth.login', org_id: managerA.membership.orgId, actor_id: techA.user.id, changes: [] },
    ]);
  });

  test('site limits: only sites of the member’s organization', async () => {
    const { orgA, orgB, managerA, techA } = await twoOrgs();
    const siteA = await buildSite(app, orgA.id);
    const siteB = await buildSite(app, orgB.id);
    const api = rest(app, managerA.as);
    expect((await api.patch(`/users/${techA.user.id}`, { siteIds: [siteA.id] })).status).toBe(200);
    expect((await rest(app, techA.as).get('/users/me')).body.memberships[0].siteIds).toEqual([siteA.id]);
    expect((await api.patch(`/users/${techA.user.id}`, { siteIds: [siteB.id] })).status).toBe(400);
    expect((await api.patch(`/users/${techA.user.id}`, { orgAccess: 'selected' })).status).toBe(400);
  });

  test('changing a role needs an MFA session and cannot reach above the caller', async () => {
    const { orgA, techA } = await twoOrgs();
    const noMfa = await buildUser(app, { orgId: orgA.id, can: ['users:write', 'roles:write'], mfa: false });
    expect(await rest(app, noMfa.as).post(`/users/${techA.user.id}/role`, { roleId: VIEWER })).toMatchObject({ status: 403, body: { code: 'MFA_REQUIRED' } });

    const setter = await buildUser(app, { orgId: orgA.id, can: ROLE_SETTER });
    const api = rest(app, setter.as);
    const changed = await api.post(`/users/${techA.user.id}/role`, { roleId: VIEWER });
    expect(changed).toMatchObject({ status: 200, body: { id: techA.user.id, roleId: VIEWER } });
    expect((await rest(app, techA.as).get('/users/me')).body.memberships[0].roleName).toBe('Organization Viewer');
    const mighty = await buildRole(app, { scope: 'organization', orgId: orgA.id, permissions: ['organizations:*'] });
    expect(await api.post(`/users/${techA.user.id}/role`, { roleId: mighty.id })).toMatchObject({ status: 403, body: { code: 'FORBIDDEN' } });
    expect(await api.post(`/users/${setter.user.id}/role`, { roleId: VIEWER })).toMatchObject({ status: 400 });
    expect(await auditOf(app, techA.user.id, AUDIT_COLUMNS, { successOnly: true })).toEqual([{ action: 'user.role.change', org_id: orgA.id, actor_id: setter.user.id, changes: ['roleId'] }]);
  });

  test('a caller with narrower reach cannot change or remove a member who holds the same role with wider reach', async () => {
    const partner = await buildPartner(app);
    const org1 = await buildOrg(app, { partnerId: partner.id });
    const org2 = await buildOrg(app, { partnerId: partner.id });
    // one role for all three, with what each refused request needs: only the reach differs
    const narrow = await buildUser(app, { partnerId: partner.id, can: ['users:write', 'users:delete', 'roles:write'], orgAccess: 'selected', orgIds: [org1.id] });
    const full = await buildUser(app, { partnerId: partner.id, role: narrow.membership.roleId });
    const peer = await buildUser(app, { partnerId: partner.id, role: narrow.membership.roleId, orgAccess: 'selected', orgIds: [org1.id] });
    const api = rest(app, narrow.as);
    expect(await api.patch(`/users/${full.user.id}`, { status: 'disabled' })).toMatchObject({ status: 403, body: { code: 'FORBIDDEN' } });
    expect(await api.post(`/users/${full.user.id}/role`, { roleId: systemRole('Partner Viewer') })).toMatchObject({ status: 403 });
    expect(await api.delete(`/users/${full.user.id}`)).toMatchObject({ status: 403 });
    expect((await rest(app, full.as).get('/users/me')).status).toBe(200);
    expect((await api.patch(`/users/${peer.user.id}`, { name: 'Peer' })).status).toBe(200);

    // the same for an organization member limited to some sites
    const site1 = await buildSite(app, org2.id);
    const site2 = await buildSite(app, org2.id);
    const siteAdmin = await buildUser(app, { orgId: org2.id, can: ['users:write', 'users:delete'] });
    const everySite = await buildUser(app, { orgId: org2.id, role: siteAdmin.membership.roleId });
    const sameSite = await buildUser(app, { orgId: org2.id, role: siteAdmin.membership.roleId });
    await sql(app, `update membership set site_ids = ? where id in (?, ?)`, [JSON.stringify([site1.id]), siteAdmin.membership.id, sameSite.membership.id]);
    const siteApi = rest(app, siteAdmin.as);
    expect(await siteApi.patch(`/users/${everySite.user.id}`, { siteIds: [site1.id] })).toMatchObject({ status: 403, body: { code: 'FORBIDDEN' } });
    expect(await siteApi.delete(`/users/${everySite.user.id}`)).toMatchObject({ status: 403 });
    expect((await siteApi.patch(`/users/${sameSite.user.id}`, { name: 'Same site' })).status).toBe(200);
    expect((await siteApi.patch(`/users/${sameSite.user.id}`, { siteIds: [site2.id] })).status).toBe(403);
  });

  test('deleting removes the account with its last membership', async () => {
    const { managerA, techA } = await twoOrgs();
    const api = rest(app, managerA.as);
    expect((await api.delete(`/users/${techA.user.id}`)).status).toBe(204);
    expect((await api.get(`/users/${techA.user.id}`)).status).toBe(404);
    expect(await sql(app, `select id from "user" where id = ?`, [techA.user.id])).toEqual([]);
    expect((await auditOf(app, techA.user.id, AUDIT_COLUMNS, { successOnly: true })).map((a) => a.action)).toEqual(['user.delete']);
    expect(await rest(app, techA.as).get('/users/me')).toMatchObject({ status: 401 });
  });
});

describe('tenancy', () => {
  test('a user manager neither sees nor touches another organization’s users (REST)', async () => {
    const { managerA, techB } = await twoOrgs(ROLE_SETTER);
    const api = rest(app, managerA.as);
    expect((await api.get('/users')).body.data.map((u: any) => u.id)).not.toContain(techB.user.id);
    expect((await api.get(`/users?orgId=${techB.membership.orgId}`)).status).toBe(404);
    for (const res of [
      await api.get(`/users/${techB.user.id}`),
      await api.patch(`/users/${techB.user.id}`, { name: 'Hijacked' }),
      await api.delete(`/users/${techB.user.id}`),
      await api.post(`/users/${techB.user.id}/role`, { roleId: VIEWER }),
      await api.post('/users/resend-invite', { userId: techB.user.id }),
      await api.post('/users/invite', { email: `x-${unique()}@example.test`, name: 'X', roleId: VIEWER, orgId: techB.membership.orgId }),
    ]) {
      expect(res).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });
    }
    expect((await sql(app, `select name from "user" where id = ?`, [techB.user.id]))[0].name).toBe('Test User');
  });

  test('… nor over GraphQL', async () => {
    const { managerA, techB } = await twoOrgs(ROLE_SETTER);
    const list = await gql(app, managerA.as, '{ users { data { id } pagination { total } } }');
    expect(list.body.data.users.data.map((u: any) => u.id)).not.toContain(techB.user.id);
    for (const query of [
      `{ user(id: "${techB.user.id}") { id } }`,
      `mutation { updateUser(id: "${techB.user.id}", input: { name: "Hijacked" }) { id } }`,
      `mutation { deleteUser(id: "${techB.user.id}") }`,
      `mutation { setUserRole(id: "${techB.user.id}", roleId: "${VIEWER}") { id } }`,
    ]) {
      const res = await gql(app, managerA.as, query);
      expect(res.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    }
  });

  test('a partner user limited to selected organizations sees only those organizations’ users', async () => {
    const partner = await buildPartner(app);
    const org1 = await buildOrg(app, { partnerId: partner.id });
    const org2 = await buildOrg(app, { partnerId: partner.id });
    const in1 = await buildUser(app, { orgId: org1.id, role: 'Organization Viewer' });
    const in2 = await buildUser(app, { orgId: org2.id, role: 'Organization Viewer' });
    // managing the Partner Viewer colleague below takes holding what that role grants
    const selected = await buildUser(app, { partnerId: partner.id, can: [...permissionsOf('Partner Viewer'), 'users:write'], orgAccess: 'selected', orgIds: [org1.id] });
    const api = rest(app, selected.as);
    const ids = (await api.get('/users')).body.data.map((u: any) => u.id);
    expect(ids).toContain(in1.user.id);
    expect(ids).toContain(selected.user.id);
    expect(ids).not.toContain(in2.user.id);
    expect((await api.get(`/users/${in2.user.id}`)).status).toBe(404);
    expect((await api.get(`/users/${in1.user.id}`)).body).toMatchObject({ orgId: org1.id });
    // nor can it open a partner colleague's reach beyond its own
    const colleague = await buildUser(app, { partnerId: partner.id, orgAccess: 'selected', orgIds: [org1.id], role: 'Partner Viewer' });
    expect(await api.patch(`/users/${colleague.user.id}`, { orgAccess: 'all' })).toMatchObject({ status: 403 });
    expect((await api.patch(`/users/${colleague.user.id}`, { orgIds: [] })).body).toMatchObject({ id: colleague.user.id });
    // with no organization selected, only partner-level colleagues remain
    const colleagueIds = (await rest(app, colleague.as).get('/users')).body.data.map((u: any) => u.id).sort();
    expect(colleagueIds).toEqual([selected.user.id, colleague.user.id].sort());
  });
});

describe('GraphQL', () => {
  test('invite, resend, accept, update, set role and delete', async () => {
    const { orgA, managerA } = await twoOrgs(ROLE_SETTER);
    const email = `gql-${unique()}@example.test`;
    const invited = await gql(app, managerA.as, `mutation($input: InviteUserInput!) { inviteUser(input: $input) { inviteUrl user { id email status } } }`, {
      input: { email, name: 'Gql', roleId: VIEWER, orgId: orgA.id },
    });
    const { user, inviteUrl } = invited.body.data.inviteUser;
    expect(user).toEqual({ id: expect.any(String), email, status: 'invited' });
    const resent = await gql(app, managerA.as, `mutation { resendInvite(userId: "${user.id}") { inviteUrl } }`);
    expect(resent.body.data.resendInvite.inviteUrl).not.toBe(inviteUrl);
    const accepted = await gql(app, null, `mutation($input: AcceptInviteInput!) { acceptInvite(input: $input) { accessToken user { status } } }`, {
      input: { token: inviteToken(resent.body.data.resendInvite.inviteUrl), password: 'a long enough password' },
    });
    expect(accepted.body.data.acceptInvite.user).toEqual({ status: 'active' });
    expect((await gql(app, { token: accepted.body.data.acceptInvite.accessToken }, '{ me { email } }')).body.data.me).toEqual({ email });

    const users = await gql(app, managerA.as, `{ users(roleId: "${VIEWER}") { data { id } pagination { total } } }`);
    expect(users.body.data.users).toEqual({ data: [{ id: user.id }], pagination: { total: 1 } });
    expect((await gql(app, managerA.as, `{ user(id: "${user.id}") { name } }`)).body.data.user).toEqual({ name: 'Gql' });
    const roles = await gql(app, managerA.as, '{ assignableRoles { name } }');
    const assignable = roles.body.data.assignableRoles.map((r: any) => r.name);
    expect(assignable).toEqual(expect.arrayContaining(['Organization Technician', 'Organization Viewer']));
    expect(assignable).not.toContain('Organization Admin');

    const updated = await gql(app, managerA.as, `mutation { updateUser(id: "${user.id}", input: { name: "Renamed" }) { name } }`);
    expect(updated.body.data.updateUser).toEqual({ name: 'Renamed' });
    const bad = await gql(app, managerA.as, `mutation { updateUser(id: "${user.id}", input: { status: "gone" }) { name } }`);
    expect(bad.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_ERROR');
    const role = await gql(app, managerA.as, `mutation { setUserRole(id: "${user.id}", roleId: "${TECHNICIAN}") { roleId } }`);
    expect(role.body.data.setUserRole).toEqual({ roleId: TECHNICIAN });
    expect((await gql(app, managerA.as, `mutation { deleteUser(id: "${user.id}") }`)).body.data).toEqual({ deleteUser: true });
    expect((await auditOf(app, user.id, AUDIT_COLUMNS, { successOnly: true })).map((a) => a.action)).toEqual([
      'user.invite',
      'user.invite.resend',
      'user.invite.accept',
      'auth.login',
      'user.update',
      'user.role.change',
      'user.delete',
    ]);
  });

  test('invalid email is a VALIDATION_ERROR', async () => {
    const { managerA } = await twoOrgs();
    const res = await gql(app, managerA.as, `mutation { inviteUser(input: { email: "nope", name: "N", roleId: "${VIEWER}" }) { inviteUrl } }`);
    expect(res.body.errors?.[0]).toMatchObject({ message: 'email: must be an email address', extensions: { code: 'VALIDATION_ERROR' } });
  });
});

interface ReceivedMail {
  from: string;
  to: string[];
  data: string;
}

/** The smallest SMTP server nodemailer will talk to: no TLS, no auth, every message kept. */
async function fakeSmtpServer(): Promise<{ port: number; messages: ReceivedMail[]; close(): void }> {
  const messages: ReceivedMail[] = [];
  const sockets = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    let buffer = '';
    let inData = false;
    let current: ReceivedMail = { from: '', to: [], data: '' };
    socket.write('220 fake ESMTP\r\n');
    socket.on('data', (chunk) => {
      buffer += chunk.toString('utf8');
      for (;;) {
        if (inData) {
          const end = buffer.indexOf('\r\n.\r\n');
          if (end < 0) return;
          current.data = buffer.slice(0, end);
          buffer = buffer.slice(end + 5);
          inData = false;
          messages.push(current);
          current = { from: '', to: [], data: '' };
          socket.write('250 queued\r\n');
          continue;
        }
        const eol = buffer.indexOf('\r\n');
        if (eol < 0) return;
        const line = buffer.slice(0, eol);
        buffer = buffer.slice(eol + 2);
        const verb = line.slice(0, 4).toUpperCase();
        if (verb === 'EHLO' || verb === 'HELO') socket.write('250 fake\r\n');
        else if (verb === 'MAIL') (current.from = line.slice(10)), socket.write('250 ok\r\n');
        else if (verb === 'RCPT') current.to.push(line.slice(8)), socket.write('250 ok\r\n');
        else if (verb === 'DATA') (inData = true), socket.write('354 go ahead\r\n');
        else if (verb === 'QUIT') socket.end('221 bye\r\n');
        else socket.write('250 ok\r\n');
      }
    });
    socket.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as net.AddressInfo).port,
    messages,
    close: () => {
      for (const socket of sockets) socket.destroy();
      server.close();
    },
  };
}
