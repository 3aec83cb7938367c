import crypto from 'node:crypto';
import { TestClock } from './support/clock.js';
import { createTestApp, type TestApp } from './support/app.js';
import { rest, type HttpResult } from './support/clients.js';
import { auditOf, sql } from './support/db.js';
import { eventually } from './support/eventually.js';
import { agentCall, agentInfo, enroll, fleet } from './support/devices.js';
import { buildOrg, buildSite, buildUser, type BuiltUser } from './support/factories.js';

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => {
  await app.stop();
});

describe('enrollment keys', () => {
  test('a technician creates a key that is shown once, hashed at rest, and lists, rotates and deletes it', async () => {
    const { org, tech, key, keyId } = await fleet(app);
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
    await enroll(app, rotated.body.key, 'new-key');

    const list = await api.get('/enrollment-keys');
    expect(list.body.data.map((k: { id: string }) => k.id)).toEqual([keyId]);
    expect((await api.delete(`/enrollment-keys/${keyId}`)).status).toBe(204);
    expect((await rest(app).post('/agents/enroll', { enrollmentKey: rotated.body.key, ...agentInfo('gone') })).status).toBe(401);
    expect((await auditOf(app, keyId, ['action'])).map((r) => r.action)).toEqual(['enrollment_key.create', 'enrollment_key.rotate', 'enrollment_key.delete']);
  });

  test('expired and exhausted keys are refused with 401; a viewer may not create keys', async () => {
    const { org, tech } = await fleet(app);
    const api = rest(app, tech.as);
    const once = await api.post('/enrollment-keys', { name: 'Once', maxUsage: 1 });
    await enroll(app, once.body.key, 'first');
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
    const { org, tech, key } = await fleet(app);
    const first = await enroll(app, key, 'web-01', { machineId: 'machine-a' });
    expect(first).toEqual({ deviceId: expect.any(String), agentId: expect.any(String), authToken: expect.any(String), orgId: org.id, siteId: null, config: { heartbeatIntervalSeconds: 60 } });
    const device = await rest(app, tech.as).get(`/devices/${first.deviceId}`);
    expect(device.body).toMatchObject({ hostname: 'web-01', status: 'online', osType: 'linux', agentVersion: '1.0.0', autoUpdate: true });

    const second = await enroll(app, key, 'web-01-renamed', { machineId: 'machine-a' }, first.authToken);
    expect(second.deviceId).toBe(first.deviceId);
    expect(second.authToken).not.toBe(first.authToken);
    expect((await agentCall(app, first, '/heartbeat', { agentVersion: '1.0.0' })).status).toBe(401);
    expect((await agentCall(app, second, '/heartbeat', { agentVersion: '1.0.0' })).status).toBe(200);
    expect((await rest(app, tech.as).get('/devices')).body.devices).toHaveLength(1);
    expect((await sql(app, `select type from outbox_event where data->>'deviceId' = ? order by created_at`, [first.deviceId])).map((r) => r.type)).toEqual([
      'device.enrolled',
      'device.enrolled',
    ]);
  });

  test('machineId, which re-enrollment matches on, is shown only to those who may write the organization’s devices', async () => {
    const { org, tech, key } = await fleet(app);
    const agent = await enroll(app, key, 'private', { machineId: 'machine-private' });
    const viewer = rest(app, (await buildUser(app, { orgId: org.id, role: 'Organization Viewer' })).as);
    expect((await viewer.get(`/devices/${agent.deviceId}`)).body).toMatchObject({ id: agent.deviceId, machineId: null });
    expect((await viewer.get('/devices')).body.devices.map((d: { machineId: string | null }) => d.machineId)).toEqual([null]);
    expect((await rest(app, tech.as).get(`/devices/${agent.deviceId}`)).body.machineId).toBe('machine-private');
  });

  test('a provisioned device is pending until its single-use key claims exactly it', async () => {
    const { org, tech } = await fleet(app);
    const site = await buildSite(app, org.id);
    const provisioned = await rest(app, tech.as).post('/devices/provision', { siteId: site.id, hostname: 'reception-pc' });
    expect(provisioned.status).toBe(201);
    const { deviceId, enrollmentKey } = provisioned.body;
    expect((await rest(app, tech.as).get(`/devices/${deviceId}`)).body).toMatchObject({ status: 'pending', siteId: site.id, lastSeenAt: null, enrolledAt: null });
    const claimed = await enroll(app, enrollmentKey, 'RECEPTION-PC');
    expect([claimed.deviceId, claimed.siteId]).toEqual([deviceId, site.id]);
    expect((await rest(app, tech.as).get(`/devices/${deviceId}`)).body).toMatchObject({ status: 'online', hostname: 'RECEPTION-PC' });
    expect((await rest(app).post('/agents/enroll', { enrollmentKey, ...agentInfo('again') })).status).toBe(401);
  });
});

describe('agent protocol', () => {
  test("another device's token, a malformed agent id and no token are 401 and reveal nothing", async () => {
    const { key } = await fleet(app);
    const a = await enroll(app, key, 'a');
    const b = await enroll(app, key, 'b');
    const crossed = await agentCall(app, { agentId: a.agentId, authToken: b.authToken }, '/heartbeat', { agentVersion: '1.0.0' });
    expect([crossed.status, crossed.body.code]).toEqual([401, 'UNAUTHENTICATED']);
    expect((await agentCall(app, { agentId: 'not-a-uuid', authToken: a.authToken }, '/heartbeat', { agentVersion: '1.0.0' })).status).toBe(404);
    expect((await rest(app).post(`/agents/${a.agentId}/heartbeat`, { agentVersion: '1.0.0' })).status).toBe(401);
  });

  test('a queued command is handed out once, even to concurrent heartbeats, and its result is stored', async () => {
    const { tech, key } = await fleet(app);
    const agent = await enroll(app, key, 'srv');
    const queued = await rest(app, tech.as).post(`/devices/${agent.deviceId}/commands`, { type: 'reboot', payload: { delaySeconds: 5 } });
    expect(queued.status).toBe(201);
    expect(queued.body).toMatchObject({ deviceId: agent.deviceId, type: 'reboot', status: 'pending' });

    const beats = await Promise.all(Array.from({ length: 8 }, () => agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0', metrics: { cpuPercent: 12 } })));
    expect(beats.every((b) => b.status === 200)).toBe(true);
    const handed = beats.flatMap((b) => b.body.commands);
    expect(handed).toEqual([{ id: queued.body.id, type: 'reboot', payload: { delaySeconds: 5 } }]);
    expect(beats[0]!.body).toMatchObject({ configUpdate: null, upgradeTo: null });

    const result = await agentCall(app, agent, `/commands/${queued.body.id}/result`, { status: 'completed', exitCode: 0, stdout: 'bye' });
    expect(result.status).toBe(200);
    const list = await rest(app, tech.as).get(`/devices/${agent.deviceId}/commands`);
    expect(list.body.data[0]).toMatchObject({ id: queued.body.id, status: 'completed', exitCode: 0, stdout: 'bye' });
    expect((await rest(app, tech.as).get(`/devices/${agent.deviceId}`)).body.metrics).toEqual({ cpuPercent: 12 });
  });

  test('heartbeats arriving together are each recorded on their own device; a forged one among them is refused alone', async () => {
    const { api, key } = await fleet(app);
    const agents = await Promise.all(Array.from({ length: 24 }, (_, i) => enroll(app, key, `batch-${i}`)));
    const [first, second] = agents;
    const beats = await Promise.all([
      ...agents.map((agent, i) => agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0', metrics: { cpuPercent: i }, watchdogStatus: `ok-${i}` })),
      agentCall(app, { agentId: first!.agentId, authToken: second!.authToken }, '/heartbeat', { agentVersion: '1.0.0', metrics: { cpuPercent: 99 } }),
    ]);
    expect(beats.map((b) => b.status)).toEqual([...agents.map(() => 200), 401]);
    expect(beats.at(-1)!.body).toEqual({ code: 'UNAUTHENTICATED', message: 'Invalid agent credentials' });
    const rows = await sql(app, 'select id, metrics, watchdog_status from device where id = any(string_to_array(?, \',\')::uuid[])', [agents.map((a) => a.deviceId).join(',')]);
    const byId = new Map(rows.map((row) => [row.id, row]));
    agents.forEach((agent, i) => expect(byId.get(agent.deviceId)).toMatchObject({ metrics: { cpuPercent: i }, watchdog_status: `ok-${i}` }));

    // A field left out keeps its value; a null clears it.
    expect((await agentCall(app, first!, '/heartbeat', { agentVersion: '1.0.0' })).status).toBe(200);
    expect((await api.get(`/devices/${first!.deviceId}`)).body).toMatchObject({ metrics: { cpuPercent: 0 }, watchdogStatus: 'ok-0' });
    expect((await agentCall(app, first!, '/heartbeat', { agentVersion: '1.0.0', watchdogStatus: null })).status).toBe(200);
    expect((await api.get(`/devices/${first!.deviceId}`)).body).toMatchObject({ metrics: { cpuPercent: 0 }, watchdogStatus: null });
  });

  test('a heartbeat answers malformed and oversized bodies in the envelope, accepts a form body, and carries the usual headers', async () => {
    const { key } = await fleet(app);
    const agent = await enroll(app, key, 'bodies');
    const auth = { authorization: `Bearer ${agent.authToken}` };
    const malformed = await rest(app).post(`/agents/${agent.agentId}/heartbeat`, '{"agentVersion":', auth);
    expect([malformed.status, malformed.body.code]).toEqual([400, 'VALIDATION_ERROR']);
    expect(malformed.headers.get('x-request-id')).toEqual(expect.any(String));
    expect(malformed.headers.get('x-content-type-options')).toBe('nosniff');
    const huge = await rest(app).post(`/agents/${agent.agentId}/heartbeat`, { agentVersion: '1.0.0', metrics: { note: 'x'.repeat(2 * 1024 * 1024) } }, auth);
    expect([huge.status, typeof huge.body.message]).toEqual([413, 'string']);
    const form = await fetch(`${app.url}/api/v1/agents/${agent.agentId}/heartbeat`, { method: 'POST', headers: { ...auth, 'content-type': 'application/x-www-form-urlencoded' }, body: 'agentVersion=1.0.0' });
    // A form body is read by Express's form parser, as before the JSON fast path.
    expect(form.status).toBe(200);
    const answered = await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0' });
    expect([answered.status, answered.headers.get('content-type'), answered.headers.get('x-request-id')]).toEqual([200, 'application/json; charset=utf-8', expect.any(String)]);
  });

  test('run_script and cancel_script are never queued by hand; a command that cannot be prepared for the agent fails alone', async () => {
    const { api, key } = await fleet(app);
    const agent = await enroll(app, key);
    const wedge = { type: 'run_script', payload: { parameters: { p: { sealed: 'garbage' } } } };
    const answers = [
      await api.post(`/devices/${agent.deviceId}/commands`, wedge),
      await api.post('/devices/bulk/commands', { deviceIds: [agent.deviceId], ...wedge }),
      await api.post(`/devices/${agent.deviceId}/commands`, { type: 'cancel_script', payload: { executionId: crypto.randomUUID() } }),
    ];
    expect(answers.map((r) => [r.status, r.body.code])).toEqual(Array(3).fill([400, 'VALIDATION_ERROR']));

    // One stored before that rule (or whose secrets no longer open) fails at the claim; the others still go out.
    const forged = crypto.randomUUID();
    await sql(
      app,
      `insert into device_command (id, created_at, updated_at, device_id, org_id, type, payload, timeout_at) values (?, now() - interval '1 minute', now(), ?, ?, 'run_script', ?::jsonb, now() + interval '1 hour')`,
      [forged, agent.deviceId, agent.orgId, JSON.stringify(wedge.payload)],
    );
    const reboot = await api.post(`/devices/${agent.deviceId}/commands`, { type: 'reboot' });
    const beat = await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0' });
    expect([beat.status, beat.body.commands?.map((c: { id: string }) => c.id)]).toEqual([200, [reboot.body.id]]);
    const listed = (await api.get(`/devices/${agent.deviceId}/commands`)).body.data;
    expect(listed.map((c: { id: string; status: string; sentAt: string | null }) => [c.id, c.status, c.sentAt === null])).toEqual([
      [reboot.body.id, 'sent', false],
      [forged, 'failed', true],
    ]);
    expect((await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0' })).body.commands).toEqual([]);
  });

  test('a command not yet finished is cancelled by hand (audited, its late result ignored); a finished one is 409', async () => {
    const { org, api, key } = await fleet(app);
    const agent = await enroll(app, key);
    const cancel = (as: typeof api, commandId: string) => as.post(`/devices/${agent.deviceId}/commands/${commandId}/cancel`);
    const pending = (await api.post(`/devices/${agent.deviceId}/commands`, { type: 'reboot' })).body.id as string;
    const viewer = rest(app, (await buildUser(app, { orgId: org.id, role: 'Organization Viewer' })).as);
    const stranger = (await fleet(app)).api;
    expect([(await cancel(viewer, pending)).status, (await cancel(stranger, pending)).status, (await cancel(api, crypto.randomUUID())).status]).toEqual([403, 404, 404]);

    expect((await cancel(api, pending)).body).toMatchObject({ id: pending, status: 'cancelled', completedAt: expect.any(String) });
    expect((await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0' })).body.commands).toEqual([]);
    const again = await cancel(api, pending);
    expect([again.status, again.body.code]).toEqual([409, 'CONFLICT']);

    // Handed out, then cancelled: the agent's late result changes nothing.
    const sent = (await api.post(`/devices/${agent.deviceId}/commands`, { type: 'collect_logs' })).body.id as string;
    expect((await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0' })).body.commands.map((c: { id: string }) => c.id)).toEqual([sent]);
    expect((await cancel(api, sent)).body.status).toBe('cancelled');
    expect((await agentCall(app, agent, `/commands/${sent}/result`, { status: 'completed', exitCode: 0, stdout: 'late' })).status).toBe(200);
    expect((await api.get(`/devices/${agent.deviceId}/commands`)).body.data.map((c: { status: string; stdout: string | null }) => [c.status, c.stdout])).toEqual([
      ['cancelled', null],
      ['cancelled', null],
    ]);
    expect((await auditOf(app, agent.deviceId, ['action'])).map((r) => r.action)).toEqual([
      'device.enroll',
      'device.command.create',
      'device.command.cancel',
      'device.command.create',
      'device.command.cancel',
    ]);
  });

  test('a second refresh_inventory while one is open is 409 ALREADY_PENDING; bulk reports commands, skipped and failed', async () => {
    const { tech, key } = await fleet(app);
    const a = await enroll(app, key, 'a');
    const b = await enroll(app, key, 'b');
    const api = rest(app, tech.as);
    expect((await api.post(`/devices/${a.deviceId}/commands`, { type: 'refresh_inventory' })).status).toBe(201);
    const dup = await api.post(`/devices/${a.deviceId}/commands`, { type: 'refresh_inventory' });
    expect([dup.status, dup.body.code]).toEqual([409, 'ALREADY_PENDING']);

    const other = await fleet(app);
    const foreign = await enroll(app, other.key, 'foreign');
    const bulk = await api.post('/devices/bulk/commands', { deviceIds: [a.deviceId, b.deviceId, foreign.deviceId], type: 'refresh_inventory' });
    expect(bulk.status).toBe(200);
    expect(bulk.body.commands.map((c: { deviceId: string }) => c.deviceId)).toEqual([b.deviceId]);
    expect(bulk.body.skipped).toEqual([{ deviceId: a.deviceId, reason: 'already_pending' }]);
    expect(bulk.body.failed).toEqual([{ deviceId: foreign.deviceId, code: 'NOT_FOUND', message: 'Device not found' }]);
  });

  test('an update shows the device updating until the first heartbeat with the new version', async () => {
    const { tech, key } = await fleet(app);
    const agent = await enroll(app, key, 'upd');
    expect((await agentCall(app, agent, '/update-status', { state: 'started', toVersion: '1.1.0' })).status).toBe(200);
    expect((await rest(app, tech.as).get(`/devices/${agent.deviceId}`)).body.status).toBe('updating');
    await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0' });
    expect((await rest(app, tech.as).get(`/devices/${agent.deviceId}`)).body.status).toBe('updating');
    await agentCall(app, agent, '/heartbeat', { agentVersion: '1.1.0' });
    expect((await rest(app, tech.as).get(`/devices/${agent.deviceId}`)).body).toMatchObject({ status: 'online', agentVersion: '1.1.0' });
  });

  test('a version change outside an update is a device.updated event; a plain heartbeat emits nothing', async () => {
    const { tech, key } = await fleet(app);
    const agent = await enroll(app, key, 'reinstalled');
    await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0' });
    expect((await agentCall(app, agent, '/heartbeat', { agentVersion: '1.2.0' })).status).toBe(200);
    expect((await rest(app, tech.as).get(`/devices/${agent.deviceId}`)).body).toMatchObject({ status: 'online', agentVersion: '1.2.0' });
    const events = await sql(app, `select type, data from outbox_event where data->>'deviceId' = ? order by created_at`, [agent.deviceId]);
    expect(events.map((e) => e.type)).toEqual(['device.enrolled', 'device.updated']);
    expect(events[1].data).toMatchObject({ status: 'online', previousStatus: null, changes: ['agentVersion'] });
  });
});

describe('device routes', () => {
  test('cursor pages visit every device exactly once, for each sort and direction, and a cursor from another sort is refused', async () => {
    const { tech, key } = await fleet(app);
    for (let i = 0; i < 7; i++) await enroll(app, key, `host-${String(i).padStart(2, '0')}`);
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
          if (seen.length === 3 && sort === 'hostname') await enroll(app, key, sortDir === 'asc' ? 'zzz-late' : 'aaa-late');
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
    const mine = await fleet(app);
    const theirs = await fleet(app);
    const foreign = await enroll(app, theirs.key, 'foreign');
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
    const inA = await enroll(app, keyA.body.key, 'in-a');
    const inB = await enroll(app, keyB.body.key, 'in-b');
    const limited: BuiltUser = await buildUser(app, { orgId: mine.org.id, role: 'Organization Technician' });
    await sql(app, `update membership set site_ids = ?::jsonb where id = ?`, [JSON.stringify([siteA.id]), limited.membership.id]);
    const seen = await rest(app, limited.as).get('/devices');
    expect(seen.body.devices.map((d: { id: string }) => d.id)).toEqual([inA.deviceId]);
    expect((await rest(app, limited.as).get(`/devices/${inB.deviceId}`)).status).toBe(404);
    expect((await rest(app, limited.as).post('/enrollment-keys', { name: 'Anywhere' })).status).toBe(403);
  });

  test('decommissioning stops the token and hides the device unless asked; a viewer may read but not act', async () => {
    const { org, tech, key } = await fleet(app);
    const agent = await enroll(app, key, 'retire');
    const viewer = await buildUser(app, { orgId: org.id, role: 'Organization Viewer' });
    expect((await rest(app, viewer.as).get(`/devices/${agent.deviceId}`)).status).toBe(200);
    expect((await rest(app, viewer.as).post(`/devices/${agent.deviceId}/commands`, { type: 'reboot' })).status).toBe(403);
    expect((await rest(app, viewer.as).delete(`/devices/${agent.deviceId}`)).status).toBe(403);
    expect((await rest(app, tech.as).delete(`/devices/${agent.deviceId}`)).status).toBe(204);
    expect((await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0' })).status).toBe(401);
    expect((await rest(app, tech.as).get('/devices')).body.devices).toEqual([]);
    expect((await rest(app, tech.as).get('/devices?includeDecommissioned=true')).body.devices[0]).toMatchObject({ id: agent.deviceId, status: 'decommissioned' });
  });

  test('a technician sets tags and a site; the list filters by tag', async () => {
    const { org, tech, key } = await fleet(app);
    const tagged = await enroll(app, key, 'tagged');
    await enroll(app, key, 'plain');
    const site = await buildSite(app, org.id);
    const api = rest(app, tech.as);
    const updated = await api.patch(`/devices/${tagged.deviceId}`, { tags: ['web', 'prod', 'web'], siteId: site.id });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ tags: ['prod', 'web'], siteId: site.id });
    expect((await api.get('/devices?tag=web')).body.devices.map((d: { id: string }) => d.id)).toEqual([tagged.deviceId]);
    expect((await api.patch(`/devices/${tagged.deviceId}`, { siteId: (await buildSite(app, (await buildOrg(app)).id)).id })).status).toBe(404);
  });

  test('a device moves without its commands, only to an organization of the same partner; a move that changes nothing writes nothing', async () => {
    const { org, key } = await fleet(app);
    const sibling = await buildOrg(app, { partnerId: org.partnerId });
    const stranger = await buildOrg(app);
    const partnerTech = await buildUser(app, { partnerId: org.partnerId, role: 'Partner Technician' });
    const agent = await enroll(app, key, 'mover');
    const api = rest(app, partnerTech.as);
    expect((await api.post(`/devices/${agent.deviceId}/commands`, { type: 'reboot' })).status).toBe(201);
    expect((await api.post(`/devices/${agent.deviceId}/move-org`, { orgId: sibling.id })).body).toMatchObject({ orgId: sibling.id });
    // The command stays with the organization that queued it (cancelled, as it was still open): the new one does not see it.
    const [command] = (await api.get(`/devices/${agent.deviceId}/commands`)).body.data;
    expect([command.orgId, command.status]).toEqual([org.id, 'cancelled']);
    const siblingTech = rest(app, (await buildUser(app, { orgId: sibling.id, role: 'Organization Technician' })).as);
    expect((await siblingTech.get(`/devices/${agent.deviceId}/commands`)).body).toMatchObject({ data: [], pagination: { total: 0 } });
    expect((await siblingTech.post(`/devices/${agent.deviceId}/commands/${command.id}/cancel`)).status).toBe(404);
    expect((await api.post(`/devices/${agent.deviceId}/move-org`, { orgId: sibling.id })).body).toMatchObject({ orgId: sibling.id });
    expect((await auditOf(app, agent.deviceId, ['action'])).map((r) => r.action)).toEqual(['device.enroll', 'device.command.create', 'device.move']);

    expect((await api.post(`/devices/${agent.deviceId}/move-org`, { orgId: stranger.id })).status).toBe(404);
    const system = await buildUser(app, { can: ['devices:write'] });
    const refused = await rest(app, system.as).post(`/devices/${agent.deviceId}/move-org`, { orgId: stranger.id });
    expect([refused.status, refused.body.message]).toEqual([400, 'A device can only move to an organization of the same partner']);
    expect((await api.get(`/devices/${agent.deviceId}`)).body.orgId).toBe(sibling.id);
  });

  test('decommissioning again answers 204 and changes nothing; a decommissioned device takes no more writes', async () => {
    const { org, api, key } = await fleet(app);
    const agent = await enroll(app, key, 'twice');
    expect((await api.delete(`/devices/${agent.deviceId}`)).status).toBe(204);
    expect((await api.delete(`/devices/${agent.deviceId}`)).status).toBe(204);
    expect((await auditOf(app, agent.deviceId, ['action'])).map((r) => r.action)).toEqual(['device.enroll', 'device.decommission']);
    const events = await sql(app, `select type from outbox_event where data->>'deviceId' = ? order by created_at`, [agent.deviceId]);
    expect(events.map((e) => e.type)).toEqual(['device.enrolled', 'device.decommissioned']);

    const sibling = await buildOrg(app, { partnerId: org.partnerId });
    const partnerTech = rest(app, (await buildUser(app, { partnerId: org.partnerId, role: 'Partner Technician' })).as);
    const writes = [
      await api.patch(`/devices/${agent.deviceId}`, { tags: ['retired'] }),
      await api.post(`/devices/${agent.deviceId}/auto-update`, { enabled: false }),
      await api.post(`/devices/${agent.deviceId}/commands`, { type: 'reboot' }),
      await partnerTech.post(`/devices/${agent.deviceId}/move-org`, { orgId: sibling.id }),
    ];
    expect(writes.map((r) => [r.status, r.body.code])).toEqual(Array(4).fill([409, 'DEVICE_DECOMMISSIONED']));
    expect((await api.get(`/devices/${agent.deviceId}`)).body).toMatchObject({ orgId: org.id, tags: [], autoUpdate: true, status: 'decommissioned' });
  });

  test("a technician limited to one site reaches only that site's devices, on every device route", async () => {
    const { org, api, key } = await fleet(app);
    const [siteA, siteB] = [await buildSite(app, org.id), await buildSite(app, org.id)];
    const keyFor = async (siteId: string) => (await api.post('/enrollment-keys', { name: 'Site', siteId })).body.key as string;
    const inA = await enroll(app, await keyFor(siteA.id), 'in-a');
    const inB = await enroll(app, await keyFor(siteB.id), 'in-b');
    const noSite = await enroll(app, key, 'no-site');
    const limited = await buildUser(app, { orgId: org.id, role: 'Organization Technician' });
    await sql(app, `update membership set site_ids = ?::jsonb where id = ?`, [JSON.stringify([siteA.id]), limited.membership.id]);
    const mine = rest(app, limited.as);

    for (const { deviceId } of [inB, noSite]) {
      const answers = [
        await mine.get(`/devices/${deviceId}`),
        await mine.patch(`/devices/${deviceId}`, { tags: ['x'] }),
        await mine.post(`/devices/${deviceId}/commands`, { type: 'reboot' }),
        await mine.get(`/devices/${deviceId}/commands`),
        await mine.post(`/devices/${deviceId}/auto-update`, { enabled: false }),
        await mine.post(`/devices/${deviceId}/move-org`, { orgId: org.id, siteId: siteA.id }),
        await mine.delete(`/devices/${deviceId}`),
      ];
      expect(answers.map((r) => [r.status, r.body.message])).toEqual(Array(7).fill([404, 'Device not found']));
    }
    const bulk = await mine.post('/devices/bulk/commands', { deviceIds: [inA.deviceId, inB.deviceId, noSite.deviceId], type: 'reboot' });
    expect(bulk.body.commands.map((c: { deviceId: string }) => c.deviceId)).toEqual([inA.deviceId]);
    expect(bulk.body.failed.map((f: { deviceId: string; code: string }) => [f.deviceId, f.code])).toEqual([
      [inB.deviceId, 'NOT_FOUND'],
      [noSite.deviceId, 'NOT_FOUND'],
    ]);
    expect((await mine.get('/devices')).body.devices.map((d: { id: string }) => d.id)).toEqual([inA.deviceId]);

    // Its own device stays in its sites; provisioning needs one of them.
    expect([(await mine.patch(`/devices/${inA.deviceId}`, { siteId: siteB.id })).status, (await mine.patch(`/devices/${inA.deviceId}`, { siteId: null })).status]).toEqual([404, 403]);
    expect([(await mine.post('/devices/provision', {})).status, (await mine.post('/devices/provision', { siteId: siteB.id })).status]).toEqual([403, 404]);
    expect((await mine.post('/devices/provision', { siteId: siteA.id })).status).toBe(201);

    expect(await sql(app, 'select count(*)::int as n from device_command where device_id in (?, ?)', [inB.deviceId, noSite.deviceId])).toEqual([{ n: 0 }]);
    for (const [device, siteId] of [[inB, siteB.id], [noSite, null]] as const) {
      expect((await api.get(`/devices/${device.deviceId}`)).body).toMatchObject({ status: 'online', siteId, tags: [], autoUpdate: true });
    }
  });
});

describe('hostile input', () => {
  const deep = (depth: number) => `${'{"n":'.repeat(depth)}{}${'}'.repeat(depth)}`;
  const refusedWith = async (status: number, call: Promise<HttpResult>): Promise<HttpResult['body']> => {
    const res = await call;
    expect([res.status, typeof res.body?.code, typeof res.body?.message]).toEqual([status, 'string', 'string']);
    return res.body;
  };

  test('deep, oversized and out-of-range values are refused in the envelope (never 500) and write nothing', async () => {
    const { api, key } = await fleet(app);
    const agent = await enroll(app, key, 'target');
    const id = agent.deviceId;
    const auth = { authorization: `Bearer ${agent.authToken}` };

    // Free-form JSON nested past 64 levels, wherever it is accepted.
    await refusedWith(400, api.post(`/devices/${id}/commands`, `{"type":"collect_logs","payload":${deep(5000)}}`));
    await refusedWith(400, api.post('/devices/bulk/commands', `{"type":"collect_logs","deviceIds":["${id}"],"payload":${deep(5000)}}`));
    await refusedWith(400, rest(app).post(`/agents/${agent.agentId}/inventory`, `{"software":[${deep(5000)}]}`, auth));
    await refusedWith(400, rest(app).post('/agents/enroll', `${JSON.stringify({ enrollmentKey: key, ...agentInfo('deep') }).slice(0, -1)},"hardwareInfo":${deep(5000)}}`));
    // Payloads: 64 KiB counted in bytes, and bulk holds the same limit.
    await refusedWith(400, api.post(`/devices/${id}/commands`, { type: 'collect_logs', payload: { script: 'é'.repeat(40_000) } }));
    await refusedWith(400, api.post('/devices/bulk/commands', { deviceIds: [id], type: 'collect_logs', payload: { script: 'x'.repeat(70_000) } }));
    // A payload the server acts on is checked before anything is queued, in bulk too.
    expect((await refusedWith(400, api.post('/devices/bulk/commands', { deviceIds: [id], type: 'set_auto_update', payload: { enabled: 'yes' } }))).details).toEqual([
      { path: 'payload.enabled', message: expect.any(String) },
    ]);
    // Id lists: more than 500, or 100k (over the body limit).
    await refusedWith(400, api.post('/devices/bulk/commands', { deviceIds: Array.from({ length: 501 }, () => crypto.randomUUID()), type: 'reboot' }));
    await refusedWith(413, api.post('/devices/bulk/commands', { deviceIds: Array.from({ length: 100_000 }, () => crypto.randomUUID()), type: 'reboot' }));
    // Tags: 10k of them, long ones, a 10 MB one, objects.
    await refusedWith(400, api.patch(`/devices/${id}`, { tags: Array.from({ length: 10_000 }, (_, i) => `t${i}`) }));
    await refusedWith(400, api.patch(`/devices/${id}`, { tags: ['x'.repeat(101)] }));
    await refusedWith(413, api.patch(`/devices/${id}`, { tags: ['x'.repeat(10 * 1024 * 1024)] }));
    await refusedWith(400, api.patch(`/devices/${id}`, { tags: [{ $ne: null }] }));

    expect(await sql(app, 'select count(*)::int as n from device_command where device_id = ?', [id])).toEqual([{ n: 0 }]);
    expect(await sql(app, 'select count(*)::int as n from device_software where device_id = ?', [id])).toEqual([{ n: 0 }]);
    expect((await api.get(`/devices/${id}`)).body).toMatchObject({ tags: [], autoUpdate: true });

    // An exit code past a 32-bit integer leaves the command as it was.
    const queued = await api.post(`/devices/${id}/commands`, { type: 'reboot' });
    await refusedWith(400, agentCall(app, agent, `/commands/${queued.body.id}/result`, { status: 'completed', exitCode: 2 ** 31 }));
    expect((await api.get(`/devices/${id}/commands`)).body.data[0]).toMatchObject({ status: 'pending', exitCode: null });
  });

  test('forged cursors are 400 Invalid cursor', async () => {
    const { api, key } = await fleet(app);
    await enroll(app, key, 'one');
    await enroll(app, key, 'two');
    const { nextCursor } = (await api.get('/devices?limit=1')).body;
    const [tag] = (nextCursor as string).split('.');
    const forge = (value: unknown) => `${tag}.${Buffer.from(JSON.stringify([value, crypto.randomUUID()])).toString('base64url')}`;
    const forged = ["' or 1=1 --", forge({ $gt: '' }), forge(5), forge(null), `${nextCursor}.extra`, `${tag}.${'A'.repeat(600)}`, 'x'.repeat(5000)];
    for (const cursor of forged) {
      const res = await api.get(`/devices?limit=1&cursor=${encodeURIComponent(cursor)}`);
      expect([cursor.slice(0, 40), res.status, res.body.message]).toEqual([cursor.slice(0, 40), 400, 'Invalid cursor']);
    }
    // A date sort's cursor holds a date.
    const byDate = (await api.get('/devices?limit=1&sort=lastSeen')).body.nextCursor as string;
    const [dateTag] = byDate.split('.');
    const res = await api.get(`/devices?limit=1&sort=lastSeen&cursor=${dateTag}.${Buffer.from(JSON.stringify(['yesterday', crypto.randomUUID()])).toString('base64url')}`);
    expect([res.status, res.body.message]).toEqual([400, 'Invalid cursor']);
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
    const agent = await enroll(timed, key, 'quiet');
    clock.advance(6_000);
    await eventually(async () => (await rest(timed, tech.as).get(`/devices/${agent.deviceId}`)).body.status === 'offline', 15_000, 'the sweep');
    await agentCall(timed, agent, '/heartbeat', { agentVersion: '1.0.0' });
    expect((await rest(timed, tech.as).get(`/devices/${agent.deviceId}`)).body.status).toBe('online');
    const events = await sql(timed, `select type, data from outbox_event where data->>'deviceId' = ? order by created_at`, [agent.deviceId]);
    expect(events.map((e) => e.type)).toEqual(['device.enrolled', 'device.offline', 'device.online']);
    expect(events[1].data).toMatchObject({ deviceId: agent.deviceId, hostname: 'quiet', status: 'offline', previousStatus: 'online', lastSeen: expect.any(String) });
  });

  test("a site's key enrolls a machine again only into its own site's device, and a live one only with its agent's token", async () => {
    const { org, api } = await fleet(timed);
    const [siteA, siteB] = [await buildSite(timed, org.id), await buildSite(timed, org.id)];
    const keyFor = async (siteId: string) => (await api.post('/enrollment-keys', { name: 'Site', siteId })).body.key as string;
    const [keyA, keyB] = [await keyFor(siteA.id), await keyFor(siteB.id)];
    const victim = await enroll(timed, keyB, 'victim', { machineId: 'machine-victim' });
    const attempt = (key: string, token?: string) =>
      rest(timed).post('/agents/enroll', { enrollmentKey: key, ...agentInfo('attacker', { machineId: 'machine-victim' }) }, token ? { authorization: `Bearer ${token}` } : {});

    // Another site's key never takes the device; its own site's key takes a live one only with the agent's token.
    for (const refused of [await attempt(keyA), await attempt(keyA, victim.authToken), await attempt(keyB), await attempt(keyB, 'agt_forged')]) {
      expect([refused.status, refused.body.code]).toEqual([409, 'CONFLICT']);
    }
    expect((await agentCall(timed, victim, '/heartbeat', { agentVersion: '1.0.0' })).status).toBe(200);
    const renewed = await enroll(timed, keyB, 'victim', { machineId: 'machine-victim' }, victim.authToken);
    expect([renewed.deviceId, renewed.siteId]).toEqual([victim.deviceId, siteB.id]);

    // Silent past the offline threshold (a reinstalled machine): its own site's key alone enrolls it again.
    clock.advance(6_000);
    expect((await attempt(keyA)).status).toBe(409);
    const reinstalled = await enroll(timed, keyB, 'victim', { machineId: 'machine-victim' });
    expect(reinstalled.deviceId).toBe(victim.deviceId);
    expect((await agentCall(timed, renewed, '/heartbeat', { agentVersion: '1.0.0' })).status).toBe(401);

    // Decommissioned, the device keeps its site and history; the machine enrolled in another site is a new device.
    expect((await api.delete(`/devices/${victim.deviceId}`)).status).toBe(204);
    const elsewhere = await enroll(timed, keyA, 'newcomer', { machineId: 'machine-victim' });
    expect([elsewhere.deviceId === victim.deviceId, elsewhere.siteId]).toEqual([false, siteA.id]);
    expect((await api.get(`/devices/${victim.deviceId}`)).body).toMatchObject({ status: 'decommissioned', siteId: siteB.id });
  });

  test('an update that takes longer than the timeout turns the device offline', async () => {
    const { tech, key } = await fleet(timed);
    const agent = await enroll(timed, key, 'stuck');
    await agentCall(timed, agent, '/update-status', { state: 'started', toVersion: '2.0.0' });
    clock.advance(6_000);
    await eventually(async () => (await rest(timed, tech.as).get(`/devices/${agent.deviceId}`)).body.status === 'offline', 15_000, 'the sweep');
  });
});
