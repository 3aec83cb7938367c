// Joining an existing account to a tenant takes its owner's consent; sessions act through one
// accepted membership, chosen at login and switchable without signing in again.
import { createTestApp, type TestApp } from './support/app.js';
import { gql, inviteToken, rest } from './support/clients.js';
import { sql } from './support/db.js';
import type { Permission } from '../src/auth/permissions.js';
import { buildOrg, buildUser, permissionsOf, systemRole, unique } from './support/factories.js';

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => {
  await app.stop();
});

const ORG_ADMIN = systemRole('Organization Admin');
const VIEWER = systemRole('Organization Viewer');
/** Inviting someone as a Viewer takes holding what a Viewer holds. */
const VIEWER_INVITER: Permission[] = [...permissionsOf('Organization Viewer'), 'users:write'];

async function login(email: string, password: string, membershipId?: string) {
  return rest(app).post('/auth/login', { email, password, ...(membershipId ? { membershipId } : {}) });
}

/** A real person in organization B (their employer) and a hostile admin of organization A. */
async function victimAndAttacker() {
  const orgA = await buildOrg(app);
  const orgB = await buildOrg(app);
  const attacker = await buildUser(app, { orgId: orgA.id, role: 'Organization Admin' });
  const victim = await buildUser(app, { orgId: orgB.id, role: 'Organization Technician', mfa: false });
  return { orgA, orgB, attacker, victim };
}

describe('inviting an existing account', () => {
  test('answers exactly like a new account: nothing about the account leaks to the inviter', async () => {
    const { attacker, victim } = await victimAndAttacker();
    await rest(app, victim.as).patch('/users/me', { name: 'Real Name' });
    expect((await login(victim.user.email, victim.password)).status).toBe(200); // sets lastLoginAt

    const existing = await rest(app, attacker.as).post('/users/invite', { email: victim.user.email, name: 'Typed Name', roleId: VIEWER });
    const fresh = await rest(app, attacker.as).post('/users/invite', { email: `new-${unique()}@example.test`, name: 'Typed Name', roleId: VIEWER });
    expect(existing.status).toBe(201);
    expect(fresh.status).toBe(201);
    const shape = (body: any) => ({ ...body.user, id: 'x', email: 'x', createdAt: 'x', updatedAt: 'x', inviteUrl: typeof body.inviteUrl });
    expect(shape(existing.body)).toEqual(shape(fresh.body));
    expect(existing.body.user).toMatchObject({ name: 'Typed Name', status: 'invited', mfaEnabled: false, lastLoginAt: null });

    // reading the user back through the pending membership shows the same, over REST and GraphQL
    expect((await rest(app, attacker.as).get(`/users/${victim.user.id}`)).body).toMatchObject({ name: 'Typed Name', status: 'invited', lastLoginAt: null });
    const listed = (await rest(app, attacker.as).get('/users?limit=100')).body.data.find((u: { id: string }) => u.id === victim.user.id);
    expect(listed).toMatchObject({ name: 'Typed Name', status: 'invited' });
    const viaGql = await gql(app, attacker.as, `{ user(id: "${victim.user.id}") { name status lastLoginAt } }`);
    expect(viaGql.body.data.user).toEqual({ name: 'Typed Name', status: 'invited', lastLoginAt: null });
  });

  test('the pending membership grants nothing: login, refresh and switching stay in the accepted tenant', async () => {
    const { orgA, orgB, attacker, victim } = await victimAndAttacker();
    const invited = await rest(app, attacker.as).post('/users/invite', { email: victim.user.email, name: 'V', roleId: ORG_ADMIN });
    const pendingId = (await rest(app, victim.as).get('/users/me')).body.memberships.find((m: any) => m.orgId === orgA.id).id;

    const signedIn = await login(victim.user.email, victim.password);
    expect(signedIn.body.user.orgId).toBe(orgB.id);
    expect((await login(victim.user.email, victim.password, pendingId)).status).toBe(401);
    const switched = await rest(app, { token: signedIn.body.accessToken }).post('/auth/switch-membership', { membershipId: pendingId });
    expect(switched).toMatchObject({ status: 404, body: { code: 'NOT_FOUND' } });

    // the inviter holds the link, but it accepts only with the account's own password
    const token = inviteToken(invited.body.inviteUrl);
    expect(await rest(app).post('/auth/accept-invite', { token, password: 'attacker chosen password' })).toMatchObject({
      status: 400,
      body: { code: 'VALIDATION_ERROR', message: 'Invalid or expired invitation' },
    });
    expect((await login(victim.user.email, victim.password)).body.user.orgId).toBe(orgB.id);
    expect((await login(victim.user.email, 'attacker chosen password')).status).toBe(401);
  });

  test('pre-registration: an address the attacker claimed through their own invitation never lands in another tenant by itself', async () => {
    const orgA = await buildOrg(app);
    const orgB = await buildOrg(app);
    const attacker = await buildUser(app, { orgId: orgA.id, can: [...VIEWER_INVITER, 'users:delete'] });
    // the employer hires as an administrator: only an administrator grants that role
    const adminB = await buildUser(app, { orgId: orgB.id, role: 'Organization Admin' });
    const email = `future-hire-${unique()}@example.test`;
    const own = await rest(app, attacker.as).post('/users/invite', { email, name: 'Future Hire', roleId: VIEWER });
    const password = 'attacker-owned password';
    expect((await rest(app).post('/auth/accept-invite', { token: inviteToken(own.body.inviteUrl), password })).status).toBe(200);

    // the real employer invites the address; the attacker then leaves their own organization
    expect((await rest(app, adminB.as).post('/users/invite', { email, name: 'Future Hire', roleId: ORG_ADMIN })).status).toBe(201);
    expect((await rest(app, attacker.as).delete(`/users/${own.body.user.id}`)).status).toBe(204);

    const attempt = await login(email, password);
    expect(attempt.status).toBe(401);
    expect((await rest(app, adminB.as).get(`/users/${own.body.user.id}`)).body).toMatchObject({ status: 'invited', name: 'Future Hire' });
  });
});

describe('accepting', () => {
  test('the signed-in owner sees the invitation, accepts it, and then switches to it without signing in again', async () => {
    const { orgA, orgB, attacker: adminA, victim: person } = await victimAndAttacker();
    await rest(app, adminA.as).post('/users/invite', { email: person.user.email, name: 'P', roleId: VIEWER });
    const session = (await login(person.user.email, person.password)).body;
    const mine = rest(app, { token: session.accessToken });

    const listed = await mine.get('/users/me/invitations');
    expect(listed.status).toBe(200);
    expect(listed.body.data).toEqual([
      expect.objectContaining({ scope: 'organization', orgId: orgA.id, tenantName: orgA.name, roleId: VIEWER, roleName: 'Organization Viewer' }),
    ]);
    const invitationId = listed.body.data[0].id;

    const accepted = await mine.post(`/users/me/invitations/${invitationId}/accept`, {});
    expect(accepted).toMatchObject({ status: 200, body: { id: invitationId, orgId: orgA.id, status: 'active' } });
    expect((await mine.get('/users/me/invitations')).body.data).toEqual([]);
    expect((await mine.post(`/users/me/invitations/${invitationId}/accept`, {})).status).toBe(404);

    const switched = await mine.post('/auth/switch-membership', { membershipId: invitationId });
    expect(switched.status).toBe(200);
    expect(switched.body.user).toMatchObject({ orgId: orgA.id, roleId: VIEWER });
    const inA = rest(app, { token: switched.body.accessToken });
    expect((await inA.get('/users/me')).body).toMatchObject({ orgId: orgA.id });
    expect((await inA.get(`/orgs/organizations/${orgB.id}`)).status).toBe(404);
    expect((await inA.get(`/orgs/organizations/${orgA.id}`)).status).toBe(200);

    // the refresh token of the switched session now follows the new membership; the earlier one is spent
    const refreshed = await rest(app).post('/auth/refresh', { refreshToken: switched.body.refreshToken });
    expect(refreshed.status).toBe(200);
    expect((await rest(app, { token: refreshed.body.accessToken }).get('/users/me')).body.orgId).toBe(orgA.id);

    // the next login goes back to where the person signed in last; membershipId picks explicitly
    expect((await login(person.user.email, person.password)).body.user.orgId).toBe(orgA.id);
    expect((await login(person.user.email, person.password, person.membership.id)).body.user.orgId).toBe(orgB.id);
  });

  test('over GraphQL: myInvitations, acceptInvitation, switchMembership, login(membershipId)', async () => {
    const { orgA, attacker: adminA, victim: person } = await victimAndAttacker();
    await gql(app, adminA.as, `mutation { inviteUser(input: { email: "${person.user.email}", name: "P", roleId: "${VIEWER}" }) { user { id } } }`);
    const session = (await login(person.user.email, person.password)).body;
    const as = { token: session.accessToken };
    const listed = await gql(app, as, '{ myInvitations { id orgId roleName } }');
    expect(listed.body.data.myInvitations).toEqual([{ id: expect.any(String), orgId: orgA.id, roleName: 'Organization Viewer' }]);
    const id = listed.body.data.myInvitations[0].id;
    const accepted = await gql(app, as, `mutation { acceptInvitation(id: "${id}") { id status } }`);
    expect(accepted.body.data.acceptInvitation).toEqual({ id, status: 'active' });
    const switched = await gql(app, as, `mutation { switchMembership(membershipId: "${id}") { accessToken user { orgId } } }`);
    expect(switched.body.data.switchMembership.user.orgId).toBe(orgA.id);
    const chosen = await gql(app, null, `mutation { login(email: "${person.user.email}", password: "${person.password}", membershipId: "${person.membership.id}") { user { orgId } } }`);
    expect(chosen.body.data.login.user.orgId).toBe(person.membership.orgId);
  });

  test('the emailed link accepts with the account’s own password and signs in through the new membership', async () => {
    const { orgA, attacker: adminA, victim: person } = await victimAndAttacker();
    const invited = await rest(app, adminA.as).post('/users/invite', { email: person.user.email, name: 'P', roleId: VIEWER });
    const accepted = await rest(app).post('/auth/accept-invite', { token: inviteToken(invited.body.inviteUrl), password: person.password });
    expect(accepted.status).toBe(200);
    expect(accepted.body.user).toMatchObject({ id: person.user.id, orgId: orgA.id, status: 'active' });
    expect((await rest(app, adminA.as).get(`/users/${person.user.id}`)).body).toMatchObject({ status: 'active', name: 'Test User' });
    expect((await rest(app).post('/auth/accept-invite', { token: inviteToken(invited.body.inviteUrl), password: person.password })).status).toBe(400);
  });

  test('declining removes the invitation; an API key cannot accept for the account', async () => {
    const orgA = await buildOrg(app);
    const inviter = await buildUser(app, { orgId: orgA.id, can: VIEWER_INVITER });
    // allowed to make API keys in their own organization, so the account can hold one
    const person = await buildUser(app, { orgId: (await buildOrg(app)).id, can: ['api_keys:write', 'users:read'] });
    await rest(app, inviter.as).post('/users/invite', { email: person.user.email, name: 'P', roleId: VIEWER });
    const mine = rest(app, person.as);
    const [invitation] = (await mine.get('/users/me/invitations')).body.data;
    const key = await rest(app, person.as).post('/api-keys', { name: 'k', scopes: ['users:read'] });
    expect(key.status).toBe(201);
    expect((await rest(app, { apiKey: key.body.key }).post(`/users/me/invitations/${invitation.id}/accept`, {})).status).toBe(403);
    expect((await mine.post(`/users/me/invitations/${invitation.id}/decline`)).status).toBe(204);
    expect((await mine.get('/users/me/invitations')).body.data).toEqual([]);
    expect((await rest(app, inviter.as).get(`/users/${person.user.id}`)).status).toBe(404);
  });
});

test('the invitation link is no way to guess the account’s password: failures count as failed logins', async () => {
  const guarded = await createTestApp({ env: { LOGIN_MAX_FAILURES_PER_EMAIL: '3' } });
  try {
    const orgA = await buildOrg(guarded);
    const attacker = await buildUser(guarded, { orgId: orgA.id, can: VIEWER_INVITER });
    const victim = await buildUser(guarded, { orgId: (await buildOrg(guarded)).id, role: 'Organization Viewer' });
    const invited = await rest(guarded, attacker.as).post('/users/invite', { email: victim.user.email, name: 'V', roleId: VIEWER });
    const token = inviteToken(invited.body.inviteUrl);
    for (const guess of ['guess one', 'guess two', 'guess three']) {
      expect(await rest(guarded).post('/auth/accept-invite', { token, password: guess })).toMatchObject({ status: 400, body: { message: 'Invalid or expired invitation' } });
    }
    // locked like a login: even the right password is refused now
    expect(await rest(guarded).post('/auth/accept-invite', { token, password: victim.password })).toMatchObject({ status: 429, body: { code: 'RATE_LIMITED' } });
    const [failures] = await sql(guarded, `select count(*)::int as n from login_attempt where email = ? and not success`, [victim.user.email]);
    expect(failures.n).toBe(3);
  } finally {
    await guarded.stop();
  }
});

