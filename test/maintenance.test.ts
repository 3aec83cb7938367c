import { RequestContext } from '../src/auth/context.js';
import { sweepDeviceStatus } from '../src/services/devices/agents.js';
import { createTestApp, type TestApp } from './support/app.js';
import { TestClock } from './support/clock.js';
import { gql, rest, type As } from './support/clients.js';
import { sql } from './support/db.js';
import { agentCall, enroll, fleet, type EnrolledAgent } from './support/devices.js';
import { eventually } from './support/eventually.js';
import { buildOrg, buildSite, buildUser } from './support/factories.js';
import { startReleasesApi, type ReleasesApi } from './support/releases-api.js';

// Maintenance windows through the real HTTP and GraphQL interfaces: schedules across daylight-saving
// changes, occurrences started and ended by hand and by their Agenda jobs, devices in `maintenance`
// meanwhile (and no agent upgrade with deferUpdates), cancellation, tenancy and validation.

const clock = new TestClock();
let app: TestApp;
let releases: ReleasesApi;

beforeAll(async () => {
  releases = await startReleasesApi();
  app = await createTestApp({ env: { ALLOW_PRIVATE_NETWORK_TARGETS: 'true', AGENT_RELEASES_API_URL: releases.apiUrl }, start: { clock } });
  // A promoted 1.1.0 agent for linux/amd64: heartbeats at 1.0.0 are offered it unless something withholds it.
  releases.publish({ tag: 'v1.1.0', binaries: [{ name: 'rmm-agent-linux-amd64', content: '#!/bin/sh\n' }] });
  const platform = await buildUser(app, { role: 'Platform Admin' });
  expect((await rest(app, platform.as).post('/agent-versions/sync-github')).status).toBe(200);
});
afterAll(async () => {
  await app.stop();
  await releases.close();
});

const window = (fields: Record<string, unknown> = {}) => ({
  name: 'Patch night',
  timezone: 'UTC',
  startsAt: '2030-01-01T02:00:00',
  durationMinutes: 60,
  recurrence: { type: 'once' },
  ...fields,
});

async function createWindow(as: As, fields: Record<string, unknown> = {}): Promise<any> {
  const res = await rest(app, as).post('/maintenance/windows', window(fields));
  expect([res.status, res.body.message]).toEqual([201, undefined]);
  return res.body;
}

async function occurrences(as: As, windowId: string, from: string, to: string): Promise<{ id: string; startsAt: string; endsAt: string; status: string }[]> {
  const res = await rest(app, as).get(`/maintenance/windows/${windowId}/occurrences?from=${from}&to=${to}`);
  expect([res.status, res.body.message]).toEqual([200, undefined]);
  return res.body.data;
}

const starts = async (as: As, windowId: string, from: string, to: string) => (await occurrences(as, windowId, from, to)).map((o) => o.startsAt);

const deviceStatus = async (as: As, deviceId: string) => (await rest(app, as).get(`/devices/${deviceId}`)).body.status;

const heartbeat = async (agent: EnrolledAgent, agentVersion = '1.0.0') => {
  const res = await agentCall(app, agent, '/heartbeat', { agentVersion });
  expect(res.status).toBe(200);
  return res.body;
};

/** `YYYY-MM-DDTHH:mm:ss` of an instant in UTC: a local start in the UTC zone. */
const localUtc = (date: Date) => date.toISOString().slice(0, 19);

describe('schedules', () => {
  test('a weekly window in America/New_York starts at the right UTC instant on both sides of each daylight-saving change', async () => {
    const { tech } = await fleet(app);
    const spring = await createWindow(tech.as, { timezone: 'America/New_York', startsAt: '2026-03-01T02:30:00', recurrence: { type: 'weekly', daysOfWeek: [0] } });
    // 02:30 on 2026-03-08 does not exist (02:00 EST jumps to 03:00 EDT): it begins at 03:00 EDT, the first valid instant after it.
    expect(await starts(tech.as, spring.id, '2026-02-28T00:00:00Z', '2026-03-21T00:00:00Z')).toEqual(['2026-03-01T07:30:00.000Z', '2026-03-08T07:00:00.000Z', '2026-03-15T06:30:00.000Z']);

    const fall = await createWindow(tech.as, { timezone: 'America/New_York', startsAt: '2026-10-25T01:30:00', durationMinutes: 30, recurrence: { type: 'weekly', daysOfWeek: [0] } });
    // 01:30 on 2026-11-01 happens twice (EDT, then EST): it begins at the first.
    const fallen = await occurrences(tech.as, fall.id, '2026-10-24T00:00:00Z', '2026-11-14T00:00:00Z');
    expect(fallen.map((o) => [o.startsAt, o.endsAt])).toEqual([
      ['2026-10-25T05:30:00.000Z', '2026-10-25T06:00:00.000Z'],
      ['2026-11-01T05:30:00.000Z', '2026-11-01T06:00:00.000Z'],
      ['2026-11-08T06:30:00.000Z', '2026-11-08T07:00:00.000Z'],
    ]);
    // Listing again makes nothing new: the same rows, the same ids.
    expect(await occurrences(tech.as, fall.id, '2026-10-24T00:00:00Z', '2026-11-14T00:00:00Z')).toEqual(fallen);
    const one = await rest(app, tech.as).get(`/maintenance/occurrences/${fallen[1]!.id}`);
    expect([one.status, one.body.windowId, one.body.startsAt]).toEqual([200, fall.id, '2026-11-01T05:30:00.000Z']);
  });

  test('weekly on several days, daily until a date, monthly skipping months without the day', async () => {
    const { tech } = await fleet(app);
    const weekly = await createWindow(tech.as, { timezone: 'Europe/Berlin', startsAt: '2030-01-07T23:00:00', recurrence: { type: 'weekly', daysOfWeek: [1, 3] } });
    expect(await starts(tech.as, weekly.id, '2030-01-07T00:00:00Z', '2030-01-15T00:00:00Z')).toEqual(['2030-01-07T22:00:00.000Z', '2030-01-09T22:00:00.000Z', '2030-01-14T22:00:00.000Z']);

    const daily = await createWindow(tech.as, { timezone: 'Asia/Tokyo', startsAt: '2030-02-10T01:00', recurrence: { type: 'daily', until: '2030-02-12' } });
    expect(daily.startsAt).toBe('2030-02-10T01:00:00');
    expect(await starts(tech.as, daily.id, '2030-02-01T00:00:00Z', '2030-03-01T00:00:00Z')).toEqual(['2030-02-09T16:00:00.000Z', '2030-02-10T16:00:00.000Z', '2030-02-11T16:00:00.000Z']);

    const monthly = await createWindow(tech.as, { startsAt: '2030-01-31T09:00:00', recurrence: { type: 'monthly' } });
    expect(await starts(tech.as, monthly.id, '2030-01-01T00:00:00Z', '2030-06-01T00:00:00Z')).toEqual(['2030-01-31T09:00:00.000Z', '2030-03-31T09:00:00.000Z', '2030-05-31T09:00:00.000Z']);
  });

  test('invalid schedules and targets are 400s that say what is wrong', async () => {
    const { tech } = await fleet(app);
    const other = await fleet(app);
    const otherDevice = await enroll(app, other.key);
    const api = rest(app, tech.as);
    const cases: [Record<string, unknown>, string][] = [
      [{ timezone: 'Mars/Olympus_Mons' }, 'timezone: "Mars/Olympus_Mons" is not a known IANA time zone (e.g. America/New_York)'],
      [{ startsAt: '2030-02-30T02:00:00' }, 'startsAt: must be a local date-time without an offset, YYYY-MM-DDTHH:mm[:ss]'],
      [{ startsAt: '2030-01-01T02:00:00Z' }, 'startsAt: must be a local date-time without an offset, YYYY-MM-DDTHH:mm[:ss]'],
      [{ recurrence: { type: 'daily', daysOfWeek: [1] } }, 'recurrence.daysOfWeek: applies to weekly recurrences only'],
      [{ recurrence: { type: 'weekly', dayOfMonth: 3 } }, 'recurrence.dayOfMonth: applies to monthly recurrences only'],
      [{ recurrence: { type: 'daily', until: '2029-12-31' } }, 'recurrence.until: must not be before the start date'],
    ];
    // Another organization's device is not found, as in every domain that targets devices.
    expect((await api.post('/maintenance/windows', window({ targets: { deviceIds: [otherDevice.deviceId] } }))).body).toMatchObject({ code: 'NOT_FOUND', message: 'Device not found' });
    for (const [fields, message] of cases) {
      const res = await api.post('/maintenance/windows', window(fields));
      expect({ fields, status: res.status, body: res.body }).toMatchObject({ fields, status: 400, body: { code: 'VALIDATION_ERROR', message } });
    }
    for (const fields of [{ recurrence: { type: 'weekly', daysOfWeek: [7] } }, { recurrence: { type: 'hourly' } }, { durationMinutes: 0 }]) {
      const res = await api.post('/maintenance/windows', window(fields));
      expect({ fields, status: res.status, code: res.body.code }).toEqual({ fields, status: 400, code: 'VALIDATION_ERROR' });
    }
    const created = await createWindow(tech.as);
    // A one-off window lists its one occurrence without a range, however far ahead.
    expect((await rest(app, tech.as).get(`/maintenance/windows/${created.id}/occurrences`)).body.data.map((o: any) => [o.startsAt, o.endsAt])).toEqual([['2030-01-01T02:00:00.000Z', '2030-01-01T03:00:00.000Z']]);
    const tooLong = await api.get(`/maintenance/windows/${created.id}/occurrences?from=2030-01-01T00:00:00Z&to=2031-06-01T00:00:00Z`);
    expect([tooLong.status, tooLong.body.message]).toEqual([400, 'to: a range spans at most 366 days']);
    // Listing makes occurrence rows: a range far from now would let a reader fill the table range after range.
    const farAhead = await api.get(`/maintenance/windows/${created.id}/occurrences?from=2045-01-01T00:00:00Z&to=2045-02-01T00:00:00Z`);
    expect([farAhead.status, farAhead.body.message]).toEqual([400, 'from: must be within 3653 days of now']);
  });
});

describe('occurrences and devices', () => {
  test('started and ended by hand: targeted devices show maintenance (heartbeats keep it, no upgradeTo with deferUpdates), then online again', async () => {
    const { tech, key } = await fleet(app);
    const [inside, outside] = [await enroll(app, key), await enroll(app, key)];
    expect((await heartbeat(inside)).upgradeTo).toMatchObject({ version: '1.1.0' });
    const created = await createWindow(tech.as, { startsAt: localUtc(new Date(clock.now().getTime() + 86_400_000)), targets: { deviceIds: [inside.deviceId] }, deferUpdates: true });
    const [occurrence] = await occurrences(tech.as, created.id, clock.now().toISOString(), new Date(clock.now().getTime() + 2 * 86_400_000).toISOString());
    expect(occurrence!.status).toBe('scheduled');

    const started = await rest(app, tech.as).post(`/maintenance/occurrences/${occurrence!.id}/start`);
    expect([started.status, started.body.status, started.body.startedAt]).toEqual([200, 'active', expect.any(String)]);
    expect([await deviceStatus(tech.as, inside.deviceId), await deviceStatus(tech.as, outside.deviceId)]).toEqual(['maintenance', 'online']);
    const [event] = await sql(app, `select type, data from outbox_event where data->>'deviceId' = ? order by created_at desc limit 1`, [inside.deviceId]);
    expect([event.type, event.data.status, event.data.previousStatus]).toEqual(['device.updated', 'maintenance', 'online']);

    // The steady heartbeat (same version) and the full one (a new version) both keep `maintenance`; presence still moves.
    const before = (await rest(app, tech.as).get(`/devices/${inside.deviceId}`)).body.lastSeenAt;
    clock.advance(1000);
    expect((await heartbeat(inside)).upgradeTo).toBeNull();
    expect((await heartbeat(inside, '1.0.1')).upgradeTo).toBeNull();
    const device = (await rest(app, tech.as).get(`/devices/${inside.deviceId}`)).body;
    expect([device.status, device.lastSeenAt > before]).toEqual(['maintenance', true]);
    expect((await heartbeat(outside)).upgradeTo).toMatchObject({ version: '1.1.0' });

    const active = await rest(app, tech.as).get('/maintenance/active');
    expect(active.body.data.map((o: any) => o.id)).toEqual([occurrence!.id]);
    expect((await rest(app, tech.as).post(`/maintenance/occurrences/${occurrence!.id}/start`)).body).toMatchObject({ code: 'CONFLICT', message: 'Only scheduled occurrences can be started; this one is active' });

    const ended = await rest(app, tech.as).post(`/maintenance/occurrences/${occurrence!.id}/end`);
    expect([ended.status, ended.body.status, ended.body.endedAt]).toEqual([200, 'completed', expect.any(String)]);
    expect(await deviceStatus(tech.as, inside.deviceId)).toBe('online');
    expect((await heartbeat(inside, '1.0.1')).upgradeTo).toMatchObject({ version: '1.1.0' });
    expect((await rest(app, tech.as).get('/maintenance/active')).body.data).toEqual([]);
  });

  test('a device silent through its maintenance returns offline; the offline sweep leaves devices in maintenance; a device enrolled meanwhile joins it', async () => {
    const { tech, key } = await fleet(app);
    const agent = await enroll(app, key);
    const created = await createWindow(tech.as, { startsAt: localUtc(new Date(clock.now().getTime() + 86_400_000)) });
    const [occurrence] = await occurrences(tech.as, created.id, clock.now().toISOString(), new Date(clock.now().getTime() + 2 * 86_400_000).toISOString());
    await rest(app, tech.as).post(`/maintenance/occurrences/${occurrence!.id}/start`);
    expect(await deviceStatus(tech.as, agent.deviceId)).toBe('maintenance');
    await sql(app, `update device set last_seen_at = now() - interval '1 day' where id = ?`, [agent.deviceId]);
    // The sweep itself, as its job runs it: another device as silent goes offline, the one in maintenance stays.
    const witness = await enroll(app, (await fleet(app)).key);
    await sql(app, `update device set last_seen_at = now() - interval '1 day' where id = ?`, [witness.deviceId]);
    await sweepDeviceStatus(RequestContext.system(app.server.runtime, 'test: devices.status-sweep'));
    expect((await sql(app, 'select status from device where id = ?', [witness.deviceId]))[0].status).toBe('offline');
    expect(await deviceStatus(tech.as, agent.deviceId)).toBe('maintenance');
    // A device enrolled during the occurrence joins it within a tick.
    const late = await enroll(app, key);
    await eventually(async () => (await deviceStatus(tech.as, late.deviceId)) === 'maintenance', 15_000, 'the late device in maintenance');
    await rest(app, tech.as).post(`/maintenance/occurrences/${occurrence!.id}/end`);
    expect([await deviceStatus(tech.as, agent.deviceId), await deviceStatus(tech.as, late.deviceId)]).toEqual(['offline', 'online']);
  });

  test('Agenda starts and ends an occurrence at its instants, by the service clock', async () => {
    const { org, tech, key } = await fleet(app);
    const site = await buildSite(app, org.id);
    const agent = await enroll(app, key);
    await sql(app, 'update device set site_id = ? where id = ?', [site.id, agent.deviceId]);
    const startsAt = new Date(Math.ceil((clock.now().getTime() + 3000) / 1000) * 1000);
    const created = await createWindow(tech.as, { startsAt: localUtc(startsAt), durationMinutes: 1, targets: { siteIds: [site.id] } });
    expect(created.siteId).toBe(site.id);
    const occurrence = await eventually(async () => {
      const list = (await rest(app, tech.as).get(`/maintenance/occurrences?windowId=${created.id}`)).body.data;
      return list[0]?.status === 'active' && list[0];
    }, 15_000, 'the start job');
    expect(occurrence.startsAt).toBe(startsAt.toISOString());
    expect(await deviceStatus(tech.as, agent.deviceId)).toBe('maintenance');

    // The clock moves past the end: the occurrence ends without waiting a real minute.
    clock.advance(60_000);
    await eventually(async () => (await rest(app, tech.as).get(`/maintenance/occurrences/${occurrence.id}`)).body.status === 'completed', 30_000, 'the end');
    expect(await deviceStatus(tech.as, agent.deviceId)).toBe('online');
  });

  test('cancel: future occurrences are cancelled, the window takes no more changes', async () => {
    const { tech } = await fleet(app);
    const created = await createWindow(tech.as, { startsAt: '2030-03-01T02:00:00', recurrence: { type: 'daily' } });
    const before = await occurrences(tech.as, created.id, '2030-03-01T00:00:00Z', '2030-03-04T00:00:00Z');
    expect(before.map((o) => o.status)).toEqual(['scheduled', 'scheduled', 'scheduled']);
    const cancelled = await rest(app, tech.as).post(`/maintenance/windows/${created.id}/cancel`);
    expect([cancelled.status, cancelled.body.status, cancelled.body.cancelledAt]).toEqual([200, 'cancelled', expect.any(String)]);
    expect((await occurrences(tech.as, created.id, '2030-03-01T00:00:00Z', '2030-03-04T00:00:00Z')).map((o) => o.status)).toEqual(['cancelled', 'cancelled', 'cancelled']);
    expect((await rest(app, tech.as).post(`/maintenance/occurrences/${before[0]!.id}/start`)).status).toBe(409);
    expect((await rest(app, tech.as).patch(`/maintenance/windows/${created.id}`, { name: 'Again' })).body).toMatchObject({ code: 'CONFLICT', message: 'The maintenance window is cancelled' });
    expect((await rest(app, tech.as).delete(`/maintenance/windows/${created.id}`)).status).toBe(204);
    expect((await rest(app, tech.as).get(`/maintenance/windows/${created.id}`)).status).toBe(404);
  });

  test('PATCH reschedules the occurrences not begun', async () => {
    const { tech } = await fleet(app);
    const created = await createWindow(tech.as, { startsAt: '2030-04-01T02:00:00', recurrence: { type: 'daily' } });
    expect(await starts(tech.as, created.id, '2030-04-01T00:00:00Z', '2030-04-03T00:00:00Z')).toEqual(['2030-04-01T02:00:00.000Z', '2030-04-02T02:00:00.000Z']);
    const patched = await rest(app, tech.as).patch(`/maintenance/windows/${created.id}`, { startsAt: '2030-04-01T04:00:00', name: 'Later' });
    expect([patched.status, patched.body.startsAt, patched.body.name]).toEqual([200, '2030-04-01T04:00:00', 'Later']);
    expect(await starts(tech.as, created.id, '2030-04-01T00:00:00Z', '2030-04-03T00:00:00Z')).toEqual(['2030-04-01T04:00:00.000Z', '2030-04-02T04:00:00.000Z']);
  });
});

describe('access', () => {
  test('another organization sees none of it and reaches none of it: 404 on every route, REST and GraphQL', async () => {
    const { tech } = await fleet(app);
    const stranger = (await fleet(app)).tech;
    const created = await createWindow(tech.as, { startsAt: '2030-05-01T02:00:00', recurrence: { type: 'daily' } });
    const [occurrence] = await occurrences(tech.as, created.id, '2030-05-01T00:00:00Z', '2030-05-02T00:00:00Z');
    await rest(app, tech.as).post(`/maintenance/occurrences/${occurrence!.id}/start`);
    const api = rest(app, stranger.as);
    for (const [method, path] of [
      ['get', `/maintenance/windows/${created.id}`],
      ['patch', `/maintenance/windows/${created.id}`],
      ['delete', `/maintenance/windows/${created.id}`],
      ['post', `/maintenance/windows/${created.id}/cancel`],
      ['get', `/maintenance/windows/${created.id}/occurrences`],
      ['get', `/maintenance/occurrences/${occurrence!.id}`],
      ['post', `/maintenance/occurrences/${occurrence!.id}/start`],
      ['post', `/maintenance/occurrences/${occurrence!.id}/end`],
    ] as const) {
      const res = method === 'get' || method === 'delete' ? await api[method](path) : await api[method](path, method === 'patch' ? { name: 'Mine' } : {});
      expect({ method, path, status: res.status, code: res.body.code }).toEqual({ method, path, status: 404, code: 'NOT_FOUND' });
    }
    for (const path of ['/maintenance/windows', '/maintenance/occurrences', '/maintenance/active']) {
      const res = await api.get(path);
      expect({ path, status: res.status, data: res.body.data }).toEqual({ path, status: 200, data: [] });
    }
    const other = await api.post('/maintenance/windows', window({ orgId: created.orgId }));
    expect(other.status).toBe(404);

    for (const [query, variables] of [
      ['query($id: ID!) { maintenanceWindow(id: $id) { id } }', { id: created.id }],
      ['query($id: ID!) { maintenanceOccurrence(id: $id) { id } }', { id: occurrence!.id }],
      ['query($id: ID!) { maintenanceWindowOccurrences(id: $id) { data { id } } }', { id: created.id }],
      ['mutation($id: ID!) { updateMaintenanceWindow(id: $id, input: { name: "Mine" }) { id } }', { id: created.id }],
      ['mutation($id: ID!) { deleteMaintenanceWindow(id: $id) }', { id: created.id }],
      ['mutation($id: ID!) { cancelMaintenanceWindow(id: $id) { id } }', { id: created.id }],
      ['mutation($id: ID!) { startMaintenanceOccurrence(id: $id) { id } }', { id: occurrence!.id }],
      ['mutation($id: ID!) { endMaintenanceOccurrence(id: $id) { id } }', { id: occurrence!.id }],
    ] as const) {
      const res = await gql(app, stranger.as, query, variables);
      expect({ query, code: res.body.errors?.[0]?.extensions?.code }).toEqual({ query, code: 'NOT_FOUND' });
    }
    const lists = await gql(app, stranger.as, '{ maintenanceWindows { totalCount edges { node { id } } } maintenanceOccurrences { totalCount } activeMaintenance { data { id } } }');
    expect(lists.body).toEqual({ data: { maintenanceWindows: { totalCount: 0, edges: [] }, maintenanceOccurrences: { totalCount: 0 }, activeMaintenance: { data: [] } } });
    // Still there, still active, for its own organization.
    expect((await rest(app, tech.as).get('/maintenance/active')).body.data.map((o: any) => o.id)).toEqual([occurrence!.id]);
  });

  test('the least-privileged roles: a viewer reads, a technician writes; GraphQL does the same', async () => {
    const { org, tech } = await fleet(app);
    const viewer = await buildUser(app, { orgId: org.id, role: 'Organization Viewer' });
    const created = await gql(
      app,
      tech.as,
      `mutation($input: CreateMaintenanceWindowInput!) { createMaintenanceWindow(input: $input) { id status timezone recurrence { type daysOfWeek } targets { siteIds } } }`,
      { input: window({ timezone: 'America/New_York', recurrence: { type: 'weekly', daysOfWeek: [2, 4] } }) },
    );
    const id = created.body.data.createMaintenanceWindow.id;
    expect(created.body.data.createMaintenanceWindow).toEqual({ id, status: 'active', timezone: 'America/New_York', recurrence: { type: 'weekly', daysOfWeek: [2, 4] }, targets: { siteIds: [] } });
    const read = await gql(app, viewer.as, '{ maintenanceWindows(first: 10) { totalCount edges { node { id name } } } }');
    expect(read.body.data.maintenanceWindows).toEqual({ totalCount: 1, edges: [{ node: { id, name: 'Patch night' } }] });
    const occurrencesRead = await gql(app, viewer.as, `query($id: ID!) { maintenanceWindowOccurrences(id: $id, from: "2030-01-01T00:00:00Z", to: "2030-01-08T00:00:00Z") { data { startsAt status } } }`, { id });
    // 2030-01-01 is a Tuesday: then Thursday; 02:00 EST is 07:00 UTC.
    expect(occurrencesRead.body.data.maintenanceWindowOccurrences.data).toEqual([
      { startsAt: '2030-01-01T07:00:00.000Z', status: 'scheduled' },
      { startsAt: '2030-01-03T07:00:00.000Z', status: 'scheduled' },
    ]);
    expect((await rest(app, viewer.as).post('/maintenance/windows', window())).body.code).toBe('FORBIDDEN');
    expect((await gql(app, viewer.as, `mutation($id: ID!) { cancelMaintenanceWindow(id: $id) { id } }`, { id })).body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const devicesOnly = await buildUser(app, { orgId: org.id, can: ['devices:read'] });
    expect((await rest(app, devicesOnly.as).get('/maintenance/windows')).status).toBe(403);
  });

  test('users limited to a site see and make only windows within their site', async () => {
    const org = await buildOrg(app);
    const [siteA, siteB] = [await buildSite(app, org.id), await buildSite(app, org.id)];
    const admin = await buildUser(app, { orgId: org.id, role: 'Organization Technician' });
    const limited = await buildUser(app, { orgId: org.id, role: 'Organization Technician' });
    await sql(app, `update membership set site_ids = ?::jsonb where id = ?`, [JSON.stringify([siteA.id]), limited.membership.id]);
    const wide = await createWindow(admin.as);
    const inB = await createWindow(admin.as, { targets: { siteIds: [siteB.id] } });
    const mine = await createWindow(limited.as, { targets: { siteIds: [siteA.id] } });
    expect((await rest(app, limited.as).get('/maintenance/windows')).body.data.map((w: any) => w.id)).toEqual([mine.id]);
    for (const id of [wide.id, inB.id]) expect((await rest(app, limited.as).get(`/maintenance/windows/${id}`)).status).toBe(404);
    expect((await rest(app, limited.as).post('/maintenance/windows', window())).status).toBe(403);
    expect((await rest(app, limited.as).post('/maintenance/windows', window({ targets: { siteIds: [siteB.id] } }))).status).toBe(404);
  });
});

describe('reading writes nothing', () => {
  // Last in the file: it moves the shared clock a month ahead.
  test('a viewer lists a year of occurrences: no row and no job is made; the tick makes them within the horizon and starts one under the id listed', async () => {
    const { org, tech } = await fleet(app);
    const viewer = await buildUser(app, { orgId: org.id, role: 'Organization Viewer' });
    // Daily from 30 days ahead: beyond the scheduling horizon (14 days), so creating it makes no row either.
    const first = new Date(Math.ceil((clock.now().getTime() + 30 * 86_400_000) / 1000) * 1000);
    const created = await createWindow(tech.as, { startsAt: localUtc(first), durationMinutes: 1, recurrence: { type: 'daily' } });
    const rowsOf = async () => (await sql(app, 'select count(*)::int as n from maintenance_occurrence where window_id = ?', [created.id]))[0].n;
    const jobsOf = async (ids: string[]) => (await sql(app, `select count(*)::int as n from agenda_jobs where data->>'occurrenceId' = any(?::text[])`, [`{${ids.join(',')}}`]))[0].n;

    const yearRange = [clock.now().toISOString(), new Date(first.getTime() + 335 * 86_400_000).toISOString()] as const;
    const year = await occurrences(viewer.as, created.id, ...yearRange);
    expect(year).toHaveLength(335);
    expect([year[0]!.startsAt, year[1]!.startsAt, new Set(year.map((o) => o.status))]).toEqual([first.toISOString(), new Date(first.getTime() + 86_400_000).toISOString(), new Set(['scheduled'])]);
    expect(new Set(year.map((o) => o.id)).size).toBe(335);
    // Read again, one by id, and over GraphQL: the same occurrences, the same ids.
    expect(await occurrences(viewer.as, created.id, ...yearRange)).toEqual(year);
    const one = await rest(app, viewer.as).get(`/maintenance/occurrences/${year[0]!.id}`);
    expect([one.status, one.body]).toEqual([200, year[0]]);
    const overGraphql = await gql(app, viewer.as, 'query($id: ID!) { maintenanceOccurrence(id: $id) { id startsAt status } }', { id: year[1]!.id });
    expect(overGraphql.body.data.maintenanceOccurrence).toEqual({ id: year[1]!.id, startsAt: year[1]!.startsAt, status: 'scheduled' });
    expect([await rowsOf(), await jobsOf(year.map((o) => o.id))]).toEqual([0, 0]);
    // Another organization cannot read one by its id.
    expect((await rest(app, (await fleet(app)).tech.as).get(`/maintenance/occurrences/${year[0]!.id}`)).status).toBe(404);

    // A month later the first occurrence comes within the horizon: the tick makes its row (under the id
    // listed), queues its jobs, and it starts at its time.
    clock.set(new Date(first.getTime() - 3000));
    const started = await eventually(async () => {
      const res = await rest(app, viewer.as).get(`/maintenance/occurrences/${year[0]!.id}`);
      return res.body.status === 'active' && res.body;
    }, 30_000, 'the first occurrence to start');
    expect([started.startsAt, started.startedAt !== null]).toEqual([first.toISOString(), true]);
    expect(await rowsOf()).toBeGreaterThanOrEqual(14);
    expect(await jobsOf([year[1]!.id])).toBe(2);
  });
});
