import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest, type As } from './support/clients.js';
import { TestClock } from './support/clock.js';
import { aRunHasFinished, sql } from './support/db.js';
import { eventually } from './support/eventually.js';
import { agentCall, enroll, fleet, type EnrolledAgent } from './support/devices.js';
import { buildOrg, buildSite, buildUser } from './support/factories.js';

// Alert rules and their evaluation on heartbeats and status changes, with the injectable clock.

let app: TestApp;
const clock = new TestClock();

beforeAll(async () => {
  // Devices silent for 30 s go offline (the sweep runs every 6 s).
  app = await createTestApp({ env: { DEVICE_OFFLINE_AFTER_SECONDS: '30' }, start: { clock } });
});
afterAll(async () => {
  await app.stop();
});

/** An organization, a technician holding exactly alert work and what enrolling needs, and an enrolled agent. */
async function setup() {
  const f = await fleet(app, { user: { can: ['alerts:read', 'alerts:write', 'devices:read', 'devices:write'] } });
  const agent = await enroll(app, f.key);
  return { ...f, agent };
}

const heartbeat = async (agent: EnrolledAgent, body: Record<string, unknown> = {}) => {
  const res = await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0', ...body });
  expect(res.status).toBe(200);
};

async function createRule(as: As, body: Record<string, unknown>): Promise<{ id: string; [k: string]: unknown }> {
  const res = await rest(app, as).post('/alerts/rules', body);
  expect([res.status, res.body.message]).toEqual([201, undefined]);
  return res.body;
}

/** Waits for a run of the recurring due check that started after now and has finished. */
const dueCheckRan = () => aRunHasFinished(app, 'alerts.due-conditions');

const alertsOf = (deviceId: string) => sql(app, 'select id, status, rule_id, severity, triggered_at from alert where device_id = ? order by triggered_at, id', [deviceId]);

const cpuRule = (orgId: string, extra: Record<string, unknown> = {}) => ({
  name: 'CPU',
  targetType: 'organization',
  targetId: orgId,
  conditions: [{ type: 'metric', metric: 'cpuPercent', operator: 'gt', threshold: 90 }],
  severity: 'high',
  ...extra,
});

test('a duration condition fires exactly once when it has held for its duration, not before, also without a further heartbeat', async () => {
  const { org, tech, agent } = await setup();
  const rule = await createRule(tech.as, cpuRule(org.id, { conditions: [{ type: 'metric', metric: 'cpuPercent', operator: 'gte', threshold: 90, durationSeconds: 300 }] }));

  await heartbeat(agent, { metrics: { cpuPercent: 95 } });
  expect(await alertsOf(agent.deviceId)).toEqual([]);
  // The test clock keeps running in real time: stop short of the threshold by more than a due check takes.
  clock.advance(290_000);
  await heartbeat(agent, { metrics: { cpuPercent: 96 } });
  expect(await alertsOf(agent.deviceId)).toEqual([]);
  await dueCheckRan();
  expect(await alertsOf(agent.deviceId)).toEqual([]);

  // The threshold passes with no heartbeat: the scheduled check fires it.
  clock.advance(10_000);
  const [alert] = await eventually(async () => {
    const rows = await alertsOf(agent.deviceId);
    return rows.length > 0 && rows;
  }, 15_000, 'the alert');
  expect(alert).toMatchObject({ status: 'active', rule_id: rule.id, severity: 'high' });
  await heartbeat(agent, { metrics: { cpuPercent: 97 } });
  await dueCheckRan();
  expect(await alertsOf(agent.deviceId)).toHaveLength(1);
  const [event] = await sql(app, `select data from outbox_event where type = 'alert.triggered' and data->>'alertId' = ?`, [alert.id]);
  expect(event.data).toMatchObject({ alertId: alert.id, deviceId: agent.deviceId, ruleId: rule.id, severity: 'high', status: 'active', title: expect.stringContaining('CPU') });
});

test('a condition that clears before its duration never fires', async () => {
  const { org, tech, agent } = await setup();
  await createRule(tech.as, cpuRule(org.id, { conditions: [{ type: 'metric', metric: 'cpuPercent', operator: 'gt', threshold: 90, durationSeconds: 60 }] }));
  await heartbeat(agent, { metrics: { cpuPercent: 95 } });
  clock.advance(30_000);
  await heartbeat(agent, { metrics: { cpuPercent: 10 } });
  clock.advance(60_000);
  await heartbeat(agent, { metrics: { cpuPercent: 95 } });
  await dueCheckRan();
  expect(await alertsOf(agent.deviceId)).toEqual([]);
});

test('an open alert is never raised twice; auto-resolve resolves it when the condition clears; the cooldown holds a new one back', async () => {
  const { org, tech, agent } = await setup();
  await createRule(tech.as, cpuRule(org.id, { cooldownMinutes: 10 }));
  await Promise.all([heartbeat(agent, { metrics: { cpuPercent: 95 } }), heartbeat(agent, { metrics: { cpuPercent: 99 } })]);
  await heartbeat(agent, { metrics: { cpuPercent: 95 } });
  expect((await alertsOf(agent.deviceId)).map((a) => a.status)).toEqual(['active']);

  await heartbeat(agent, { metrics: { cpuPercent: 20 } });
  expect((await alertsOf(agent.deviceId)).map((a) => a.status)).toEqual(['resolved']);
  expect(await sql(app, `select count(*)::int as n from outbox_event where type = 'alert.resolved' and data->>'deviceId' = ?`, [agent.deviceId])).toEqual([{ n: 1 }]);

  // Within the cooldown: no new alert.
  clock.advance(5 * 60_000);
  await heartbeat(agent, { metrics: { cpuPercent: 95 } });
  expect((await alertsOf(agent.deviceId)).map((a) => a.status)).toEqual(['resolved']);
  // Once it has passed, the condition that kept holding fires.
  clock.advance(5 * 60_000 + 1000);
  await heartbeat(agent, { metrics: { cpuPercent: 95 } });
  await eventually(async () => (await alertsOf(agent.deviceId)).length === 2, 15_000, 'the alert after the cooldown');
  expect((await alertsOf(agent.deviceId)).map((a) => a.status)).toEqual(['resolved', 'active']);
});

test('without autoResolve the alert stays open when the condition clears', async () => {
  const { org, tech, agent } = await setup();
  await createRule(tech.as, cpuRule(org.id, { autoResolve: false }));
  await heartbeat(agent, { metrics: { cpuPercent: 95 } });
  await heartbeat(agent, { metrics: { cpuPercent: 5 } });
  expect((await alertsOf(agent.deviceId)).map((a) => a.status)).toEqual(['active']);
});

test('offline durations count from the last heartbeat; the alert resolves when the device is back', async () => {
  const { org, tech, agent } = await setup();
  await createRule(tech.as, { name: 'Offline', targetType: 'organization', targetId: org.id, conditions: [{ type: 'offline', durationSeconds: 120 }], severity: 'critical' });
  await heartbeat(agent);
  clock.advance(60_000);
  await eventually(async () => (await sql(app, 'select status from device where id = ?', [agent.deviceId]))[0].status === 'offline', 15_000, 'the sweep');
  await dueCheckRan();
  expect(await alertsOf(agent.deviceId)).toEqual([]);
  clock.advance(61_000);
  await eventually(async () => (await alertsOf(agent.deviceId)).length === 1, 15_000, 'the offline alert');
  await heartbeat(agent);
  expect((await alertsOf(agent.deviceId)).map((a) => a.status)).toEqual(['resolved']);
});

test('agent_silent and watchdog conditions read the heartbeat fields; a device target watches that device only', async () => {
  const { org, tech, agent, key } = await setup();
  const other = await enroll(app, key);
  await createRule(tech.as, { name: 'Silent', targetType: 'device', targetId: agent.deviceId, conditions: [{ type: 'agent_silent' }], severity: 'high' });
  await createRule(tech.as, { name: 'Watchdog', targetType: 'organization', targetId: org.id, conditions: [{ type: 'watchdog', status: 'failing' }], severity: 'medium' });
  const silent = { mainAgentSilentSince: clock.now().toISOString(), watchdogStatus: 'failing' };
  await heartbeat(agent, silent);
  await heartbeat(other, silent);
  expect((await alertsOf(agent.deviceId)).map((a) => a.severity).sort()).toEqual(['high', 'medium']);
  expect((await alertsOf(other.deviceId)).map((a) => a.severity)).toEqual(['medium']);
});

test('a rule made from a template takes its conditions and severity unless given', async () => {
  const { org, tech } = await setup();
  const builtIn = await rest(app, tech.as).get('/alert-templates/templates/built-in');
  expect(builtIn.status).toBe(200);
  const cpu = builtIn.body.data.find((t: { name: string }) => t.name === 'High CPU');
  expect(builtIn.body.data.map((t: { name: string }) => t.name)).toEqual(expect.arrayContaining(['High CPU', 'Low disk space', 'Device offline', 'Agent silent', 'Watchdog failing']));
  const rule = await createRule(tech.as, { name: 'From template', templateId: cpu.id, targetType: 'organization', targetId: org.id });
  expect(rule).toMatchObject({ templateId: cpu.id, conditions: cpu.conditions, severity: cpu.severity });
  const custom = await rest(app, tech.as).post('/alert-templates/templates', { name: 'Disk', conditions: [{ type: 'metric', metric: 'diskPercent', operator: 'gt', threshold: 80 }], severity: 'low' });
  expect(custom.status).toBe(201);
  const own = await createRule(tech.as, { name: 'Own', templateId: custom.body.id, severity: 'critical', targetType: 'organization', targetId: org.id });
  expect(own).toMatchObject({ severity: 'critical', conditions: [{ type: 'metric', metric: 'diskPercent', operator: 'gt', threshold: 80 }] });
  // Another organization's template is not found.
  const stranger = await buildUser(app, { orgId: (await buildOrg(app)).id, can: ['alerts:read', 'alerts:write'] });
  const res = await rest(app, stranger.as).post('/alerts/rules', { name: 'x', templateId: custom.body.id, targetType: 'organization', targetId: stranger.membership.orgId });
  expect([res.status, res.body.code]).toEqual([404, 'NOT_FOUND']);
});

test('the rule test reports the devices it would fire for, and raises nothing', async () => {
  const { org, tech, agent, key } = await setup();
  const calm = await enroll(app, key, 'calm');
  const rule = await createRule(tech.as, cpuRule(org.id, { enabled: false }));
  await heartbeat(agent, { metrics: { cpuPercent: 97 } });
  await heartbeat(calm, { metrics: { cpuPercent: 3 } });
  const res = await rest(app, tech.as).post(`/alerts/rules/${rule.id}/test`, {});
  expect(res.status).toBe(200);
  expect(res.body.wouldFire).toEqual([{ deviceId: agent.deviceId, hostname: expect.any(String), reason: expect.stringContaining('cpuPercent 97') }]);
  const one = await rest(app, tech.as).post(`/alerts/rules/${rule.id}/test`, { deviceId: calm.deviceId });
  expect(one.body).toEqual({ wouldFire: [] });
  expect(await sql(app, 'select count(*)::int as n from alert where rule_id = ?', [rule.id])).toEqual([{ n: 0 }]);
});

test('rule changes reach evaluation at once: disabling a rule stops it firing; changed conditions start holding again', async () => {
  const { org, tech, agent } = await setup();
  const rule = await createRule(tech.as, cpuRule(org.id));
  expect((await rest(app, tech.as).patch(`/alerts/rules/${rule.id}`, { enabled: false })).status).toBe(200);
  await heartbeat(agent, { metrics: { cpuPercent: 99 } });
  expect(await alertsOf(agent.deviceId)).toEqual([]);
  expect((await rest(app, tech.as).patch(`/alerts/rules/${rule.id}`, { enabled: true })).status).toBe(200);
  await heartbeat(agent, { metrics: { cpuPercent: 99 } });
  expect(await alertsOf(agent.deviceId)).toHaveLength(1);

  // A condition holding under the old conditions starts again under the new ones.
  const slow = await createRule(tech.as, cpuRule(org.id, { conditions: [{ type: 'metric', metric: 'ramPercent', operator: 'gt', threshold: 50, durationSeconds: 600 }] }));
  await heartbeat(agent, { metrics: { cpuPercent: 99, ramPercent: 80 } });
  const pending = () => sql(app, 'select since from alert_condition_state where rule_id = ?', [slow.id]);
  expect(await pending()).toHaveLength(1);
  expect((await rest(app, tech.as).patch(`/alerts/rules/${slow.id}`, { conditions: [{ type: 'metric', metric: 'ramPercent', operator: 'gt', threshold: 70, durationSeconds: 600 }] })).status).toBe(200);
  expect(await pending()).toEqual([]);
  await eventually(async () => {
    await heartbeat(agent, { metrics: { cpuPercent: 99, ramPercent: 80 } });
    return (await pending()).length === 1;
  }, 10_000, 'the condition to start again');
});

test('rules: CRUD, validation 400s, least privilege, and another organization’s rules and targets are not found (REST and GraphQL)', async () => {
  const { org, tech, agent } = await setup();
  const api = rest(app, tech.as);
  const bad = [
    { name: 'x', targetType: 'organization', targetId: org.id, severity: 'high' },
    { ...cpuRule(org.id), severity: 'urgent' },
    { ...cpuRule(org.id), targetType: 'planet' },
    { ...cpuRule(org.id), conditions: [{ type: 'metric', metric: 'cpuPercent', threshold: 90 }] },
    { ...cpuRule(org.id), conditions: [{ type: 'offline', status: 'x' }] },
    { ...cpuRule(org.id), conditions: [{ type: 'metric', metric: 'cpuPercent', operator: 'between', threshold: 90 }] },
    { ...cpuRule(org.id), conditions: [] },
    { ...cpuRule(org.id), cooldownMinutes: -1 },
  ];
  for (const body of bad) expect([(await api.post('/alerts/rules', body)).status, JSON.stringify(body)]).toEqual([400, JSON.stringify(body)]);

  const rule = await createRule(tech.as, cpuRule(org.id, { targetType: 'device', targetId: agent.deviceId }));
  expect((await api.get(`/alerts/rules/${rule.id}`)).body).toMatchObject({ id: rule.id, cooldownMinutes: 0, autoResolve: true, enabled: true });
  expect((await api.get('/alerts/rules')).body.data.map((r: { id: string }) => r.id)).toEqual([rule.id]);
  expect((await api.patch(`/alerts/rules/${rule.id}`, { severity: 'low' })).body.severity).toBe('low');
  expect((await api.patch(`/alerts/rules/${rule.id}`, { targetType: 'site' })).status).toBe(400);

  const viewer = await buildUser(app, { orgId: org.id, role: 'Organization Viewer' });
  expect((await rest(app, viewer.as).get(`/alerts/rules/${rule.id}`)).status).toBe(200);
  expect((await rest(app, viewer.as).post(`/alerts/rules/${rule.id}/test`, {})).status).toBe(200);
  expect((await rest(app, viewer.as).post('/alerts/rules', cpuRule(org.id))).status).toBe(403);
  expect((await rest(app, viewer.as).delete(`/alerts/rules/${rule.id}`)).status).toBe(403);

  const stranger = await buildUser(app, { orgId: (await buildOrg(app)).id, role: 'Organization Admin' });
  const them = rest(app, stranger.as);
  for (const res of [
    await them.get(`/alerts/rules/${rule.id}`),
    await them.patch(`/alerts/rules/${rule.id}`, { name: 'mine' }),
    await them.delete(`/alerts/rules/${rule.id}`),
    await them.post(`/alerts/rules/${rule.id}/test`, {}),
    await them.post('/alerts/rules', cpuRule(org.id)),
    await them.post('/alerts/rules', cpuRule(stranger.membership.orgId!, { targetType: 'device', targetId: agent.deviceId })),
    await them.post('/alerts/rules', cpuRule(stranger.membership.orgId!, { targetType: 'site', targetId: (await buildSite(app, org.id)).id })),
  ])
    expect([res.status, res.body.code]).toEqual([404, 'NOT_FOUND']);
  expect((await them.get('/alerts/rules')).body.data).toEqual([]);
  const gqlRes = await gql(app, stranger.as, 'query($id: ID!) { alertRule(id: $id) { id } }', { id: rule.id });
  expect(gqlRes.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  const mutationRes = await gql(app, stranger.as, 'mutation($id: ID!) { deleteAlertRule(id: $id) }', { id: rule.id });
  expect(mutationRes.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');

  const mine = await gql(app, tech.as, 'query { alertRules(limit: 10) { data { id severity conditions { type metric operator threshold } } } }');
  expect(mine.body.errors).toBeUndefined();
  expect(mine.body.data.alertRules.data).toEqual([{ id: rule.id, severity: 'LOW'.toLowerCase(), conditions: [{ type: 'metric', metric: 'cpuPercent', operator: 'gt', threshold: 90 }] }]);
  expect((await api.delete(`/alerts/rules/${rule.id}`)).status).toBe(204);
  expect((await api.get(`/alerts/rules/${rule.id}`)).status).toBe(404);
});

test('users limited to a site change and delete only rules watching within their sites', async () => {
  const { org, tech } = await setup();
  const [siteA, siteB] = [await buildSite(app, org.id), await buildSite(app, org.id)];
  const limited = await buildUser(app, { orgId: org.id, can: ['alerts:read', 'alerts:write'] });
  await sql(app, `update membership set site_ids = ?::jsonb where id = ?`, [JSON.stringify([siteA.id]), limited.membership.id]);
  const api = rest(app, limited.as);
  // An organization-wide rule reaches sites they cannot see: forbidden, as in every domain that targets devices.
  expect((await api.post('/alerts/rules', cpuRule(org.id))).status).toBe(403);
  const mine = await createRule(limited.as, cpuRule(org.id, { targetType: 'site', targetId: siteA.id }));
  expect((await api.patch(`/alerts/rules/${mine.id}`, { name: 'Mine' })).body.name).toBe('Mine');
  for (const other of [await createRule(tech.as, cpuRule(org.id)), await createRule(tech.as, cpuRule(org.id, { targetType: 'site', targetId: siteB.id }))]) {
    expect((await api.get(`/alerts/rules/${other.id}`)).status).toBe(200);
    expect((await api.patch(`/alerts/rules/${other.id}`, { enabled: false })).status).toBe(404);
    expect((await api.delete(`/alerts/rules/${other.id}`)).status).toBe(404);
    expect((await rest(app, tech.as).get(`/alerts/rules/${other.id}`)).body.enabled).toBe(true);
  }
  expect((await api.delete(`/alerts/rules/${mine.id}`)).status).toBe(204);
});

test('a group rule watches the group’s members only, its alerts are one incident; the rule test sees the same devices', async () => {
  const { org, tech, agent, key, api } = await setup();
  const [mate, outsider] = [await enroll(app, key, 'a-mate'), await enroll(app, key)];
  const group = await api.post('/groups', { name: 'Servers', type: 'static' });
  expect(group.status).toBe(201);
  expect((await api.post(`/groups/${group.body.id}/devices`, { deviceIds: [agent.deviceId, mate.deviceId] })).status).toBe(200);
  const rule = await createRule(tech.as, cpuRule(org.id, { targetType: 'group', targetId: group.body.id }));
  for (const device of [agent, mate, outsider]) await heartbeat(device, { metrics: { cpuPercent: 99 } });
  expect(await alertsOf(agent.deviceId)).toHaveLength(1);
  expect(await alertsOf(mate.deviceId)).toHaveLength(1);
  expect(await alertsOf(outsider.deviceId)).toEqual([]);
  const incidents = (await api.get('/alert-templates/correlations/groups')).body.data;
  expect(incidents.map((g: { key: string; alertCount: number }) => [g.key, g.alertCount])).toEqual([[`group:${group.body.id}`, 2]]);
  expect((await api.post(`/alerts/rules/${rule.id}/test`, {})).body.wouldFire.map((h: { deviceId: string }) => h.deviceId).sort()).toEqual([agent.deviceId, mate.deviceId].sort());
  const otherGroup = await rest(app, (await buildUser(app, { orgId: (await buildOrg(app)).id, role: 'Organization Admin' })).as).post('/groups', { name: 'Theirs', type: 'static' });
  expect((await api.post('/alerts/rules', cpuRule(org.id, { targetType: 'group', targetId: otherGroup.body.id }))).status).toBe(404);
});
