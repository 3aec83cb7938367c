import { randomUUID } from 'node:crypto';
import { raiseAlert, resolveRaisedAlert } from './support/alert-events.js';
import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import { TestClock } from './support/clock.js';
import { dispatched, sql } from './support/db.js';
import { agentCall, enroll, fleet, type EnrolledAgent } from './support/devices.js';
import { eventually } from './support/eventually.js';
import { buildOrg, buildSite, buildUser, type BuiltUser } from './support/factories.js';
import { useHttpsReceiver } from './support/https-receiver.js';
import { startSmtpReceiver, type SmtpReceiver } from './support/smtp-receiver.js';

const receiver = useHttpsReceiver();
const clock = new TestClock();
let smtp: SmtpReceiver;
let app: TestApp;
let orgId: string;
let tech: BuiltUser;
let viewer: BuiltUser;
let outsider: BuiltUser;
let deviceA: string;
let deviceB: string;
let agentB: EnrolledAgent;
let groupOfA: string;
const ch: Record<string, string> = {};
let foreignChannel: string;

const channel = async (body: Record<string, unknown>) => {
  const res = await rest(app, tech.as).post('/alerts/channels', body);
  expect(res.status).toBe(201);
  return res.body.id as string;
};
const policies = () => rest(app, tech.as);
const bodies = (path: string) => receiver.to(path).map((r) => JSON.parse(r.body));
const deliveriesOf = (alertId: string) => sql(app, 'select channel_id, kind, status from alert_channel_delivery where alert_id = ? order by created_at', [alertId]);

beforeAll(async () => {
  smtp = await startSmtpReceiver();
  app = await createTestApp({
    env: { ALLOW_PRIVATE_NETWORK_TARGETS: 'true', SMTP_URL: smtp.url, PAGERDUTY_EVENTS_URL: receiver.url('/pd/v2/enqueue'), ALERT_ESCALATION_CHECK_SECONDS: '1' },
    start: { clock },
  });
  // A technician holds alerts:* and devices:* (for the group), and organizations:write to point channels at URLs; the viewer only reads.
  const f = await fleet(app, { user: { can: ['alerts:read', 'alerts:write', 'devices:read', 'devices:write', 'organizations:write'] } });
  orgId = f.org.id;
  tech = f.tech;
  viewer = await buildUser(app, { orgId, role: 'Organization Viewer' });
  deviceA = (await enroll(app, f.key)).deviceId;
  agentB = await enroll(app, f.key);
  deviceB = agentB.deviceId;
  const group = await f.api.post('/groups', { name: 'Servers', type: 'static' });
  groupOfA = group.body.id;
  expect((await f.api.post(`/groups/${groupOfA}/devices`, { deviceIds: [deviceA] })).status).toBe(200);
  ch.slack = await channel({ name: 'Slack', type: 'slack', config: { url: receiver.url('/slack/T0/B0/secret-token') } });
  ch.teams = await channel({ name: 'Teams', type: 'teams', config: { url: receiver.url('/teams/secret-token') } });
  ch.pager = await channel({ name: 'PagerDuty', type: 'pagerduty', config: { routingKey: 'routing-key-0123456789' } });
  ch.email = await channel({ name: 'Mail', type: 'email', config: { to: ['oncall@example.test'] } });
  ch.grouped = await channel({ name: 'Group hook', type: 'webhook', config: { url: receiver.url('/grouped') } });
  ch.escalation = await channel({ name: 'Escalation hook', type: 'webhook', config: { url: receiver.url('/escalation') } });
  const other = await buildOrg(app);
  outsider = await buildUser(app, { orgId: other.id, can: ['alerts:read', 'alerts:write', 'organizations:write'] });
  const foreign = await rest(app, outsider.as).post('/alerts/channels', { name: 'Theirs', type: 'webhook', config: { url: receiver.url('/theirs') } });
  foreignChannel = foreign.body.id;
});

afterAll(async () => {
  await app?.stop();
  await smtp?.close();
});

describe('policies over REST', () => {
  test('create, list, update and delete; lists are sorted and deduplicated; changes are audited', async () => {
    const created = await policies().post('/alerts/policies', {
      name: 'Critical to chat',
      severities: ['critical', 'high', 'critical'],
      channelIds: [ch.slack],
      targets: { siteIds: [], groupIds: [groupOfA] },
      notifyUserIds: [viewer.user.id],
      escalationSteps: [
        { afterMinutes: 30, channelIds: [ch.pager] },
        { afterMinutes: 10, channelIds: [ch.teams] },
      ],
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      orgId,
      name: 'Critical to chat',
      severities: ['critical', 'high'],
      channelIds: [ch.slack],
      targets: { siteIds: [], groupIds: [groupOfA], deviceIds: [] },
      notifyUserIds: [viewer.user.id],
      escalationSteps: [
        { afterMinutes: 10, channelIds: [ch.teams] },
        { afterMinutes: 30, channelIds: [ch.pager] },
      ],
      enabled: true,
      createdBy: tech.user.id,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const id = created.body.id;
    expect((await rest(app, viewer.as).get('/alerts/policies')).body.data.map((p: { id: string }) => p.id)).toContain(id);
    const updated = await policies().patch(`/alerts/policies/${id}`, { targets: null, enabled: false });
    expect(updated.body).toMatchObject({ targets: null, enabled: false });
    const graph = await gql(app, viewer.as, `query($id: ID!) { alertPolicy(id: $id) { id severities targets { groupIds } escalationSteps { afterMinutes channelIds } } }`, { id });
    expect(graph.body.data.alertPolicy).toEqual({ id, severities: ['critical', 'high'], targets: null, escalationSteps: created.body.escalationSteps });
    expect((await policies().delete(`/alerts/policies/${id}`)).status).toBe(204);
    expect((await policies().patch(`/alerts/policies/${id}`, { name: 'x' })).status).toBe(404);
    expect((await sql(app, 'select action from audit_log where resource_id = ? order by seq', [id])).map((r) => r.action)).toEqual(['alert_policy.create', 'alert_policy.update', 'alert_policy.delete']);
  });

  test('validation 400s; channels, users, sites, groups and devices of another organization are 404', async () => {
    const base = { name: 'P', severities: ['critical'], channelIds: [ch.slack] };
    for (const body of [
      { ...base, severities: [] },
      { ...base, severities: ['apocalyptic'] },
      { ...base, channelIds: ['not-a-uuid'] },
      { ...base, escalationSteps: [{ afterMinutes: 0, channelIds: [ch.teams] }] },
      { ...base, escalationSteps: [{ afterMinutes: 5, channelIds: [] }] },
      { ...base, targets: { tags: ['x'] } },
      { ...base, extra: true },
      { name: '', severities: ['low'], channelIds: [] },
    ]) {
      const res = await policies().post('/alerts/policies', body);
      expect([JSON.stringify(body), res.status, res.body.code]).toEqual([JSON.stringify(body), 400, 'VALIDATION_ERROR']);
    }
    const foreignUser = outsider.user.id;
    for (const [body, message] of [
      [{ ...base, channelIds: [foreignChannel] }, 'Alert channel not found'],
      [{ ...base, escalationSteps: [{ afterMinutes: 5, channelIds: [foreignChannel] }] }, 'Alert channel not found'],
      [{ ...base, notifyUserIds: [foreignUser] }, 'User not found'],
      [{ ...base, targets: { deviceIds: [crypto.randomUUID()] } }, 'Device not found'],
      [{ ...base, targets: { groupIds: [crypto.randomUUID()] } }, 'Group not found'],
    ] as const) {
      const res = await policies().post('/alerts/policies', body);
      expect([res.status, res.body.message]).toEqual([404, message]);
    }
  });

  test('access: read needs alerts:read, changes alerts:write; another organization’s policy is 404 on every route', async () => {
    const created = await policies().post('/alerts/policies', { name: 'Mine', severities: ['low'], channelIds: [ch.slack] });
    const id = created.body.id;
    expect((await rest(app, viewer.as).post('/alerts/policies', { name: 'x', severities: ['low'], channelIds: [] })).status).toBe(403);
    expect((await rest(app, viewer.as).patch(`/alerts/policies/${id}`, { name: 'x' })).status).toBe(403);
    const api = rest(app, outsider.as);
    expect((await rest(app, viewer.as).get(`/alerts/policies/${id}`)).body).toMatchObject({ id, name: 'Mine' });
    expect((await api.get(`/alerts/policies/${id}`)).status).toBe(404);
    expect((await api.patch(`/alerts/policies/${id}`, { name: 'x' })).status).toBe(404);
    expect((await api.delete(`/alerts/policies/${id}`)).status).toBe(404);
    expect((await api.get(`/alerts/policies?orgId=${orgId}`)).status).toBe(404);
    expect((await api.get('/alerts/policies')).body.data.map((p: { id: string }) => p.id)).not.toContain(id);
    for (const query of [
      [`query($id: ID!) { alertPolicy(id: $id) { id } }`, { id }],
      [`mutation($id: ID!) { updateAlertPolicy(id: $id, input: { name: "x" }) { id } }`, { id }],
      [`mutation($id: ID!) { deleteAlertPolicy(id: $id) }`, { id }],
      [`mutation($orgId: ID) { createAlertPolicy(input: { orgId: $orgId, name: "x", severities: [low], channelIds: [] }) { id } }`, { orgId }],
    ] as const) {
      expect((await gql(app, outsider.as, query[0], query[1])).body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    }
    await policies().delete(`/alerts/policies/${id}`);
  });

  test('users limited to a site make and change only policies targeting within their sites', async () => {
    const [siteA, siteB] = [await buildSite(app, orgId), await buildSite(app, orgId)];
    const limited = await buildUser(app, { orgId, can: ['alerts:read', 'alerts:write'] });
    await sql(app, `update membership set site_ids = ?::jsonb where id = ?`, [JSON.stringify([siteA.id]), limited.membership.id]);
    const api = rest(app, limited.as);
    const base = { name: 'Mine', severities: ['low'], channelIds: [ch.slack] };
    expect((await api.post('/alerts/policies', base)).status).toBe(403);
    expect((await api.post('/alerts/policies', { ...base, targets: { siteIds: [siteB.id] } })).body.message).toBe('Site not found');
    const mine = await api.post('/alerts/policies', { ...base, targets: { siteIds: [siteA.id] } });
    expect(mine.status).toBe(201);
    expect((await api.patch(`/alerts/policies/${mine.body.id}`, { targets: { siteIds: [siteB.id] } })).status).toBe(404);
    expect((await api.patch(`/alerts/policies/${mine.body.id}`, { targets: null })).status).toBe(403);
    expect((await api.patch(`/alerts/policies/${mine.body.id}`, { name: 'Renamed' })).body.name).toBe('Renamed');
    const wide = await policies().post('/alerts/policies', base);
    expect((await api.patch(`/alerts/policies/${wide.body.id}`, { channelIds: [ch.teams] })).status).toBe(403);
    expect((await api.delete(`/alerts/policies/${wide.body.id}`)).status).toBe(403);
    expect((await api.delete(`/alerts/policies/${mine.body.id}`)).status).toBe(204);
    await policies().delete(`/alerts/policies/${wide.body.id}`);
  });
});

describe('alerts through policies', () => {
  let policyIds: string[] = [];
  afterEach(async () => {
    for (const id of policyIds) await policies().delete(`/alerts/policies/${id}`);
    policyIds = [];
  });
  /** A maintenance window that suppresses alerts on the device, active now (its planner holds only maintenance work); answers how to end it. */
  const suppressingWindowOn = async (deviceId: string) => {
    const planner = rest(app, (await buildUser(app, { orgId, can: ['maintenance:read', 'maintenance:write', 'devices:read'] })).as);
    const window = await planner.post('/maintenance/windows', {
      name: `Quiet ${deviceId}`,
      timezone: 'UTC',
      startsAt: new Date(clock.now().getTime() - 60_000).toISOString().slice(0, 19),
      durationMinutes: 60,
      recurrence: { type: 'once' },
      suppressAlerts: true,
      targets: { deviceIds: [deviceId] },
    });
    expect([window.status, window.body.message]).toEqual([201, undefined]);
    await eventually(async () => (await sql(app, `select 1 from maintenance_occurrence where window_id = ? and status = 'active'`, [window.body.id])).length === 1, 15_000, 'the window to start');
    return async () => expect((await planner.delete(`/maintenance/windows/${window.body.id}`)).status).toBe(204);
  };
  const policy = async (body: Record<string, unknown>) => {
    const res = await policies().post('/alerts/policies', body);
    expect(res.status).toBe(201);
    policyIds.push(res.body.id);
    return res.body.id as string;
  };

  test('a matching alert reaches every channel in its format and the named users; PagerDuty triggers then resolves by one dedup key', async () => {
    await policy({ name: 'Everything critical', severities: ['critical'], channelIds: [ch.slack, ch.teams, ch.pager, ch.email], notifyUserIds: [viewer.user.id] });
    const low = await raiseAlert(app, { orgId, deviceId: deviceA, severity: 'low' });
    const { alertId } = await raiseAlert(app, { orgId, deviceId: deviceA, severity: 'critical', title: 'CPU on fire' });

    await eventually(() => receiver.to('/pd/v2/enqueue').length === 1 && receiver.to('/teams/secret-token').length === 1 && receiver.to('/slack/T0/B0/secret-token').length === 1 && smtp.mails.length === 1, 10_000, 'every channel');
    expect(bodies('/slack/T0/B0/secret-token')[0]).toMatchObject({ text: expect.stringContaining('CPU on fire'), blocks: expect.any(Array) });
    expect(bodies('/teams/secret-token')[0]).toMatchObject({ '@type': 'MessageCard', title: expect.stringContaining('CPU on fire') });
    expect(bodies('/pd/v2/enqueue')[0]).toEqual({
      routing_key: 'routing-key-0123456789',
      event_action: 'trigger',
      dedup_key: alertId,
      payload: expect.objectContaining({ summary: expect.stringContaining('CPU on fire'), severity: 'critical', source: deviceA }),
    });
    expect(smtp.mails[0]!.to).toEqual(['oncall@example.test']);
    expect(smtp.mails[0]!.data).toContain('CPU on fire');
    const notes = await rest(app, viewer.as).get('/notifications');
    expect(notes.body.data).toEqual([expect.objectContaining({ type: 'alert', title: 'CPU on fire', severity: 'critical', alertId, read: false })]);
    await dispatched(app, low.eventId!);
    expect(await deliveriesOf(low.alertId)).toEqual([]);

    expect((await rest(app, tech.as).post(`/alerts/${alertId}/resolve`, {})).status).toBe(200);
    await eventually(() => receiver.to('/pd/v2/enqueue').length === 2, 10_000, 'the resolve');
    expect(bodies('/pd/v2/enqueue')[1]).toEqual({ routing_key: 'routing-key-0123456789', event_action: 'resolve', dedup_key: alertId });
    await eventually(() => receiver.to('/slack/T0/B0/secret-token').length === 2, 10_000, 'the resolved message');
    expect(bodies('/slack/T0/B0/secret-token')[1].text).toMatch(/^Resolved/);
    expect(await rest(app, tech.as).get('/alerts/channels?type=pagerduty').then((r) => r.body.data[0].lastDelivery)).toMatchObject({ status: 'delivered', error: null });
  });

  test('targets: a device matches through its groups or its id; suppressed alerts and disabled policies notify nobody', async () => {
    await policy({ name: 'Servers', severities: ['high'], channelIds: [ch.grouped], targets: { groupIds: [groupOfA] } });
    await policy({ name: 'Disabled', severities: ['high'], channelIds: [ch.grouped], enabled: false });
    const onB = await raiseAlert(app, { orgId, deviceId: deviceB, severity: 'high' });
    // Raised while a maintenance window that suppresses alerts covers device A (ended before the next one).
    const endWindow = await suppressingWindowOn(deviceA);
    const suppressed = await raiseAlert(app, { orgId, deviceId: deviceA, severity: 'high' });
    expect([suppressed.status, suppressed.eventId]).toEqual(['suppressed', null]);
    await endWindow();
    const onA = await raiseAlert(app, { orgId, deviceId: deviceA, severity: 'high', title: 'On A' });
    expect(onA.status).toBe('active');
    await eventually(() => receiver.to('/grouped').length === 1, 10_000, 'the group member’s alert');
    expect(bodies('/grouped')[0]).toMatchObject({
      event: 'alert.triggered',
      alert: { id: onA.alertId, title: 'On A', deviceId: deviceA, severity: 'high' },
      type: 'alert.triggered',
      data: { alertId: onA.alertId, deviceId: deviceA, ruleId: null, severity: 'high', status: 'active', title: 'On A' },
    });
    await dispatched(app, onB.eventId!);
    expect(await deliveriesOf(onB.alertId)).toEqual([]);
    expect(await deliveriesOf(suppressed.alertId)).toEqual([]);

    await policy({ name: 'Device B', severities: ['medium'], channelIds: [ch.grouped], targets: { deviceIds: [deviceB] } });
    await raiseAlert(app, { orgId, deviceId: deviceB, severity: 'medium', title: 'On B' });
    await eventually(() => receiver.to('/grouped').length === 2, 10_000, 'the named device’s alert');
    expect(bodies('/grouped')[1].alert.title).toBe('On B');
  });

  test('an alert another domain raises (a monitor) behaves as a rule’s: one per key, suppressed under maintenance, routed by policies, resolved by its key, listed by source', async () => {
    const hook = await channel({ name: 'Monitor hook', type: 'webhook', config: { url: receiver.url('/monitors') } });
    await policy({ name: 'Monitored devices', severities: ['medium'], channelIds: [hook], targets: { deviceIds: [deviceA, deviceB] } });
    const monitorId = randomUUID();
    const down = (deviceId: string) => ({ orgId, deviceId, source: 'monitor', sourceId: monitorId, severity: 'medium' as const, title: 'HTTPS check failing', dedupKey: `${monitorId}:${deviceId}` });

    // Under a window that suppresses alerts on A: recorded suppressed, announced to no one.
    const endWindow = await suppressingWindowOn(deviceA);
    const quiet = await raiseAlert(app, down(deviceA));
    await endWindow();

    // On B: raised once however often the monitor reports it, and routed to the policy's channel.
    const first = await raiseAlert(app, down(deviceB));
    expect((await raiseAlert(app, down(deviceB))).alertId).toBe(first.alertId);
    await eventually(() => receiver.to('/monitors').length === 1, 10_000, 'the monitor alert on the channel');
    expect(bodies('/monitors')[0]).toMatchObject({ event: 'alert.triggered', alert: { id: first.alertId, deviceId: deviceB } });
    const reader = rest(app, viewer.as);
    expect((await reader.get(`/alerts/${quiet.alertId}`)).body).toMatchObject({ status: 'suppressed', source: 'monitor', sourceId: monitorId, deviceId: deviceA, ruleId: null });
    expect((await reader.get(`/alerts/${first.alertId}`)).body).toMatchObject({ status: 'active', source: 'monitor', sourceId: monitorId, deviceId: deviceB, ruleId: null });
    const delivered = await rest(app, tech.as).get(`/alerts/channels/${hook}/deliveries`);
    expect(delivered.body.data.map((d: { alertId: string; kind: string }) => [d.alertId, d.kind])).toEqual([[first.alertId, 'triggered']]);

    // Cleared by its key: resolved, the channel hears it is over, and the next failure is a new alert.
    expect(await resolveRaisedAlert(app, { orgId, source: 'monitor', dedupKey: `${monitorId}:${deviceB}` })).toBe(first.alertId);
    await eventually(() => receiver.to('/monitors').length === 2, 10_000, 'the resolved message');
    const next = await raiseAlert(app, down(deviceB));
    expect(next.alertId).not.toBe(first.alertId);

    // Listed by source, over REST and GraphQL alike; rule alerts are `alert_rule`.
    const ids = [next.alertId, first.alertId, quiet.alertId];
    expect((await reader.get('/alerts?source=monitor')).body.data.map((a: { id: string }) => a.id)).toEqual(ids);
    const listed = await gql(app, viewer.as, '{ alerts(source: "monitor", first: 10) { edges { node { id source sourceId } } } }');
    expect(listed.body.data.alerts.edges.map((e: any) => e.node)).toEqual(ids.map((id) => ({ id, source: 'monitor', sourceId: monitorId })));
    expect((await reader.get('/alerts?source=alert_rule')).body.data.map((a: { id: string }) => a.id)).not.toContain(first.alertId);
  });

  test('end to end: a rule that a heartbeat fires reaches the policy’s channel; when its metric clears, PagerDuty resolves the incident', async () => {
    const pager = await channel({ name: 'PD end to end', type: 'pagerduty', config: { routingKey: 'e2e-routing-key-0000' } });
    await policy({ name: 'Hot devices', severities: ['medium'], channelIds: [pager], targets: { deviceIds: [deviceB] } });
    const rule = await rest(app, tech.as).post('/alerts/rules', {
      name: 'Hot',
      targetType: 'device',
      targetId: deviceB,
      conditions: [{ type: 'metric', metric: 'cpuPercent', operator: 'gt', threshold: 80 }],
      severity: 'medium',
    });
    expect(rule.status).toBe(201);
    const ours = () => bodies('/pd/v2/enqueue').filter((b) => b.routing_key === 'e2e-routing-key-0000');
    const heartbeat = async (cpuPercent: number) => expect((await agentCall(app, agentB, '/heartbeat', { agentVersion: '1.0.0', metrics: { cpuPercent } })).status).toBe(200);
    await heartbeat(95);
    await eventually(() => ours().length === 1, 10_000, 'the trigger');
    const [alert] = (await rest(app, tech.as).get(`/alerts?deviceId=${deviceB}&severity=medium&status=active`)).body.data;
    expect(ours()[0]).toMatchObject({ event_action: 'trigger', dedup_key: alert.id, payload: { severity: 'warning', summary: expect.stringContaining('Hot') } });
    await heartbeat(10);
    await eventually(() => ours().length === 2, 10_000, 'the resolve');
    expect(ours()[1]).toEqual({ routing_key: 'e2e-routing-key-0000', event_action: 'resolve', dedup_key: alert.id });
    await rest(app, tech.as).delete(`/alerts/rules/${rule.body.id}`);
  });

  test('a failing channel is retried with backoff and its failure shows on the channel', async () => {
    receiver.script('/failing', [{ status: 503, body: 'unavailable' }]);
    const failing = await channel({ name: 'Failing hook', type: 'webhook', config: { url: receiver.url('/failing') } });
    await policy({ name: 'To the failing hook', severities: ['info'], channelIds: [failing] });
    const { alertId } = await raiseAlert(app, { orgId, deviceId: deviceA, severity: 'info' });
    await eventually(async () => (await deliveriesOf(alertId))[0]?.status === 'retrying', 10_000, 'a failed first attempt');
    const shown = async () => (await rest(app, viewer.as).get('/alerts/channels?type=webhook')).body.data.find((c: { id: string }) => c.id === failing).lastDelivery;
    expect(await shown()).toEqual({ status: 'retrying', error: expect.stringContaining('HTTP 503'), at: expect.any(String) });
    await eventually(async () => (await deliveriesOf(alertId))[0]?.status === 'failed', 20_000, 'the attempts to run out');
    expect(receiver.to('/failing')).toHaveLength(4);
    const gaps = receiver.to('/failing').slice(1).map((r, i) => r.at - receiver.to('/failing')[i]!.at);
    expect(gaps[2]!).toBeGreaterThan(gaps[0]!);
    expect(await shown()).toEqual({ status: 'failed', error: expect.stringContaining('HTTP 503'), at: expect.any(String) });
    const listed = await rest(app, viewer.as).get(`/alerts/channels/${failing}/deliveries`);
    expect(listed.body.data).toEqual([
      expect.objectContaining({ kind: 'triggered', alertId, status: 'failed', attempt: 4, responseStatus: 503, error: expect.stringContaining('unavailable'), deliveredAt: null }),
    ]);
  });

  test('an alert still unacknowledged after the step’s minutes escalates (alert.escalated); an acknowledged one does not', async () => {
    await policy({ name: 'Escalating', severities: ['critical'], channelIds: [ch.grouped], escalationSteps: [{ afterMinutes: 15, channelIds: [ch.escalation] }] });
    const waiting = await raiseAlert(app, { orgId, deviceId: deviceB, severity: 'critical', title: 'Nobody looks' });
    const attended = await raiseAlert(app, { orgId, deviceId: deviceA, severity: 'critical', title: 'Someone looks' });
    await dispatched(app, waiting.eventId!);
    await dispatched(app, attended.eventId!);
    expect((await rest(app, tech.as).post(`/alerts/${attended.alertId}/acknowledge`)).status).toBe(200);

    clock.advance(14 * 60_000);
    // Not yet due: a check that ran after the clock moved leaves the step waiting.
    const moved = new Date();
    await eventually(async () => (await sql(app, `select count(*)::int as n from agenda_jobs where name = 'alert-policies.escalation-check' and last_finished_at > ?`, [moved]))[0].n > 0, 10_000, 'an escalation check');
    expect((await sql(app, 'select status from alert_escalation where alert_id = ?', [waiting.alertId]))[0].status).toBe('pending');
    expect(receiver.to('/escalation')).toHaveLength(0);
    clock.advance(2 * 60_000);
    await eventually(() => receiver.to('/escalation').length === 1, 10_000, 'the escalation');
    expect(bodies('/escalation')[0]).toMatchObject({ event: 'alert.escalated', escalationStep: 1, alert: { id: waiting.alertId, title: 'Nobody looks' } });
    const events = await sql(app, `select data->>'alertId' as alert from outbox_event where type = 'alert.escalated'`);
    expect(events.map((e) => e.alert)).toEqual([waiting.alertId]);
    await eventually(async () => (await sql(app, 'select status from alert_escalation where alert_id = ?', [attended.alertId]))[0]?.status === 'cancelled', 10_000, 'the acknowledged alert’s step to be settled');
    expect((await deliveriesOf(attended.alertId)).map((d) => d.kind)).toEqual(['triggered']);
  });
});
