import type { Permission } from '../src/auth/permissions.js';
import { useInstancePair } from './support/app.js';
import { gql, loginOk, rest, type As } from './support/clients.js';
import { addMembership, buildOrg, buildRole, buildUser, type BuiltUser } from './support/factories.js';

/**
 * Revocation on every instance, at once: two server instances on one database; a write answered by
 * instance A (logout, password change, disabled or deleted user, edited role, changed or removed
 * membership, suspended organization or partner, revoked API key) refuses the very next request
 * instance B receives, REST and GraphQL alike. B is used first, so whatever it could have remembered
 * about the caller is warm; nothing is awaited between A's answer and B's request.
 */
const pair = useInstancePair();

const MANAGER: Permission[] = ['users:read', 'users:write', 'users:delete', 'roles:read', 'roles:write'];

/** An organization, a manager in it, and a member (a custom role granting users:read) signed in on instance A. */
async function tenant() {
  const org = await buildOrg(pair.a);
  const manager = await buildUser(pair.a, { orgId: org.id, can: MANAGER });
  const role = await buildRole(pair.a, { scope: 'organization', orgId: org.id, permissions: ['users:read'] });
  const member = await buildUser(pair.a, { orgId: org.id, role: role.id });
  const session = await loginOk(pair.a, member.user.email, member.password);
  return { org, manager, role, member, session, as: { token: session.accessToken } as As };
}

/** Instance B answers `as` many times (list and own profile, REST and GraphQL): anything it might cache is warm. */
async function warm(as: As) {
  for (let i = 0; i < 5; i++) {
    expect((await rest(pair.b, as).get('/users/me')).status).toBe(200);
    expect((await rest(pair.b, as).get('/users?limit=5')).status).toBe(200);
    expect((await gql(pair.b, as, '{ me { email } }')).body.errors).toBeUndefined();
  }
}

const refusedOnB = async (as: As, path = '/users/me') => (await rest(pair.b, as).get(path)).status;
const gqlCodeOnB = async (as: As, query = '{ me { email } }') => (await gql(pair.b, as, query)).body.errors?.[0]?.extensions?.code;
const USERS = '{ users(limit: 5) { data { id } } }';

test('a logout on A ends the session on B at once', async () => {
  const t = await tenant();
  await warm(t.as);
  expect((await rest(pair.a, t.as).post('/auth/logout', {})).status).toBe(204);
  expect(await refusedOnB(t.as)).toBe(401);
  expect(await gqlCodeOnB(t.as)).toBe('UNAUTHENTICATED');
});

test('a password change on A ends the old token on B at once', async () => {
  const t = await tenant();
  await warm(t.as);
  const changed = await rest(pair.a, t.as).post('/auth/change-password', { currentPassword: t.member.password, newPassword: 'a brand new password 123' });
  expect(changed.status).toBe(200);
  expect(await refusedOnB(t.as)).toBe(401);
  expect(await gqlCodeOnB(t.as)).toBe('UNAUTHENTICATED');
  // The session the change answered works on B.
  expect((await rest(pair.b, { token: changed.body.accessToken }).get('/users/me')).status).toBe(200);
});

test('a user disabled on A is refused on B at once', async () => {
  const t = await tenant();
  await warm(t.as);
  expect((await rest(pair.a, t.manager.as).patch(`/users/${t.member.user.id}`, { status: 'disabled' })).status).toBe(200);
  expect(await refusedOnB(t.as)).toBe(401);
  expect(await gqlCodeOnB(t.as)).toBe('UNAUTHENTICATED');
});

test('a role edited on A takes the permission away on B at once', async () => {
  const t = await tenant();
  await warm(t.as);
  expect((await rest(pair.a, t.manager.as).patch(`/roles/${t.role.id}`, { permissions: ['roles:read'] })).status).toBe(200);
  expect(await refusedOnB(t.as, '/users?limit=5')).toBe(403);
  expect(await gqlCodeOnB(t.as, USERS)).toBe('FORBIDDEN');
  // The caller is still signed in: only the permission went.
  expect((await rest(pair.b, t.as).get('/users/me')).body.permissions).toEqual(['roles:read']);
});

test("a membership's role changed on A applies on B at once", async () => {
  const t = await tenant();
  await warm(t.as);
  const narrower = await buildRole(pair.a, { scope: 'organization', orgId: t.org.id, permissions: ['roles:read'] });
  expect((await rest(pair.a, t.manager.as).post(`/users/${t.member.user.id}/role`, { roleId: narrower.id })).status).toBe(200);
  expect(await refusedOnB(t.as, '/users?limit=5')).toBe(403);
  expect(await gqlCodeOnB(t.as, USERS)).toBe('FORBIDDEN');
});

test('a membership removed on A is refused on B at once; the account signs in through the one left', async () => {
  const t = await tenant();
  const elsewhere = await addMembership(pair.a, t.member.user.id, { orgId: (await buildOrg(pair.a)).id, role: 'Organization Viewer' });
  await warm(t.as);
  expect((await rest(pair.a, t.manager.as).delete(`/users/${t.member.user.id}`)).status).toBe(204);
  expect(await refusedOnB(t.as)).toBe(401);
  expect(await gqlCodeOnB(t.as)).toBe('UNAUTHENTICATED');
  const again = await rest(pair.b).post('/auth/login', { email: t.member.user.email, password: t.member.password });
  expect([again.status, again.body.user?.orgId]).toEqual([200, elsewhere.orgId]);
});

test('a user deleted on A is refused on B at once', async () => {
  const t = await tenant();
  await warm(t.as);
  expect((await rest(pair.a, t.manager.as).delete(`/users/${t.member.user.id}`)).status).toBe(204);
  expect(await refusedOnB(t.as)).toBe(401);
  expect(await gqlCodeOnB(t.as)).toBe('UNAUTHENTICATED');
});

test('an organization suspended on A is refused on B at once', async () => {
  const t = await tenant();
  const partnerAdmin = await buildUser(pair.a, { partnerId: t.org.partnerId, can: ['organizations:read', 'organizations:write'] });
  await warm(t.as);
  expect((await rest(pair.a, partnerAdmin.as).patch(`/orgs/organizations/${t.org.id}`, { status: 'suspended' })).status).toBe(200);
  const res = await rest(pair.b, t.as).get('/users/me');
  expect(res.status).toBe(403);
  expect(res.body.message).toBe('Your organization is suspended');
  expect(await gqlCodeOnB(t.as)).toBe('FORBIDDEN');
});

test('a partner suspended on A is refused on B at once', async () => {
  const t = await tenant();
  const platformAdmin = await buildUser(pair.a, { can: ['partners:read', 'partners:write'] });
  await warm(t.as);
  expect((await rest(pair.a, platformAdmin.as).patch(`/orgs/partners/${t.org.partnerId}`, { status: 'suspended' })).status).toBe(200);
  const res = await rest(pair.b, t.as).get('/users/me');
  expect([res.status, res.body.message]).toEqual([403, 'Your partner is suspended']);
  expect(await gqlCodeOnB(t.as)).toBe('FORBIDDEN');
});

test('an API key revoked on A is refused on B at once', async () => {
  const org = await buildOrg(pair.a);
  const owner: BuiltUser = await buildUser(pair.a, { orgId: org.id, can: ['api_keys:read', 'api_keys:write', 'api_keys:delete', 'users:read'] });
  const created = await rest(pair.a, owner.as).post('/api-keys', { name: 'script', scopes: ['users:read', 'api_keys:read'] });
  expect(created.status).toBe(201);
  const key: As = { apiKey: created.body.key };
  for (let i = 0; i < 5; i++) expect((await rest(pair.b, key).get('/users?limit=5')).status).toBe(200);
  expect((await rest(pair.a, owner.as).delete(`/api-keys/${created.body.id}`)).status).toBe(204);
  expect(await refusedOnB(key, '/users?limit=5')).toBe(401);
  expect(await gqlCodeOnB(key, USERS)).toBe('UNAUTHENTICATED');
});

test('requests arriving together on B are each answered as their own caller; a logout among them refuses only that one', async () => {
  const callers = await Promise.all([tenant(), tenant(), tenant()]);
  const burst = () => Promise.all(Array.from({ length: 30 }, (_, i) => callers[i % 3]!).map(async (t) => ({ t, res: await rest(pair.b, t.as).get('/users/me') })));
  for (const { t, res } of await burst()) expect([res.status, res.body.email]).toEqual([200, t.member.user.email]);

  expect((await rest(pair.a, callers[1]!.as).post('/auth/logout', {})).status).toBe(204);
  for (const { t, res } of await burst()) {
    expect(res.status).toBe(t === callers[1] ? 401 : 200);
    if (res.status === 200) expect(res.body.email).toBe(t.member.user.email);
  }
});
