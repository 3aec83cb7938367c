import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { NOTIFICATION_TOPIC } from '../src/services/notifications/notifications.js';
import { raiseAlert } from './support/alert-events.js';
import { useInstancePair, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import { dispatched, sql } from './support/db.js';
import { enroll, fleet } from './support/devices.js';
import { eventually } from './support/eventually.js';
import { buildSite, buildUser, type BuiltUser } from './support/factories.js';

// Two instances on one database: alerts are raised through `a`, subscriptions held on `b`.
const pair = useInstancePair();
let app: TestApp;
let orgId: string;
let deviceId: string;
let alice: BuiltUser;
let bob: BuiltUser;
let carol: BuiltUser;
const clients: Client[] = [];

beforeAll(async () => {
  app = pair.a;
  const f = await fleet(app, { user: { can: ['alerts:read', 'alerts:write', 'devices:read', 'devices:write'] } });
  orgId = f.org.id;
  deviceId = (await enroll(app, f.key)).deviceId;
  // Notifications are a user's own: the least role reads them (Organization Viewer).
  alice = await buildUser(app, { orgId, role: 'Organization Viewer' });
  bob = await buildUser(app, { orgId, role: 'Organization Viewer' });
  carol = await buildUser(app, { orgId, role: 'Organization Viewer' });
  const policy = await f.api.post('/alerts/policies', { name: 'Tell Alice and Bob', severities: ['critical', 'high'], channelIds: [], notifyUserIds: [alice.user.id, bob.user.id] });
  expect(policy.status).toBe(201);
  expect((await f.api.post('/alerts/policies', { name: 'Tell Carol', severities: ['low'], notifyUserIds: [carol.user.id] })).status).toBe(201);
});

// Before the instances stop (their afterAll), which waits for open WebSockets.
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.dispose()));
});

/** Raises an alert (critical and high ones go to Alice and Bob, low ones to Carol), and waits until its notifications are written. */
async function alertFor(title: string, severity: 'critical' | 'high' | 'low' = 'critical'): Promise<string> {
  const raised = await raiseAlert(app, { orgId, deviceId, severity, title });
  await dispatched(app, raised.eventId!);
  return raised.alertId;
}

describe('REST', () => {
  test('list, unread count, mark read and unread, delete one, clear all: the caller’s own only', async () => {
    const first = await alertFor('First');
    await alertFor('Second', 'high');
    const api = rest(app, alice.as);
    const list = await api.get('/notifications');
    expect(list.status).toBe(200);
    expect(list.body.pagination).toEqual({ page: 1, limit: 100, total: 2 });
    expect(list.body.data.map((n: { title: string }) => n.title)).toEqual(['Second', 'First']);
    expect(list.body.data[1]).toEqual({
      id: expect.any(String),
      orgId,
      type: 'alert',
      title: 'First',
      message: expect.any(String),
      severity: 'critical',
      alertId: first,
      read: false,
      readAt: null,
      createdAt: expect.any(String),
    });
    expect((await api.get('/notifications/unread-count')).body).toEqual({ count: 2 });

    const firstId = list.body.data[1].id;
    const read = await api.patch(`/notifications/${firstId}`, { read: true });
    expect(read.status).toBe(200);
    expect(read.body).toMatchObject({ id: firstId, read: true, readAt: expect.any(String) });
    expect((await api.get('/notifications/unread-count')).body).toEqual({ count: 1 });
    expect((await api.get('/notifications?unread=true')).body.data.map((n: { title: string }) => n.title)).toEqual(['Second']);
    expect((await api.get('/notifications?unread=false')).body.data.map((n: { title: string }) => n.title)).toEqual(['First']);
    expect((await api.patch(`/notifications/${firstId}`, { read: false })).body).toMatchObject({ read: false, readAt: null });

    // Another user: none of Alice's, and hers are 404 to them.
    const bobs = rest(app, bob.as);
    expect((await bobs.get('/notifications')).body.data.map((n: { id: string }) => n.id)).not.toContain(firstId);
    expect((await bobs.patch(`/notifications/${firstId}`, { read: true })).status).toBe(404);
    expect((await bobs.delete(`/notifications/${firstId}`)).status).toBe(404);
    expect((await rest(app, carol.as).get('/notifications')).body.data).toEqual([]);
    expect((await rest(app, carol.as).get('/notifications/unread-count')).body).toEqual({ count: 0 });
    expect((await gql(app, bob.as, `mutation($id: ID!) { deleteNotification(id: $id) }`, { id: firstId })).body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');

    expect((await api.delete(`/notifications/${firstId}`)).status).toBe(204);
    expect((await api.delete(`/notifications/${firstId}`)).status).toBe(404);
    expect((await api.get('/notifications')).body.pagination.total).toBe(1);
    expect((await api.delete('/notifications')).status).toBe(204);
    expect((await api.get('/notifications')).body.data).toEqual([]);
    // Bob's are untouched by Alice's clearing.
    expect((await bobs.get('/notifications')).body.pagination.total).toBe(2);
    expect((await rest(app).get('/notifications')).status).toBe(401);
  });

  test('validation: the body and ids', async () => {
    const api = rest(app, alice.as);
    await alertFor('To mark');
    const [note] = (await api.get('/notifications?unread=true')).body.data;
    for (const body of [{}, { read: 'yes' }, { read: true, title: 'x' }]) expect((await api.patch(`/notifications/${note.id}`, body)).status).toBe(400);
    expect((await api.patch('/notifications/not-a-uuid', { read: true })).status).toBe(404);
    expect((await api.get('/notifications?limit=100000')).status).toBe(400);
    expect((await api.get('/notifications?unread=maybe')).status).toBe(400);
  });
});

test('a user limited to some sites hears only of alerts of those sites; a partner user of the organization hears of them too', async () => {
  const f = await fleet(app, { user: { can: ['alerts:read', 'alerts:write', 'devices:read', 'devices:write'] } });
  const device = (await enroll(app, f.key)).deviceId;
  const [north, south] = [await buildSite(app, f.org.id), await buildSite(app, f.org.id)];
  const limited = await buildUser(app, { orgId: f.org.id, role: 'Organization Viewer' });
  await sql(app, 'update membership set site_ids = ?::jsonb where id = ?', [JSON.stringify([north.id]), limited.membership.id]);
  const partnerUser = await buildUser(app, { partnerId: f.org.partnerId, role: 'Partner Viewer' });
  expect((await f.api.post('/alerts/policies', { name: 'Both', severities: ['medium'], channelIds: [], notifyUserIds: [limited.user.id, partnerUser.user.id] })).status).toBe(201);
  for (const [siteId, title] of [[south.id, 'In the south'], [north.id, 'In the north']] as const) {
    // The alert is raised in its device's site: the device moves there first.
    expect((await f.api.patch(`/devices/${device}`, { siteId })).status).toBe(200);
    await dispatched(app, (await raiseAlert(app, { orgId: f.org.id, deviceId: device, severity: 'medium', title })).eventId!);
  }
  const titles = async (user: BuiltUser) => (await rest(app, user.as).get('/notifications')).body.data.map((n: { title: string }) => n.title);
  expect(await titles(limited)).toEqual(['In the north']);
  expect(await titles(partnerUser)).toEqual(['In the north', 'In the south']);
});

describe('GraphQL', () => {
  test('queries and mutations act on the caller’s own notifications', async () => {
    await alertFor('Over GraphQL');
    const listed = await gql(app, bob.as, `{ notifications(unread: true) { data { id title read } pagination { total } } unreadNotificationCount { count } }`);
    expect(listed.body.errors).toBeUndefined();
    const mine = listed.body.data.notifications.data.find((n: { title: string }) => n.title === 'Over GraphQL');
    expect(listed.body.data.unreadNotificationCount.count).toBe(listed.body.data.notifications.pagination.total);
    const marked = await gql(app, bob.as, `mutation($id: ID!) { updateNotification(id: $id, input: { read: true }) { id read } }`, { id: mine.id });
    expect(marked.body.data.updateNotification).toEqual({ id: mine.id, read: true });
    expect((await gql(app, alice.as, `mutation($id: ID!) { updateNotification(id: $id, input: { read: true }) { id } }`, { id: mine.id })).body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const cleared = await gql(app, bob.as, `mutation { clearNotifications { deleted } }`);
    expect(cleared.body.data.clearNotifications.deleted).toBeGreaterThan(0);
    expect((await gql(app, bob.as, `{ unreadNotificationCount { count } }`)).body.data.unreadNotificationCount.count).toBe(0);
  });

  test('notificationAdded reaches only the recipient, from another server instance', async () => {
    const live = async (user: BuiltUser) => {
      const client = createClient({ url: `${pair.b.url.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${user.token}` }, retryAttempts: 0 });
      clients.push(client);
      const items: { title: string; alertId: string }[] = [];
      const before = pair.b.subscriptions(NOTIFICATION_TOPIC);
      client.subscribe({ query: 'subscription { notificationAdded { id title alertId read } }' }, { next: (msg) => void items.push((msg.data as any).notificationAdded), error: () => {}, complete: () => {} });
      await eventually(() => pair.b.subscriptions(NOTIFICATION_TOPIC) > before, 10_000, 'the subscription to be live');
      return items;
    };
    const alices = await live(alice);
    const carols = await live(carol);
    const alertId = await alertFor('Pushed');
    await eventually(() => alices.length === 1, 10_000, 'Alice’s notification');
    expect(alices[0]).toMatchObject({ title: 'Pushed', alertId, read: false });
    // Carol's own notification, raised after Alice's, arrives alone: hers skipped Alice's.
    await alertFor('For Carol', 'low');
    await eventually(() => carols.length === 1, 10_000, 'Carol’s notification');
    expect(carols).toEqual([expect.objectContaining({ title: 'For Carol' })]);
    expect(alices.map((n) => n.title)).toEqual(['Pushed']);
  });
});
