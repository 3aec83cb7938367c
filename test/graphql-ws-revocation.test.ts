import crypto from 'node:crypto';
import { createClient, type Client } from 'graphql-ws';
import { decodeJwt } from 'jose';
import WebSocket from 'ws';
import { signAccessToken, type AccessClaims } from '../src/auth/tokens.js';
import { createTestApp, type TestApp } from './support/app.js';
import { loginOk, rest } from './support/clients.js';
import { eventually } from './support/eventually.js';
import { buildOrg, buildRole, buildUser, type BuiltUser } from './support/factories.js';

const REVOKED = { code: 4403, reason: 'Forbidden: credentials revoked' };
const EVENTS = 'subscription { domainEvents(types: ["organization.updated"]) { type orgId } }';

interface Live {
  client: Client;
  events: unknown[];
  closed: () => { code: number; reason: string } | undefined;
}

/**
 * A tenant: an organization, the least-privileged role that may subscribe to its events, and a manager
 * who renames the organization, disables its readers and gives them another role (one granting `sites:read`).
 */
async function tenant(app: TestApp) {
  const org = await buildOrg(app);
  const manager = await buildUser(app, { orgId: org.id, can: ['organizations:read', 'organizations:write', 'users:write', 'roles:write', 'sites:read'] });
  const reader = await buildRole(app, { scope: 'organization', orgId: org.id, permissions: ['organizations:read'] });
  return { org, manager, reader };
}

const login = (app: TestApp, user: BuiltUser) => loginOk(app, user.user.email, user.password);

/**
 * A graphql-ws client on `token` with a `domainEvents` subscription that has been seen to deliver:
 * the manager renames the organization until an event arrives (each rename also re-checks the socket,
 * which must stay open). No retries, so a close is final.
 */
async function liveSocket(app: TestApp, token: string, orgId: string, manager: BuiltUser): Promise<Live> {
  let closeEvent: { code: number; reason: string } | undefined;
  const client = createClient({ url: `${app.url.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${token}` }, retryAttempts: 0 });
  client.on('closed', (event) => {
    const { code, reason } = event as { code: number; reason: string };
    closeEvent = { code, reason: String(reason) };
  });
  const events: unknown[] = [];
  client.subscribe({ query: EVENTS }, { next: (msg) => events.push(msg.data), error: () => {}, complete: () => {} });
  const renamer = rest(app, manager.as);
  await eventually(
    async () => {
      if (events.length > 0) return true;
      expect((await renamer.patch(`/orgs/organizations/${orgId}`, { name: `Org ${crypto.randomBytes(4).toString('hex')}` })).status).toBe(200);
      return false;
    },
    10_000,
    'a live event',
  );
  expect(closeEvent).toBeUndefined();
  return { client, events, closed: () => closeEvent };
}

describe('a live socket on default settings', () => {
  let app: TestApp;
  let t: Awaited<ReturnType<typeof tenant>>;
  const sockets: Client[] = [];

  beforeAll(async () => {
    app = await createTestApp();
    t = await tenant(app);
  });
  afterAll(async () => {
    await Promise.all(sockets.map((s) => s.dispose()));
    await app.stop();
  });

  async function subscriber() {
    const user = await buildUser(app, { orgId: t.org.id, role: t.reader.id });
    const session = await login(app, user);
    const live = await liveSocket(app, session.accessToken, t.org.id, t.manager);
    sockets.push(live.client);
    return { user, session, live };
  }

  test('logging out through REST closes it with 4403', async () => {
    const { session, live } = await subscriber();
    expect((await rest(app, { token: session.accessToken }).post('/auth/logout', {})).status).toBe(204);
    expect(await eventually(live.closed, 10_000, 'the socket to close')).toEqual(REVOKED);
  });

  test('a manager disabling the user closes it', async () => {
    const { user, live } = await subscriber();
    expect((await rest(app, t.manager.as).patch(`/users/${user.user.id}`, { status: 'disabled' })).status).toBe(200);
    expect(await eventually(live.closed, 10_000, 'the socket to close')).toEqual(REVOKED);
  });

  test("changing the user's role closes it", async () => {
    const { user, live } = await subscriber();
    const demoted = await buildRole(app, { scope: 'organization', orgId: t.org.id, permissions: ['sites:read'] });
    expect((await rest(app, t.manager.as).post(`/users/${user.user.id}/role`, { roleId: demoted.id })).status).toBe(200);
    expect(await eventually(live.closed, 10_000, 'the socket to close')).toEqual(REVOKED);
  });

  test('changing the password closes it', async () => {
    const { user, session, live } = await subscriber();
    const res = await rest(app, { token: session.accessToken }).post('/auth/change-password', { currentPassword: user.password, newPassword: 'a brand new password 1' });
    expect(res.status).toBe(200);
    expect(await eventually(live.closed, 10_000, 'the socket to close')).toEqual(REVOKED);
  });

  test('a new subscribe on a socket whose session has ended is refused with the error envelope, and the socket closes', async () => {
    const { session, live } = await subscriber();
    // Presenting a rotated refresh token again ends the session, and emits no event: only the subscribe notices.
    expect((await rest(app).post('/auth/refresh', { refreshToken: session.refreshToken })).status).toBe(200);
    expect((await rest(app).post('/auth/refresh', { refreshToken: session.refreshToken })).status).toBe(401);

    let answer: unknown;
    live.client.subscribe({ query: EVENTS }, { next: (msg) => (answer = msg), error: (error) => (answer = error), complete: () => {} });
    expect(await eventually(() => answer, 10_000, 'an answer to the subscribe')).toEqual([expect.objectContaining({ message: 'Invalid or expired access token', extensions: { code: 'UNAUTHENTICATED' } })]);
    expect(await eventually(live.closed, 10_000, 'the socket to close')).toEqual(REVOKED);
  });

  test('it closes when its access token expires', async () => {
    const session = await login(app, await buildUser(app, { orgId: t.org.id, role: t.reader.id }));
    // The session's own claims in a token that expires in seconds (the configuration's shortest lifetime is 60 s).
    const { sub, mid, scope, partnerId, orgId, roleId, mfa, ver, sid } = decodeJwt(session.accessToken) as unknown as AccessClaims;
    const token = await signAccessToken({ ...app.server.runtime.config, accessTokenTtlSeconds: 8 }, { sub, mid, scope, partnerId, orgId, roleId, mfa, ver, sid });
    const expiresAt = decodeJwt(token).exp! * 1000;
    const live = await liveSocket(app, token, t.org.id, t.manager);
    sockets.push(live.client);
    // Closed by the token's own timer: the periodic re-check (30 s) is far off and would say "revoked".
    expect(await eventually(live.closed, 20_000, 'the socket to close')).toEqual({ code: 4403, reason: 'Forbidden: access token expired' });
    expect(Date.now()).toBeGreaterThanOrEqual(expiresAt);
  });
});

test('an ended session with no event behind it closes on the periodic re-check', async () => {
  const app = await createTestApp({ env: { GRAPHQL_WS_RECHECK_SECONDS: '1' } });
  let client: Client | null = null;
  try {
    const t = await tenant(app);
    const session = await login(app, await buildUser(app, { orgId: t.org.id, role: t.reader.id }));
    const live = await liveSocket(app, session.accessToken, t.org.id, t.manager);
    client = live.client;
    expect((await rest(app).post('/auth/refresh', { refreshToken: session.refreshToken })).status).toBe(200);
    expect((await rest(app).post('/auth/refresh', { refreshToken: session.refreshToken })).status).toBe(401);
    expect(await eventually(live.closed, 10_000, 'the socket to close')).toEqual(REVOKED);
  } finally {
    await client?.dispose();
    await app.stop();
  }
});
