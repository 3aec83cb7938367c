import { TestClock } from './support/clock.js';
import { createTestApp, type TestApp } from './support/app.js';
import { rest } from './support/clients.js';
import { auditOf, sql } from './support/db.js';
import { eventually } from './support/eventually.js';
import { buildOrg, buildSite, buildUser, type BuiltUser } from './support/factories.js';

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => {
  await app.stop();
});

const agentInfo = (hostname: string, extra: Record<string, unknown> = {}) => ({
  hostname,
  osType: 'linux',
  osVersion: 'Debian 12',
  architecture: 'amd64',
  agentVersion: '1.0.0',
  ...extra,
});

/** An organization with a technician (the least role that works on devices) and a fresh enrollment key. */
async function fleet(target: TestApp = app) {
  const org = await buildOrg(target);
  const tech = await buildUser(target, { orgId: org.id, role: 'Organization Technician' });
  const key = await rest(target, tech.as).post('/enrollment-keys', { name: 'Rollout' });
  expect(key.status).toBe(201);
  return { org, tech, key: key.body.key as string, keyId: key.body.id as string };
}

async function enroll(key: string, hostname: string, extra: Record<string, unknown> = {}, target: TestApp = app) {
  const res = await rest(target).post('/agents/enroll', { enrollmentKey: key, ...agentInfo(hostname, extra) });
  expect(res.status).toBe(201);
  return res.body as { deviceId: string; agentId: string; authToken: string; orgId: string; siteId: string | null; config: { heartbeatIntervalSeconds: number } };
}

const agentCall = (agent: { agentId: string; authToken: string }, path: string, body: unknown, target: TestApp = app) =>
  rest(target, null).post(`/agents/${agent.agentId}${path}`, body, { authorization: `Bearer ${agent.authToken}` });

describe('enrollment keys', () => {
  test('a technician creates a key that is shown once, hashed at rest, and lists, rotates and deletes it', async () => {
    const { org, tech, key, keyId } = await fleet();
    expect(key).toMatch(/^enr_/);
    const api = rest(app, tech.as);
    const shown = await api.get(`/enrollment-keys/${keyId}`);
    expect(shown.status).toBe(200);
    expect(shown.body).toMatchObject({ id: keyId, orgId: org.id, usageCount: 0, maxUsage: null, expiresAt: null, status: 'active' });
    expect(shown.body.key).toBeUndefined();
    expect(JSON.stringify(await sql(app, 'select * from enrollment_key where id = ?', [keyId]))).not.toContain(key);

    const rotated = await api.post(`/enrollment-keys/${keyId}/rotate`);
    expect(rotated.status).toBe(200);
    expect(rotated.body.key).not.toBe(key);
    const old = await rest(app).post('/agents/enroll', { enrollmentKey: key, ...agentInfo('old-key') });
    expect([old.status, old.body.code]).toEqual([401, 'UNAUTHENTICATED']);
    await enroll(rotated.body.key, 'new-key');

    const list = await api.get('/enrollment-keys');
    expect(list.body.data.map((k: { id: string }) => k.id)).toEqual([keyId]);
    expect((await api.delete(`/enrollment-keys/${keyId}`)).status).toBe(204);
    expect((await rest(app).post('/agents/enroll', { enrollmentKey: rotated.body.key, ...agentInfo('gone') })).status).toBe(401);
    expect((await auditOf(app, keyId, ['action'])).map((r) => r.action)).toEqual(['enrollment_key.create', 'enrollment_key.rotate', 'enrollment_key.delete']);
  });

  test('expired and exhausted keys are refused with 401; a viewer may not create keys', async () => {
    const { org, tech } = await fleet();
    const api = rest(app, tech.as);
    const once = await api.post('/enrollment-keys', { name: 'Once', maxUsage: 1 });
    await enroll(once.body.key, 'first');
    const again = await rest(app).post('/agents/enroll', { enrollmentKey: once.body.key, ...agentInfo('second') });
    expect([again.status, again.body.code]).toEqual([401, 'UNAUTHENTICATED']);
    expect((await api.get(`/enrollment-keys/${once.body.id}`)).body).toMatchObject({ usageCount: 1, status: 'exhausted' });

    const soon = await api.post('/enrollment-keys', { name: 'Soon', expiresAt: new Date(Date.now() + 60_000).toISOString() });
    await sql(app, `update enrollment_key set expires_at = now() - interval '1 second' where id = ?`, [soon.body.id]);
    expect((await rest(app).post('/agents/enroll', { enrollmentKey: soon.body.key, ...agentInfo('late') })).status).toBe(401);
    expect((await rest(app).post('/agents/enroll', { enrollmentKey: 'enr_nothing_real', ...agentInfo('forged') })).status).toBe(401);

    const viewer = await buildUser(app, { orgId: org.id, role: 'Organization Viewer' });
    expect((await rest(app, viewer.as).post('/enrollment-keys', { name: 'No' })).status).toBe(403);
    expect((await api.post('/enrollment-keys', { name: 'Past', expiresAt: '2001-01-01T00:00:00Z' })).status).toBe(400);
  });
});

describe('enrollment', () => {
  test('enrolling answers the device, agent, one-time token and config; the same machineId re-enrolls the same device with a new token', async () => {
    const { org, tech, key } = await fleet();
    const first = await enroll(key, 'web-01', { machineId: 'machine-a' });
    expect(first).toEqual({ deviceId: expect.any(String), agentId: expect.any(String), authToken: expect.any(String), orgId: org.id, siteId: null, config: { heartbeatIntervalSeconds: 60 } });
    const device = await rest(app, tech.as).get(`/devices/${first.deviceId}`);
    expect(device.body).toMatchObject({ hostname: 'web-01', status: 'online', osType: 'linux', agentVersion: '1.0.0', autoUpdate: true });

    const second = await enroll(key, 'web-01-renamed', { machineId: 'machine-a' });
    expect(second.deviceId).toBe(first.deviceId);
    expect(second.authToken).not.toBe(first.authToken);
    expect((await agentCall(first, '/heartbeat', { agentVersion: '1.0.0' })).status).toBe(401);
    expect((await agentCall(second, '/heartbeat', { agentVersion: '1.0.0' })).status).toBe(200);
    expect((await rest(app, tech.as).get('/devices')).body.devices).toHaveLength(1);
    expect((await sql(app, `select type from outbox_event where data->>'deviceId' = ? order by created_at`, [first.deviceId])).map((r) => r.type)).toEqual([
      'device.enrolled',
      'device.enrolled',
    ]);
  });

  test('a provisioned device is pending until its single-use key claims exactly it', async () => {
    const { org, tech } = await fleet();
    const site = await buildSite(app, org.id);
    const provisioned = await rest(app, tech.as).post('/devices/provision', { siteId: site.id, hostname: 'reception-pc' });
    expect(provisioned.status).toBe(201);
    const { deviceId, enrollmentKey } = provisioned.body;
    expect((await rest(app, tech.as).get(`/devices/${deviceId}`)).body).toMatchObject({ status: 'pending', siteId: site.id, lastSeenAt: null, enrolledAt: null });
    const claimed = await enroll(enrollmentKey, 'RECEPTION-PC');
    expect([claimed.deviceId, claimed.siteId]).toEqual([deviceId, site.id]);
    expect((await rest(app, tech.as).get(`/devices/${deviceId}`)).body).toMatchObject({ status: 'online', hostname: 'RECEPTION-PC' });
    expect((await rest(app).post('/agents/enroll', { enrollmentKey, ...agentInfo('again') })).status).toBe(401);
  });
});

describe('agent protocol', () => {
  test("another device's token, a malformed agent id and no token are 401 and reveal nothing", async () => {
    const { key } = await fleet();
    const a = await enroll(key, 'a');
    const b = await enroll(key, 'b');
    const crossed = await agentCall({ agentId: a.agentId, authToken: b.authToken }, '/heartbeat', { agentVersion: '1.0.0' });
    expect([crossed.status, crossed.body.code]).toEqual([401, 'UNAUTHENTICATED']);
    expect((await agentCall({ agentId: 'not-a-uuid', authToken: a.authToken }, '/heartbeat', { agentVersion: '1.0.0' })).status).toBe(404);
    expect((await rest(app).post(`/agents/${a.agentId}/heartbeat`, { agentVersion: '1.0.0' })).status).toBe(401);
  });

  test('a queued command is handed out once, even to concurrent heartbeats, and its result is stored', async () => {
    const { tech, key } = await fleet();
    const agent = await enroll(key, 'srv');
    const queued = await rest(app, tech.as).post(`/devices/${agent.deviceId}/commands`, { type: 'reboot', payload: { delaySeconds: 5 } });
    expect(queued.status).toBe(201);
    expect(queued.body).toMatchObject({ deviceId: agent.deviceId, type: 'reboot', status: 'pending' });

    const beats = await Promise.all(Array.from({ length: 8 }, () => agentCall(agent, '/heartbeat', { agentVersion: '1.0.0', metrics: { cpuPercent: 12 } })));
    expect(beats.every((b) => b.status === 200)).toBe(true);
    const handed = beats.flatMap((b) => b.body.commands);
    expect(handed).toEqual([{ id: queued.body.id, type: 'reboot', payload: { delaySeconds: 5 } }]);
    expect(beats[0]!.body).toMatchObject({ configUpdate: null, upgradeTo: null });

    const result = await agentCall(agent, `/commands/${queued.body.id}/result`, { status: 'completed', exitCode: 0, stdout: 'bye' });
    expect(result.status).toBe(200);
    const list = await rest(app, tech.as).get(`/devices/${agent.deviceId}/commands`);
    expect(list.body.data[0]).toMatchObject({ id: queued.body.id, status: 'completed', exitCode: 0, stdout: 'bye' });
    expect((await rest(app, tech.as).get(`/devices/${agent.deviceId}`)).body.metrics).toEqual({ cpuPercent: 12 });
  });

  test('a second refresh_inventory while one is open is 409 ALREADY_PENDING; bulk reports commands, skipped and failed', async () => {
    const { tech, key } = await fleet();
    const a = await enroll(key, 'a');
    const b = await enroll(key, 'b');
    const api = rest(app, tech.as);
    expect((await api.post(`/devices/${a.deviceId}/commands`, { type: 'refresh_inventory' })).status).toBe(201);
    const dup = await api.post(`/devices/${a.deviceId}/commands`, { type: 'refresh_inventory' });
    expect([dup.status, dup.body.code]).toEqual([409, 'ALREADY_PENDING']);

    const other = await fleet();
    const foreign = await enroll(other.key, 'foreign');
    const bulk = await api.post('/devices/bulk/commands', { deviceIds: [a.deviceId, b.deviceId, foreign.deviceId], type: 'refresh_inventory' });
    expect(bulk.status).toBe(200);
    expect(bulk.body.commands.map((c: { deviceId: string }) => c.deviceId)).toEqual([b.deviceId]);
    expect(bulk.body.skipped).toEqual([{ deviceId: a.deviceId, reason: 'already_pending' }]);
    expect(bulk.body.failed).toEqual([{ deviceId: foreign.deviceId, code: 'NOT_FOUND', message: 'Device not found' }]);
  });

  test('an update shows the device updating until the first heartbeat with the new version', async () => {
    const { tech, key } = await fleet();
    const agent = await enroll(key, 'upd');
    expect((await agentCall(agent, '/update-status', { state: 'started', toVersion: '1.1.0' })).status).toBe(200);
    expect((await rest(app, tech.as).get(`/devices/${agent.deviceId}`)).body.status).toBe('updating');
    await agentCall(agent, '/heartbeat', { agentVersion: '1.0.0' });
    expect((await rest(app, tech.as).get(`/devices/${agent.deviceId}`)).body.status).toBe('updating');
    await agentCall(agent, '/heartbeat', { agentVersion: '1.1.0' });
    expect((await rest(app, tech.as).get(`/devices/${agent.deviceId}`)).body).toMatchObject({ status: 'online', agentVersion: '1.1.0' });
  });

  test('a version change outside an update is a device.updated event; a plain heartbeat emits nothing', async () => {
    const { tech, key } = await fleet();
    const agent = await enroll(key, 'reinstalled');
    await agentCall(agent, '/heartbeat', { agentVersion: '1.0.0' });
    expect((await agentCall(agent, '/heartbeat', { agentVersion: '1.2.0' })).status).toBe(200);
    expect((await rest(app, tech.as).get(`/devices/${agent.deviceId}`)).body).toMatchObject({ status: 'online', agentVersion: '1.2.0' });
    const events = await sql(app, `select type, data from outbox_event where data->>'deviceId' = ? order by created_at`, [agent.deviceId]);
    expect(events.map((e) => e.type)).toEqual(['device.enrolled', 'device.updated']);
    expect(events[1].data).toMatchObject({ status: 'online', previousStatus: null, changes: ['agentVersion'] });
  });

  test('inventory is stored per device', async () => {
    const { key } = await fleet();
    const agent = await enroll(key, 'inv');
    expect((await agentCall(agent, '/inventory', { software: [{ name: 'curl', version: '8' }] })).status).toBe(200);
    expect((await agentCall(agent, '/inventory', { hardware: { cpu: 'x' } })).status).toBe(200);
    const [row] = await sql(app, 'select hardware, software from device_inventory where device_id = ?', [agent.deviceId]);
    expect(row).toEqual({ hardware: { cpu: 'x' }, software: [{ name: 'curl', version: '8' }] });
  });
});

describe('device routes', () => {
  test('cursor pages visit every device exactly once, for each sort and direction, and a cursor from another sort is refused', async () => {
    const { tech, key } = await fleet();
    for (let i = 0; i < 7; i++) await enroll(key, `host-${String(i).padStart(2, '0')}`);
    const api = rest(app, tech.as);
    for (const sort of ['hostname', 'lastSeen', 'enrolled']) {
      for (const sortDir of ['asc', 'desc']) {
        const seen: string[] = [];
        let cursor: string | null = null;
        do {
          const res: { status: number; body: { devices: { id: string }[]; nextCursor: string | null; limit: number } } = await api.get(
            `/devices?limit=3&sort=${sort}&sortDir=${sortDir}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`,
          );
          expect(res.status).toBe(200);
          seen.push(...res.body.devices.map((d) => d.id));
          // A device added mid-walk must not make the walk repeat or skip the others.
          if (seen.length === 3 && sort === 'hostname') await enroll(key, sortDir === 'asc' ? 'zzz-late' : 'aaa-late');
          cursor = res.body.nextCursor;
        } while (cursor);
        expect(new Set(seen).size).toBe(seen.length);
        expect(seen.length).toBeGreaterThanOrEqual(7);
      }
    }
    const first = await api.get('/devices?limit=2&sort=hostname');
    const crossed = await api.get(`/devices?limit=2&sort=lastSeen&cursor=${encodeURIComponent(first.body.nextCursor)}`);
    expect([crossed.status, crossed.body.message]).toEqual([400, 'Invalid cursor']);
    const totals = await api.get('/devices?includeTotal=true&limit=1');
    expect(totals.body).toMatchObject({ limit: 1, total: 9 });
    expect((await api.get('/devices?page=2&limit=4')).body).toMatchObject({ pagination: { page: 2, limit: 4, total: 9 } });
    expect((await api.get('/devices?limit=1001')).status).toBe(400);
  });

  test("another organization's devices are invisible and untouchable; a site-limited user sees only its sites' devices", async () => {
    const mine = await fleet();
    const theirs = await fleet();
    const foreign = await enroll(theirs.key, 'foreign');
    const api = rest(app, mine.tech.as);
    expect((await api.get(`/devices/${foreign.deviceId}`)).status).toBe(404);
    expect((await api.post(`/devices/${foreign.deviceId}/commands`, { type: 'reboot' })).status).toBe(404);
    expect((await api.get(`/devices/${foreign.deviceId}/commands`)).status).toBe(404);
    expect((await api.delete(`/devices/${foreign.deviceId}`)).status).toBe(404);
    expect((await api.post(`/devices/${foreign.deviceId}/auto-update`, { enabled: false })).status).toBe(404);
    expect((await api.get(`/devices?orgIds=${theirs.org.id}`)).body.devices).toEqual([]);

    const siteA = await buildSite(app, mine.org.id);
    const siteB = await buildSite(app, mine.org.id);
    const keyA = await rest(app, mine.tech.as).post('/enrollment-keys', { name: 'A', siteId: siteA.id });
    const keyB = await rest(app, mine.tech.as).post('/enrollment-keys', { name: 'B', siteId: siteB.id });
    const inA = await enroll(keyA.body.key, 'in-a');
    const inB = await enroll(keyB.body.key, 'in-b');
    const limited: BuiltUser = await buildUser(app, { orgId: mine.org.id, role: 'Organization Technician' });
    await sql(app, `update membership set site_ids = ?::jsonb where id = ?`, [JSON.stringify([siteA.id]), limited.membership.id]);
    const seen = await rest(app, limited.as).get('/devices');
    expect(seen.body.devices.map((d: { id: string }) => d.id)).toEqual([inA.deviceId]);
    expect((await rest(app, limited.as).get(`/devices/${inB.deviceId}`)).status).toBe(404);
    expect((await rest(app, limited.as).post('/enrollment-keys', { name: 'Anywhere' })).status).toBe(403);
  });

  test('decommissioning stops the token and hides the device unless asked; a viewer may read but not act', async () => {
    const { org, tech, key } = await fleet();
    const agent = await enroll(key, 'retire');
    const viewer = await buildUser(app, { orgId: org.id, role: 'Organization Viewer' });
    expect((await rest(app, viewer.as).get(`/devices/${agent.deviceId}`)).status).toBe(200);
    expect((await rest(app, viewer.as).post(`/devices/${agent.deviceId}/commands`, { type: 'reboot' })).status).toBe(403);
    expect((await rest(app, viewer.as).delete(`/devices/${agent.deviceId}`)).status).toBe(403);
    expect((await rest(app, tech.as).delete(`/devices/${agent.deviceId}`)).status).toBe(204);
    expect((await agentCall(agent, '/heartbeat', { agentVersion: '1.0.0' })).status).toBe(401);
    expect((await rest(app, tech.as).get('/devices')).body.devices).toEqual([]);
    expect((await rest(app, tech.as).get('/devices?includeDecommissioned=true')).body.devices[0]).toMatchObject({ id: agent.deviceId, status: 'decommissioned' });
  });

  test('a technician sets tags and a site; the list filters by tag', async () => {
    const { org, tech, key } = await fleet();
    const tagged = await enroll(key, 'tagged');
    await enroll(key, 'plain');
    const site = await buildSite(app, org.id);
    const api = rest(app, tech.as);
    const updated = await api.patch(`/devices/${tagged.deviceId}`, { tags: ['web', 'prod', 'web'], siteId: site.id });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ tags: ['prod', 'web'], siteId: site.id });
    expect((await api.get('/devices?tag=web')).body.devices.map((d: { id: string }) => d.id)).toEqual([tagged.deviceId]);
    expect((await api.patch(`/devices/${tagged.deviceId}`, { siteId: (await buildSite(app, (await buildOrg(app)).id)).id })).status).toBe(404);
  });

  test('a device moves only to an organization of the same partner', async () => {
    const { org, key } = await fleet();
    const sibling = await buildOrg(app, { partnerId: org.partnerId });
    const stranger = await buildOrg(app);
    const partnerTech = await buildUser(app, { partnerId: org.partnerId, role: 'Partner Technician' });
    const agent = await enroll(key, 'mover');
    const api = rest(app, partnerTech.as);
    expect((await api.post(`/devices/${agent.deviceId}/move-org`, { orgId: sibling.id })).body).toMatchObject({ orgId: sibling.id });
    expect((await api.post(`/devices/${agent.deviceId}/move-org`, { orgId: stranger.id })).status).toBe(404);
    const system = await buildUser(app, { role: 'Platform Admin' });
    expect((await rest(app, system.as).post(`/devices/${agent.deviceId}/move-org`, { orgId: stranger.id })).status).toBe(400);
  });
});

describe('status', () => {
  let timed: TestApp;
  const clock = new TestClock();
  beforeAll(async () => {
    timed = await createTestApp({ env: { DEVICE_OFFLINE_AFTER_SECONDS: '5', DEVICE_UPDATING_TIMEOUT_SECONDS: '5' }, start: { clock } });
  });
  afterAll(async () => {
    await timed.stop();
  });

  test('a silent device goes offline through the sweep and back online with its next heartbeat, each with its event', async () => {
    const { tech, key } = await fleet(timed);
    const agent = await enroll(key, 'quiet', {}, timed);
    clock.advance(6_000);
    await eventually(async () => (await rest(timed, tech.as).get(`/devices/${agent.deviceId}`)).body.status === 'offline', 15_000, 'the sweep');
    await agentCall(agent, '/heartbeat', { agentVersion: '1.0.0' }, timed);
    expect((await rest(timed, tech.as).get(`/devices/${agent.deviceId}`)).body.status).toBe('online');
    const events = await sql(timed, `select type, data from outbox_event where data->>'deviceId' = ? order by created_at`, [agent.deviceId]);
    expect(events.map((e) => e.type)).toEqual(['device.enrolled', 'device.offline', 'device.online']);
    expect(events[1].data).toMatchObject({ deviceId: agent.deviceId, hostname: 'quiet', status: 'offline', previousStatus: 'online', lastSeen: expect.any(String) });
  });

  test('an update that takes longer than the timeout turns the device offline', async () => {
    const { tech, key } = await fleet(timed);
    const agent = await enroll(key, 'stuck', {}, timed);
    await agentCall(agent, '/update-status', { state: 'started', toVersion: '2.0.0' }, timed);
    clock.advance(6_000);
    await eventually(async () => (await rest(timed, tech.as).get(`/devices/${agent.deviceId}`)).body.status === 'offline', 15_000, 'the sweep');
  });
});
