import crypto from 'node:crypto';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { DOMAIN_EVENT_TOPIC } from '../src/events/dispatcher.js';
import type { DomainEvent } from '../src/events/types.js';
import { createTestApp, type TestApp } from './support/app.js';
import { rest } from './support/clients.js';
import { TestClock } from './support/clock.js';
import { sql } from './support/db.js';
import { eventually } from './support/eventually.js';
import { buildOrg, buildRole, buildUser, type BuiltUser } from './support/factories.js';

// graphql-ws as the server speaks it: who connection_init admits, that every subscribe is checked
// again, and what one organization's subscriber may see. Closing live sockets on logout, a role or
// password change and token expiry in real time: test/graphql-ws-revocation.test.ts.

/** graphql-ws's own close for a connection_init the server refuses (onConnect answered false). */
const REFUSED = { code: 4403, reason: 'Forbidden' };
const REVOKED = { code: 4403, reason: 'Forbidden: credentials revoked' };
const EXPIRED = { code: 4403, reason: 'Forbidden: access token expired' };
const ME = '{ me { email } }';
const ORG_EVENTS = 'subscription { domainEvents(types: ["organization.updated"]) { type orgId } }';

interface Socket {
  client: Client;
  /** every close, in order (a lazy client reconnects for a later subscribe) */
  closes: { code: number; reason: string }[];
  acknowledged: () => boolean;
}

const sockets: Client[] = [];
/** Before its server stops: an open socket holds the drain up. */
const disposeSockets = () => Promise.all(sockets.splice(0).map((s) => s.dispose()));

/** A graphql-ws client with these connection_init params, connecting at once and never retrying. */
function connect(app: TestApp, connectionParams: Record<string, string>): Socket {
  const closes: Socket['closes'] = [];
  let acknowledged = false;
  const client = createClient({ url: `${app.url.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, connectionParams, retryAttempts: 0, lazy: false, onNonLazyError: () => {} });
  client.on('connected', () => (acknowledged = true));
  client.on('closed', (event) => {
    const { code, reason } = event as { code: number; reason: string };
    closes.push({ code, reason: String(reason) });
  });
  sockets.push(client);
  return { client, closes, acknowledged: () => acknowledged };
}

/** The first answer to one operation on the socket: a result (data or errors), or what ended it (a close). */
function answer(socket: Socket, query: string): Promise<{ data?: unknown; errors?: unknown[] } | { closed: unknown }> {
  return new Promise((resolve) => {
    socket.client.subscribe({ query }, { next: (result) => resolve(result as never), error: (error) => resolve({ closed: error }), complete: () => resolve({ closed: 'completed without a result' }) });
  });
}

/** Resolves once the instance holds one more subscription than `before` (graphql-ws acknowledges no subscribe). */
const held = (app: TestApp, before: number) => eventually(() => app.subscriptions(DOMAIN_EVENT_TOPIC) > before, 10_000, 'the subscription to be held');

describe('connection_init and subscribe', () => {
  let app: TestApp;
  let orgId: string;
  /** renames organizations, manages users, roles and their own API keys */
  let manager: BuiltUser;

  beforeAll(async () => {
    app = await createTestApp();
    orgId = (await buildOrg(app)).id;
    manager = await buildUser(app, { orgId, can: ['organizations:read', 'organizations:write', 'users:write', 'roles:write', 'sites:read', 'api_keys:write'] });
  });
  afterAll(async () => {
    await disposeSockets();
    await app.stop();
  });

  /** An API key of a new user allowed `organizations:read` (and `sites:read`, to rescope to; managing their own keys), scoped to `organizations:read`. */
  async function apiKey() {
    const owner = await buildUser(app, { orgId, can: ['organizations:read', 'sites:read', 'api_keys:write', 'api_keys:delete'] });
    const created = await rest(app, owner.as).post('/api-keys', { name: 'socket', scopes: ['organizations:read'] });
    expect(created.status).toBe(201);
    return { owner, id: created.body.id as string, key: created.body.key as string };
  }

  test('a Bearer token (with or without the scheme) and an API key are acknowledged, and act as their principal', async () => {
    const user = await buildUser(app, { orgId, can: ['organizations:read'] });
    const { owner, key } = await apiKey();
    for (const [params, email] of [
      [{ authorization: `Bearer ${user.token}` }, user.user.email],
      [{ authorization: user.token }, user.user.email],
      [{ apiKey: key }, owner.user.email],
      [{ 'x-api-key': key }, owner.user.email],
    ] as const) {
      const socket = connect(app, params);
      expect(await answer(socket, ME)).toEqual({ data: { me: { email } } });
      expect(socket.acknowledged()).toBe(true);
      expect(socket.closes).toEqual([]);
    }
  });

  test('no credentials, a malformed or foreign-signed token, an unknown or revoked API key, a disabled user: closed 4403 Forbidden, never acknowledged', async () => {
    const disabled = await buildUser(app, { orgId, can: ['organizations:read'], status: 'disabled' });
    const revoked = await apiKey();
    expect((await rest(app, revoked.owner.as).delete(`/api-keys/${revoked.id}`)).status).toBe(204);
    const [header, payload] = disabled.token.split('.');
    const refused: Record<string, string>[] = [
      {},
      { authorization: '' },
      { authorization: 'Bearer not-a-token' },
      { authorization: `Bearer ${header}.${payload}.${crypto.randomBytes(32).toString('base64url')}` },
      { apiKey: `${revoked.key.slice(0, -4)}xxxx` },
      { apiKey: revoked.key },
      { authorization: `Bearer ${disabled.token}` },
    ];
    for (const params of refused) {
      const socket = connect(app, params);
      expect(await eventually(() => socket.closes[0], 10_000, `a close for ${JSON.stringify(params)}`)).toEqual(REFUSED);
      expect(socket.acknowledged()).toBe(false);
    }
  });

  test('each subscribe checks access again, even when no event tells of the change: a role changed or an API key revoked refuses the next one with the error envelope, and the socket closes 4403', async () => {
    const reader = await buildRole(app, { scope: 'organization', orgId, permissions: ['organizations:read'] });
    const demoted = await buildRole(app, { scope: 'organization', orgId, permissions: ['sites:read'] });
    const user = await buildUser(app, { orgId, role: reader.id });
    const byToken = connect(app, { authorization: `Bearer ${user.token}` });
    const { id, key } = await apiKey();
    const byKey = connect(app, { apiKey: key });
    for (const socket of [byToken, byKey]) expect(await answer(socket, ME)).toEqual({ data: { me: { email: expect.any(String) } } });

    // Straight in the database: no event reaches the sockets, and the periodic re-check is 30 s away.
    await sql(app, 'update membership set role_id = ? where id = ?', [demoted.id, user.membership.id]);
    await sql(app, 'update api_key set revoked_at = now() where id = ?', [id]);
    expect(await answer(byToken, ME)).toEqual({ closed: [expect.objectContaining({ message: 'Your access has changed: connect again', extensions: { code: 'FORBIDDEN' } })] });
    expect(await answer(byKey, ME)).toEqual({ closed: [expect.objectContaining({ message: 'Invalid or expired API key', extensions: { code: 'UNAUTHENTICATED' } })] });
    for (const socket of [byToken, byKey]) expect(await eventually(() => socket.closes[0], 10_000, 'the socket to close')).toEqual(REVOKED);
  });

  test.each([
    ['revoked', (owner: BuiltUser, id: string) => rest(app, owner.as).delete(`/api-keys/${id}`), 204],
    ['rescoped', (owner: BuiltUser, id: string) => rest(app, owner.as).patch(`/api-keys/${id}`, { scopes: ['sites:read'] }), 200],
    ['rotated', (owner: BuiltUser, id: string) => rest(app, owner.as).post(`/api-keys/${id}/rotate`), 201],
  ])('an API key %s while subscribed closes its socket at once (not at the next sweep)', async (_, change, status) => {
    const { owner, id, key } = await apiKey();
    const socket = connect(app, { apiKey: key });
    const before = app.subscriptions(DOMAIN_EVENT_TOPIC);
    socket.client.subscribe({ query: ORG_EVENTS }, { next: () => {}, error: () => {}, complete: () => {} });
    await held(app, before);
    expect((await change(owner, id)).status).toBe(status);
    // The periodic re-check runs every 30 s: a close well within that is the change's own event.
    expect(await eventually(() => socket.closes[0], 10_000, 'the socket to close')).toEqual(REVOKED);
  });

  test("a subscriber never receives another organization's events: the other's goes past first, then its own arrives alone", async () => {
    const otherOrg = await buildOrg(app);
    const otherManager = await buildUser(app, { orgId: otherOrg.id, can: ['organizations:read', 'organizations:write'] });
    const viewer = await buildUser(app, { orgId, can: ['organizations:read'] });
    const socket = connect(app, { authorization: `Bearer ${viewer.token}` });
    const received: { type: string; orgId: string }[] = [];
    const before = app.subscriptions(DOMAIN_EVENT_TOPIC);
    socket.client.subscribe({ query: ORG_EVENTS }, { next: (msg) => void received.push((msg.data as { domainEvents: { type: string; orgId: string } }).domainEvents), error: () => {}, complete: () => {} });
    await held(app, before);

    // Once the instance has published the other organization's event, it sits ahead of ours in the subscription's queue, read in order.
    const published: DomainEvent[] = [];
    const off = app.server.runtime.pubsub.on(DOMAIN_EVENT_TOPIC, (event) => void published.push(event as DomainEvent));
    try {
      expect((await rest(app, otherManager.as).patch(`/orgs/organizations/${otherOrg.id}`, { name: `Other ${crypto.randomBytes(3).toString('hex')}` })).status).toBe(200);
      await eventually(() => published.some((e) => e.type === 'organization.updated' && e.orgId === otherOrg.id), 10_000, "the other organization's event on the instance");
    } finally {
      off();
    }
    expect((await rest(app, manager.as).patch(`/orgs/organizations/${orgId}`, { name: `Own ${crypto.randomBytes(3).toString('hex')}` })).status).toBe(200);
    await eventually(() => received.length > 0, 10_000, 'our own event');
    expect(received).toEqual([{ type: 'organization.updated', orgId }]);
  });
});

test('a socket closes 4403 when its access token expires on the runtime clock', async () => {
  const clock = new TestClock();
  const app = await createTestApp({ start: { clock }, env: { GRAPHQL_WS_RECHECK_SECONDS: '1' } });
  try {
    const org = await buildOrg(app);
    const user = await buildUser(app, { orgId: org.id, can: ['organizations:read'] });
    const socket = connect(app, { authorization: `Bearer ${user.token}` });
    expect(await answer(socket, ME)).toEqual({ data: { me: { email: user.user.email } } });
    clock.advance(app.server.runtime.config.accessTokenTtlSeconds * 1000 + 1000);
    // The token's own timer is far off in real time: the re-check (every second here) reads the clock.
    expect(await eventually(() => socket.closes[0], 10_000, 'the socket to close')).toEqual(EXPIRED);
  } finally {
    await disposeSockets();
    await app.stop();
  }
});
