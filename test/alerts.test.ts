import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { ALERT_TOPIC } from '../src/services/alerts/alerts.js';
import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest, type As } from './support/clients.js';
import { TestClock } from './support/clock.js';
import { sql } from './support/db.js';
import { eventually } from './support/eventually.js';
import { agentCall, enroll, fleet, type EnrolledAgent } from './support/devices.js';
import { buildOrg, buildSite, buildUser, type BuiltUser } from './support/factories.js';

// Alerts as people see and handle them: lists, summary, acknowledge/resolve/suppress, GraphQL and the live subscription.

let app: TestApp;
let peer: TestApp;
const clients: Client[] = [];
const clock = new TestClock();

beforeAll(async () => {
  app = await createTestApp({ start: { clock } });
  peer = await createTestApp({ start: { clock }, databaseUrl: app.databaseUrl });
});
afterAll(async () => {
  await Promise.all(clients.splice(0).map((client) => client.dispose()));
  await peer?.server.stop();
  await app?.stop();
});

const heartbeat = async (agent: EnrolledAgent, body: Record<string, unknown> = {}) => {
  expect((await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0', ...body })).status).toBe(200);
};

/**
 * An organization with three devices and rules that fire on metrics at once: `cpu` (high), `disk`
 * (low), `ram` (critical); an admin sets them up and `user` is a technician holding only alert work.
 */
async function setup() {
  const f = await fleet(app, { user: { role: 'Organization Admin' } });
  const user = await buildUser(app, { orgId: f.org.id, can: ['alerts:read', 'alerts:write'] });
  const agents = [await enroll(app, f.key, 'alpha'), await enroll(app, f.key, 'bravo'), await enroll(app, f.key, 'charlie')];
  const rule = async (metric: string, severity: string) => {
    const res = await f.api.post('/alerts/rules', { name: metric, targetType: 'organization', targetId: f.org.id, conditions: [{ type: 'metric', metric, operator: 'gt', threshold: 50 }], severity, autoResolve: false });
    expect(res.status).toBe(201);
    return res.body.id as string;
  };
  const rules = { cpu: await rule('cpuPercent', 'high'), disk: await rule('diskPercent', 'low'), ram: await rule('ramPercent', 'critical') };
  return { ...f, user, agents, rules };
}

const raise = (agent: EnrolledAgent, metrics: Record<string, number>) => heartbeat(agent, { metrics });

async function alertIds(as: As, query = ''): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | null = null;
  do {
    const res = await rest(app, as).get(`/alerts?limit=2${query}${cursor ? `&cursor=${cursor}` : ''}`);
    expect(res.status).toBe(200);
    ids.push(...res.body.data.map((a: { id: string }) => a.id));
    cursor = res.body.nextCursor;
  } while (cursor);
  return ids;
}

test('lists filter and page; the summary counts; acknowledge, resolve and suppress move an alert, with events', async () => {
  const { user, agents, rules } = await setup();
  const [a, b, c] = agents as [EnrolledAgent, EnrolledAgent, EnrolledAgent];
  await raise(a, { cpuPercent: 90, diskPercent: 90 });
  await raise(b, { cpuPercent: 90, ramPercent: 90 });
  await raise(c, { diskPercent: 90 });
  const api = rest(app, user.as);

  const all = await alertIds(user.as);
  expect(all).toHaveLength(5);
  expect(new Set(all).size).toBe(5);
  expect((await alertIds(user.as, '&severity=low')).length).toBe(2);
  expect((await alertIds(user.as, `&deviceId=${b.deviceId}`)).length).toBe(2);
  expect(await alertIds(user.as, `&since=${new Date(Date.now() + 60_000).toISOString()}`)).toEqual([]);
  expect((await alertIds(user.as, `&until=${new Date(Date.now() + 60_000).toISOString()}`)).length).toBe(5);

  const first = (await api.get(`/alerts?deviceId=${a.deviceId}&severity=high`)).body.data[0];
  expect(first).toMatchObject({ deviceId: a.deviceId, ruleId: rules.cpu, severity: 'high', status: 'active', acknowledgedAt: null, resolvedAt: null, suppressedUntil: null, siteId: null });
  expect(Object.keys(first)).toEqual(expect.arrayContaining(['id', 'orgId', 'siteId', 'deviceId', 'ruleId', 'severity', 'status', 'title', 'message', 'triggeredAt', 'acknowledgedAt', 'resolvedAt', 'suppressedUntil']));

  const acked = await api.post(`/alerts/${first.id}/acknowledge`, {});
  expect(acked.body).toMatchObject({ status: 'acknowledged', acknowledgedAt: expect.any(String) });
  const [diskAlert, ramAlert] = [(await api.get(`/alerts?deviceId=${c.deviceId}`)).body.data[0], (await api.get(`/alerts?severity=critical`)).body.data[0]];
  const resolved = await api.post(`/alerts/${diskAlert.id}/resolve`, { note: 'freed space' });
  expect(resolved.body).toMatchObject({ status: 'resolved', resolvedAt: expect.any(String) });
  const until = new Date(Date.now() + 3600_000).toISOString();
  expect((await api.post(`/alerts/${ramAlert.id}/suppress`, { until })).body).toMatchObject({ status: 'suppressed', suppressedUntil: until });

  expect((await api.get('/alerts/summary')).body).toEqual({
    total: 4,
    bySeverity: { critical: 1, high: 2, medium: 0, low: 1, info: 0 },
    byStatus: { active: 2, acknowledged: 1, resolved: 1, suppressed: 1 },
  });
  expect((await alertIds(user.as, '&status=resolved'))).toEqual([diskAlert.id]);
  expect(await sql(app, `select type from outbox_event where data->>'alertId' in (?, ?) and type like 'alert.%' order by created_at, type`, [first.id, diskAlert.id])).toEqual(
    expect.arrayContaining([{ type: 'alert.triggered' }, { type: 'alert.acknowledged' }, { type: 'alert.resolved' }]),
  );

  // Bad input is 400; a resolved alert cannot be acknowledged or suppressed.
  for (const res of [
    await api.get('/alerts?status=open'),
    await api.get('/alerts?severity=urgent'),
    await api.get('/alerts?since=yesterday'),
    await api.get('/alerts?cursor=nonsense'),
    await api.get('/alerts?limit=100000'),
    await api.post(`/alerts/${ramAlert.id}/suppress`, {}),
    await api.post(`/alerts/${ramAlert.id}/suppress`, { until: new Date(Date.now() - 60_000).toISOString() }),
  ])
    expect([res.status, res.body.code]).toEqual([400, 'VALIDATION_ERROR']);
  expect((await api.post(`/alerts/${diskAlert.id}/acknowledge`, {})).status).toBe(409);
});

test('a viewer reads but cannot act; another organization’s alerts are not found on every route, REST and GraphQL', async () => {
  const { org, agents, user } = await setup();
  await raise(agents[0]!, { cpuPercent: 99 });
  const [alert] = (await rest(app, user.as).get('/alerts')).body.data;
  const viewer = await buildUser(app, { orgId: org.id, role: 'Organization Viewer' });
  expect((await rest(app, viewer.as).get(`/alerts/${alert.id}`)).status).toBe(200);
  expect((await rest(app, viewer.as).post(`/alerts/${alert.id}/acknowledge`, {})).status).toBe(403);

  const stranger = await buildUser(app, { orgId: (await buildOrg(app)).id, role: 'Organization Admin' });
  const them = rest(app, stranger.as);
  for (const res of [
    await them.get(`/alerts/${alert.id}`),
    await them.post(`/alerts/${alert.id}/acknowledge`, {}),
    await them.post(`/alerts/${alert.id}/resolve`, {}),
    await them.post(`/alerts/${alert.id}/suppress`, { until: new Date(Date.now() + 60_000).toISOString() }),
  ])
    expect([res.status, res.body.code]).toEqual([404, 'NOT_FOUND']);
  expect((await them.get('/alerts')).body.data).toEqual([]);
  expect((await them.get(`/alerts?orgId=${org.id}`)).body.data).toEqual([]);
  expect((await them.get('/alerts/summary')).body.total).toBe(0);
  for (const query of [
    ['query($id: ID!) { alert(id: $id) { id } }', { id: alert.id }],
    ['mutation($id: ID!) { acknowledgeAlert(id: $id) { id } }', { id: alert.id }],
    ['mutation($id: ID!) { resolveAlert(id: $id) { id } }', { id: alert.id }],
    ['mutation($id: ID!, $until: DateTime!) { suppressAlert(id: $id, input: { until: $until }) { id } }', { id: alert.id, until: new Date(Date.now() + 60_000).toISOString() }],
  ] as const) {
    const res = await gql(app, stranger.as, query[0], query[1]);
    expect(res.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  }
  expect((await gql(app, stranger.as, 'query { alerts(first: 10) { edges { node { id } } } }')).body.data.alerts.edges).toEqual([]);
  const sub = await subscribe(peer, stranger, { orgId: org.id });
  expect(sub.errors.map((e) => e.extensions?.code ?? e.message)).toEqual(['NOT_FOUND']);
});

test('GraphQL: the alert connection pages with filters, the summary, and mutations', async () => {
  const { user, agents } = await setup();
  for (const agent of agents) await raise(agent, { cpuPercent: 99, diskPercent: 99 });
  const PAGE = 'query($after: String, $severity: AlertSeverity) { alerts(first: 4, after: $after, severity: $severity) { edges { node { id severity status } } pageInfo { hasNextPage endCursor } totalCount } }';
  const first = await gql(app, user.as, PAGE);
  expect(first.body.errors).toBeUndefined();
  expect(first.body.data.alerts).toMatchObject({ pageInfo: { hasNextPage: true }, totalCount: 6 });
  const second = await gql(app, user.as, PAGE, { after: first.body.data.alerts.pageInfo.endCursor });
  const ids = [...first.body.data.alerts.edges, ...second.body.data.alerts.edges].map((e: { node: { id: string } }) => e.node.id);
  expect(new Set(ids).size).toBe(6);
  expect((await gql(app, user.as, PAGE, { severity: 'low' })).body.data.alerts.totalCount).toBe(3);
  const summary = await gql(app, user.as, 'query { alertSummary { total bySeverity { high low } byStatus { active resolved } } }');
  expect(summary.body.data.alertSummary).toEqual({ total: 6, bySeverity: { high: 3, low: 3 }, byStatus: { active: 6, resolved: 0 } });
  const resolved = await gql(app, user.as, 'mutation($id: ID!) { resolveAlert(id: $id, input: { note: "done" }) { status resolvedAt } }', { id: ids[0] });
  expect(resolved.body.data.resolveAlert).toMatchObject({ status: 'resolved' });
});

interface Live {
  items: { id: string; status: string; deviceId: string }[];
  errors: { message: string; extensions?: { code?: string } }[];
}

async function subscribe(on: TestApp, user: BuiltUser, variables: Record<string, unknown> = {}): Promise<Live> {
  const client = createClient({ url: `${on.url.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${user.token}` }, retryAttempts: 0 });
  clients.push(client);
  const live: Live = { items: [], errors: [] };
  const before = on.subscriptions(ALERT_TOPIC);
  client.subscribe(
    { query: 'subscription($orgId: ID) { alertChanged(orgId: $orgId) { id status deviceId } }', variables },
    {
      next: (msg) => {
        if (msg.errors) live.errors.push(...(msg.errors as Live['errors']));
        else live.items.push((msg.data as { alertChanged: Live['items'][number] }).alertChanged);
      },
      error: (error) => void live.errors.push({ message: String(error) }),
      complete: () => {},
    },
  );
  await eventually(() => on.subscriptions(ALERT_TOPIC) > before || live.errors.length > 0, 10_000, 'the subscription to be live or refused');
  return live;
}

test('alertChanged delivers a triggered alert raised on the other instance, and never another organization’s', async () => {
  const { org, user, agents } = await setup();
  const other = await setup();
  const live = await subscribe(peer, user, { orgId: org.id });
  const everything = await subscribe(peer, user);
  expect(live.errors).toEqual([]);
  await raise(other.agents[0]!, { cpuPercent: 99 });
  await raise(agents[1]!, { cpuPercent: 99 });
  await eventually(() => live.items.length > 0 && everything.items.length > 0, 10_000, 'the alert');
  expect(live.items).toEqual([{ id: expect.any(String), status: 'active', deviceId: agents[1]!.deviceId }]);
  expect(everything.items.map((i) => i.deviceId)).toEqual([agents[1]!.deviceId]);
});

test('alerts of one site within minutes are one incident; analyze regroups; templates and incidents of another organization are not found', async () => {
  const { org, api, user, agents } = await setup();
  const site = await buildSite(app, org.id);
  const key = await api.post('/enrollment-keys', { name: 'Branch', siteId: site.id });
  const [x, y] = [await enroll(app, key.body.key, 'x-ray'), await enroll(app, key.body.key, 'yankee')];
  await raise(x, { cpuPercent: 99 });
  await raise(y, { cpuPercent: 99, ramPercent: 99 });
  await raise(agents[0]!, { cpuPercent: 99 });
  const mine = rest(app, user.as);
  const groups = (await mine.get('/alert-templates/correlations/groups')).body.data;
  expect(groups.map((g: { key: string; alertCount: number; severity: string }) => [g.key, g.alertCount, g.severity]).sort()).toEqual(
    [[`site:${site.id}`, 3, 'critical'], [`device:${agents[0]!.deviceId}`, 1, 'high']].sort(),
  );
  const siteGroup = groups.find((g: { key: string }) => g.key === `site:${site.id}`);
  const links = (await mine.get(`/alert-templates/correlations?groupId=${siteGroup.id}`)).body.data;
  expect(links.map((l: { deviceId: string }) => l.deviceId).sort()).toEqual([x.deviceId, y.deviceId, y.deviceId].sort());
  const analyzed = await mine.post('/alert-templates/correlations/analyze', {});
  expect(analyzed.body).toEqual({ groups: 2, alerts: 4 });
  expect((await mine.get('/alert-templates/correlations/groups')).body.data.map((g: { alertCount: number }) => g.alertCount).sort()).toEqual([1, 3]);

  const template = await mine.post('/alert-templates/templates', { name: 'Hot', conditions: [{ type: 'metric', metric: 'cpuPercent', operator: 'gt', threshold: 95 }], severity: 'high' });
  expect(template.status).toBe(201);
  expect((await mine.patch(`/alert-templates/templates/${template.body.id}`, { severity: 'critical' })).body.severity).toBe('critical');
  expect((await mine.post('/alert-templates/templates', { name: 'Hot', conditions: [{ type: 'offline' }], severity: 'high' })).status).toBe(409);
  expect((await mine.post('/alert-templates/templates', { name: 'Bad', conditions: [{ type: 'watchdog' }], severity: 'high' })).status).toBe(400);

  const stranger = await buildUser(app, { orgId: (await buildOrg(app)).id, role: 'Organization Admin' });
  const them = rest(app, stranger.as);
  for (const res of [
    await them.patch(`/alert-templates/templates/${template.body.id}`, { name: 'mine' }),
    await them.delete(`/alert-templates/templates/${template.body.id}`),
    await them.post('/alert-templates/correlations/analyze', { orgId: org.id }),
  ])
    expect([res.status, res.body.code]).toEqual([404, 'NOT_FOUND']);
  expect((await them.get('/alert-templates/templates')).body.data).toEqual([]);
  expect((await them.get(`/alert-templates/correlations/groups?orgId=${org.id}`)).body.data).toEqual([]);
  expect((await them.get('/alert-templates/correlations')).body.data).toEqual([]);
  const builtIn = (await them.get('/alert-templates/templates/built-in')).body.data;
  expect((await them.patch(`/alert-templates/templates/${builtIn[0].id}`, { name: 'mine' })).status).toBe(404);
  const viaGraphql = await gql(app, stranger.as, 'mutation($id: ID!) { deleteAlertTemplate(id: $id) }', { id: template.body.id });
  expect(viaGraphql.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  expect((await rest(app, (await buildUser(app, { orgId: org.id, role: 'Organization Viewer' })).as).delete(`/alert-templates/templates/${template.body.id}`)).status).toBe(403);
  expect((await mine.delete(`/alert-templates/templates/${template.body.id}`)).status).toBe(204);
});

test('an alert raised under a maintenance window that suppresses alerts is recorded suppressed and triggers no event', async () => {
  const { org, api, user, agents } = await setup();
  const window = await api.post('/maintenance/windows', {
    name: 'Now',
    timezone: 'UTC',
    startsAt: new Date(Date.now() - 60_000).toISOString().slice(0, 19),
    durationMinutes: 60,
    recurrence: { type: 'once' },
    suppressAlerts: true,
  });
  expect([window.status, window.body.message]).toEqual([201, undefined]);
  await eventually(async () => (await sql(app, `select 1 from maintenance_occurrence where window_id = ? and status = 'active'`, [window.body.id])).length === 1, 15_000, 'the window to start');
  await raise(agents[0]!, { cpuPercent: 99 });
  const [alert] = (await rest(app, user.as).get(`/alerts?deviceId=${agents[0]!.deviceId}`)).body.data;
  expect(alert).toMatchObject({ status: 'suppressed', orgId: org.id });
  expect(await sql(app, `select type from outbox_event where data->>'alertId' = ?`, [alert.id])).toEqual([]);
});

test('a suppression ends at its time by the service clock: the alert is back to what it was', async () => {
  const { user, agents } = await setup();
  await raise(agents[0]!, { cpuPercent: 99, diskPercent: 99 });
  const api = rest(app, user.as);
  const [first, second] = (await api.get(`/alerts?deviceId=${agents[0]!.deviceId}`)).body.data;
  expect((await api.post(`/alerts/${first.id}/acknowledge`, {})).status).toBe(200);
  const until = new Date(clock.now().getTime() + 60_000).toISOString();
  for (const alert of [first, second]) expect((await api.post(`/alerts/${alert.id}/suppress`, { until })).body.status).toBe('suppressed');
  clock.advance(61_000);
  const statusOf = async (id: string) => (await api.get(`/alerts/${id}`)).body;
  await eventually(async () => (await statusOf(second.id)).status === 'active', 15_000, 'the suppression to end');
  expect(await statusOf(first.id)).toMatchObject({ status: 'acknowledged', suppressedUntil: null });
});
