import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import { sql } from './support/db.js';
import { agentCall, enroll, fleet, type EnrolledAgent } from './support/devices.js';
import { eventually } from './support/eventually.js';
import { buildSite, buildUser, unique, type BuiltUser } from './support/factories.js';
import { TestClock } from './support/clock.js';

const clock = new TestClock();
let app: TestApp;

beforeAll(async () => {
  app = await createTestApp({ start: { clock } });
});
afterAll(async () => {
  await app.stop();
});

const threat = (fields: Record<string, unknown> = {}) => ({ externalId: `det-${unique()}`, name: 'Trojan:Win32/Emotet', severity: 'high', path: 'C:\\Users\\x\\evil.exe', ...fields });

async function reportThreats(agent: EnrolledAgent, threats: unknown[]): Promise<void> {
  const res = await agentCall(app, agent, '/inventory', { security: { antivirus: { product: 'Defender', enabled: true, upToDate: true }, firewall: { enabled: true }, threats } });
  expect([res.status, res.body?.details]).toEqual([200, undefined]);
}

/** The commands the agent's heartbeat hands out. */
const heartbeat = async (agent: EnrolledAgent) => (await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0' })).body.commands as { id: string; type: string; payload: Record<string, unknown> }[];
const answer = (agent: EnrolledAgent, commandId: string, body: unknown) => agentCall(app, agent, `/commands/${commandId}/result`, body);

/** An organization with two enrolled devices, a technician (security:*) and a viewer (security:read). */
async function securedFleet() {
  const f = await fleet(app);
  const viewer = await buildUser(app, { orgId: f.org.id, role: 'Organization Viewer' });
  const a = await enroll(app, f.key);
  const b = await enroll(app, f.key);
  return { ...f, tech: f.tech as BuiltUser, viewer, a, b, view: rest(app, viewer.as) };
}

/** The one threat `agent` reported, by its externalId, as the technician lists it. */
async function threatOf(api: ReturnType<typeof rest>, agent: EnrolledAgent, externalId: string) {
  const list = await api.get(`/security/threats/${agent.deviceId}`);
  return list.body.data.find((t: any) => t.externalId === externalId);
}

describe('threats', () => {
  test('a report’s threats are listed newest first, filtered by device, status and severity; a bad enum is 400', async () => {
    const { org, api, view, a, b } = await securedFleet();
    const t1 = threat({ severity: 'critical' });
    const t2 = threat({ severity: 'low', path: undefined });
    await reportThreats(a, [t1]);
    await reportThreats(b, [t2]);

    const all = await view.get('/security/threats');
    expect(all.status).toBe(200);
    expect(all.body.nextCursor).toBeNull();
    expect(all.body.data.map((t: any) => t.externalId)).toEqual([t2.externalId, t1.externalId]);
    expect(all.body.data[1]).toEqual({
      id: expect.any(String),
      deviceId: a.deviceId,
      externalId: t1.externalId,
      name: t1.name,
      severity: 'critical',
      path: t1.path,
      status: 'detected',
      orgId: org.id,
      detectedAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect(all.body.data[0].path).toBeNull();

    expect((await view.get(`/security/threats?deviceId=${a.deviceId}`)).body.data.map((t: any) => t.externalId)).toEqual([t1.externalId]);
    expect((await view.get('/security/threats?severity=low')).body.data.map((t: any) => t.externalId)).toEqual([t2.externalId]);
    expect((await view.get('/security/threats?status=quarantined')).body.data).toEqual([]);
    const device = await view.get(`/security/threats/${b.deviceId}`);
    expect([device.status, device.body.data.map((t: any) => t.externalId), device.body.nextCursor]).toEqual([200, [t2.externalId], null]);
    // Pages follow the cursor.
    const first = await api.get('/security/threats?limit=1');
    const second = await api.get(`/security/threats?limit=1&cursor=${first.body.nextCursor}`);
    expect([...first.body.data, ...second.body.data].map((t: any) => t.externalId)).toEqual([t2.externalId, t1.externalId]);
    expect(second.body.nextCursor).toBeNull();

    for (const bad of ['status=gone', 'severity=severe']) {
      const res = await view.get(`/security/threats?${bad}`);
      expect([res.status, res.body.code]).toEqual([400, 'VALIDATION_ERROR']);
    }
    const badScan = await api.post(`/security/scan/${a.deviceId}`, { type: 'deep' });
    expect([badScan.status, badScan.body.code]).toEqual([400, 'VALIDATION_ERROR']);
  });

  test('a security policy with autoQuarantine sends threats reported detected to quarantine at once; devices it does not target keep theirs detected', async () => {
    const { org, api, view, a, b } = await securedFleet();
    const policy = await api.post('/security/policies', { orgId: org.id, name: `Quarantine ${unique()}`, targets: { deviceIds: [a.deviceId] }, settings: { autoQuarantine: true } });
    expect(policy.status).toBe(201);
    const [onA, onB] = [threat(), threat()];
    await reportThreats(a, [onA]);
    await reportThreats(b, [onB]);
    expect((await threatOf(view, a, onA.externalId)).status).toBe('quarantining');
    expect((await threatOf(view, b, onB.externalId)).status).toBe('detected');
    const [command] = await heartbeat(a);
    const quarantining = await threatOf(view, a, onA.externalId);
    expect(command).toMatchObject({ type: 'quarantine_threat', payload: { threatId: quarantining.id, externalId: onA.externalId, path: onA.path } });
    expect((await answer(a, command!.id, { status: 'completed' })).status).toBe(200);
    expect((await threatOf(view, a, onA.externalId)).status).toBe('quarantined');
    // Reported again while quarantined: nothing more is sent.
    await reportThreats(a, [onA]);
    expect(await heartbeat(a)).toEqual([]);
  });

  test('quarantine: the agent gets quarantine_threat, its result settles the threat; restore, remove, their 409s, and a failed result', async () => {
    const { api, view, a } = await securedFleet();
    const t = threat();
    await reportThreats(a, [t]);
    const { id } = await threatOf(api, a, t.externalId);

    // A viewer reads but does not act.
    const refused = await view.post(`/security/threats/${id}/quarantine`, {});
    expect([refused.status, refused.body.code]).toEqual([403, 'FORBIDDEN']);
    // Only a quarantined threat is restored.
    const early = await api.post(`/security/threats/${id}/restore`, {});
    expect([early.status, early.body.code]).toEqual([409, 'CONFLICT']);

    const sent = await api.post(`/security/threats/${id}/quarantine`, {});
    expect(sent.status).toBe(202);
    expect(sent.body).toEqual({ threat: expect.objectContaining({ id, status: 'quarantining' }), commandId: expect.any(String) });
    const again = await api.post(`/security/threats/${id}/quarantine`, {});
    expect([again.status, again.body.code]).toEqual([409, 'CONFLICT']);
    const [command] = await heartbeat(a);
    expect(command).toMatchObject({ id: sent.body.commandId, type: 'quarantine_threat', payload: { threatId: id, externalId: t.externalId, path: t.path } });
    expect((await answer(a, command!.id, { status: 'completed' })).status).toBe(200);
    expect((await threatOf(api, a, t.externalId)).status).toBe('quarantined');
    // Still listed by the antivirus: the quarantine holds.
    await reportThreats(a, [t]);
    expect((await threatOf(api, a, t.externalId)).status).toBe('quarantined');

    const restore = await api.post(`/security/threats/${id}/restore`, {});
    expect([restore.status, restore.body.threat.status]).toEqual([202, 'restoring']);
    const [restoreCommand] = await heartbeat(a);
    expect(restoreCommand).toMatchObject({ type: 'restore_threat', payload: { threatId: id } });
    await answer(a, restoreCommand!.id, { status: 'completed' });
    expect((await threatOf(api, a, t.externalId)).status).toBe('restored');

    const remove = await api.post(`/security/threats/${id}/remove`, {});
    expect([remove.status, remove.body.threat.status]).toEqual([202, 'removing']);
    const [removeCommand] = await heartbeat(a);
    expect(removeCommand).toMatchObject({ type: 'remove_threat', payload: { threatId: id } });
    await answer(a, removeCommand!.id, { status: 'completed' });
    const removed = await threatOf(api, a, t.externalId);
    expect(removed.status).toBe('removed');
    for (const action of ['quarantine', 'remove', 'restore']) {
      const res = await api.post(`/security/threats/${id}/${action}`, {});
      expect([action, res.status, res.body.code]).toEqual([action, 409, 'CONFLICT']);
    }
    expect((await sql(app, `select action from audit_log where resource_id = ? order by created_at`, [id])).map((r) => r.action)).toEqual([
      'security_threat.quarantine',
      'security_threat.restore',
      'security_threat.remove',
    ]);

    // Reported again once removed: it is back, detected anew.
    await reportThreats(a, [t]);
    const back = await threatOf(api, a, t.externalId);
    expect(back.status).toBe('detected');
    expect(back.detectedAt > removed.detectedAt).toBe(true);

    // A failed result fails the threat; reported again, it may be acted on again.
    const retry = await api.post(`/security/threats/${id}/remove`, {});
    await answer(a, retry.body.commandId, { status: 'failed', stderr: 'access denied' });
    expect((await threatOf(api, a, t.externalId)).status).toBe('failed');
    expect((await api.post(`/security/threats/${id}/quarantine`, {})).status).toBe(409);
    expect((await api.get('/security/threats?status=failed')).body.data.map((x: any) => x.id)).toEqual([id]);
    await reportThreats(a, [t]);
    expect((await api.post(`/security/threats/${id}/quarantine`, {})).status).toBe(202);
  });

  test('a device decommissioned with an action out fails the threat', async () => {
    const { org, api, a } = await securedFleet();
    const t = threat();
    await reportThreats(a, [t]);
    const { id } = await threatOf(api, a, t.externalId);
    expect((await api.post(`/security/threats/${id}/quarantine`, {})).status).toBe(202);
    const admin = await buildUser(app, { orgId: org.id, role: 'Organization Admin' });
    expect((await rest(app, admin.as).delete(`/devices/${a.deviceId}`)).status).toBe(204);
    expect((await api.get(`/security/threats?deviceId=${a.deviceId}`)).body.data.map((x: any) => x.status)).toEqual(['failed']);
  });
});

describe('scans', () => {
  test('a scan is queued, runs when the agent says so, and completes with the threats it found', async () => {
    const { api, view, a } = await securedFleet();
    const refused = await view.post(`/security/scan/${a.deviceId}`, { type: 'quick' });
    expect([refused.status, refused.body.code]).toEqual([403, 'FORBIDDEN']);
    // Only the service queues the security commands.
    for (const type of ['security_scan', 'quarantine_threat']) expect((await api.post(`/devices/${a.deviceId}/commands`, { type, payload: {} })).status).toBe(400);

    const started = await api.post(`/security/scan/${a.deviceId}`, { type: 'full' });
    expect([started.status, started.body]).toEqual([202, { id: expect.any(String), status: 'queued' }]);
    const scanId = started.body.id;
    const [command] = await heartbeat(a);
    expect(command).toMatchObject({ type: 'security_scan', payload: { scanId, type: 'full' } });
    expect((await answer(a, command!.id, { status: 'running' })).status).toBe(200);
    expect((await view.get(`/security/scans/${a.deviceId}`)).body.data.map((s: any) => s.status)).toEqual(['running']);

    const found = [threat(), threat({ severity: 'medium' })];
    expect((await answer(a, command!.id, { status: 'completed', result: { threats: [...found, found[0]] } })).status).toBe(200);
    const scans = await view.get(`/security/scans/${a.deviceId}`);
    expect(scans.body).toEqual({
      data: [{ id: scanId, deviceId: a.deviceId, type: 'full', status: 'completed', threatsFound: 2, createdAt: expect.any(String), completedAt: expect.any(String) }],
      nextCursor: null,
    });
    expect((await view.get(`/security/threats/${a.deviceId}`)).body.data.map((t: any) => t.externalId).sort()).toEqual(found.map((t) => t.externalId).sort());

    // A failed scan fails.
    const second = await api.post(`/security/scan/${a.deviceId}`, { type: 'quick' });
    const [secondCommand] = await heartbeat(a);
    await answer(a, secondCommand!.id, { status: 'failed', stderr: 'engine missing' });
    expect((await view.get(`/security/scans/${a.deviceId}`)).body.data.map((s: any) => [s.id, s.status, s.threatsFound])).toEqual([
      [second.body.id, 'failed', null],
      [scanId, 'completed', 2],
    ]);
    expect((await sql(app, `select action from audit_log where resource_id = ?`, [scanId])).map((r) => r.action)).toEqual(['security_scan.create']);
  });
});

describe('tenancy', () => {
  test('another organization’s threats and devices are 404 in REST and GraphQL; a site-limited user sees their sites’ devices only', async () => {
    const mine = await securedFleet();
    const other = await securedFleet();
    const t = threat();
    await reportThreats(other.a, [t]);
    const { id } = await threatOf(other.api, other.a, t.externalId);

    for (const action of ['quarantine', 'remove', 'restore']) {
      const res = await mine.api.post(`/security/threats/${id}/${action}`, {});
      expect([res.status, res.body]).toEqual([404, { code: 'NOT_FOUND', message: 'Security threat not found' }]);
    }
    for (const path of [`/security/threats/${other.a.deviceId}`, `/security/scans/${other.a.deviceId}`, `/security/threats?deviceId=${other.a.deviceId}`]) {
      const res = await mine.api.get(path);
      expect([path, res.status, res.body]).toEqual([path, 404, { code: 'NOT_FOUND', message: 'Device not found' }]);
    }
    const scan = await mine.api.post(`/security/scan/${other.a.deviceId}`, { type: 'quick' });
    expect([scan.status, scan.body.code]).toEqual([404, 'NOT_FOUND']);
    expect((await mine.api.get('/security/threats')).body.data).toEqual([]);

    const ask = (query: string, variables: Record<string, unknown>) => gql(app, mine.tech.as, query, variables);
    const quarantine = await ask('mutation($id: ID!) { quarantineThreat(id: $id) { commandId } }', { id });
    expect(quarantine.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const scanned = await ask('mutation($d: ID!) { startSecurityScan(deviceId: $d, type: quick) { id } }', { d: other.a.deviceId });
    expect(scanned.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const listed = await ask('query($d: ID!) { deviceSecurityThreats(deviceId: $d) { totalCount } }', { d: other.a.deviceId });
    expect(listed.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const scans = await ask('query($d: ID!) { securityScans(deviceId: $d) { totalCount } }', { d: other.a.deviceId });
    expect(scans.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect((await ask('{ securityThreats { totalCount edges { node { id } } } }', {})).body.data).toEqual({ securityThreats: { totalCount: 0, edges: [] } });

    // A user limited to site B sees (and acts on) site B's device's threats only.
    const { org, a, b } = mine;
    const [siteA, siteB] = [await buildSite(app, org.id), await buildSite(app, org.id)];
    await sql(app, 'update device set site_id = ? where id = ?', [siteA.id, a.deviceId]);
    await sql(app, 'update device set site_id = ? where id = ?', [siteB.id, b.deviceId]);
    const [ta, tb] = [threat(), threat()];
    await reportThreats(a, [ta]);
    await reportThreats(b, [tb]);
    const limited = await buildUser(app, { orgId: org.id, role: 'Organization Technician' });
    await sql(app, 'update membership set site_ids = ?::jsonb where id = ?', [JSON.stringify([siteB.id]), limited.membership.id]);
    const lapi = rest(app, limited.as);
    expect((await lapi.get('/security/threats')).body.data.map((x: any) => x.externalId)).toEqual([tb.externalId]);
    expect((await gql(app, limited.as, '{ securityThreats { totalCount } }')).body.data).toEqual({ securityThreats: { totalCount: 1 } });
    expect((await lapi.get(`/security/threats/${a.deviceId}`)).status).toBe(404);
    const hidden = await threatOf(mine.api, a, ta.externalId);
    expect((await lapi.post(`/security/threats/${hidden.id}/quarantine`, {})).status).toBe(404);
    expect((await lapi.post(`/security/scan/${a.deviceId}`, { type: 'quick' })).status).toBe(404);
  });
});

describe('GraphQL', () => {
  test('the connections and mutations do what REST does', async () => {
    const { tech, viewer, a } = await securedFleet();
    const t = threat({ severity: 'critical' });
    await reportThreats(a, [t]);
    const list = await gql(app, viewer.as, 'query($d: ID!) { securityThreats(severity: critical) { totalCount edges { node { id externalId status severity } } } deviceSecurityThreats(deviceId: $d) { totalCount } }', { d: a.deviceId });
    expect(list.body.errors).toBeUndefined();
    const node = list.body.data.securityThreats.edges[0].node;
    expect([list.body.data.securityThreats.totalCount, node.externalId, node.status, list.body.data.deviceSecurityThreats.totalCount]).toEqual([1, t.externalId, 'detected', 1]);
    const refused = await gql(app, viewer.as, 'mutation($id: ID!) { removeThreat(id: $id) { commandId } }', { id: node.id });
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');

    const quarantined = await gql(app, tech.as, 'mutation($id: ID!) { quarantineThreat(id: $id) { commandId threat { status } } }', { id: node.id });
    expect(quarantined.body.data.quarantineThreat).toEqual({ commandId: expect.any(String), threat: { status: 'quarantining' } });
    await answer(a, quarantined.body.data.quarantineThreat.commandId, { status: 'completed' });
    const restored = await gql(app, tech.as, 'mutation($id: ID!) { restoreThreat(id: $id) { threat { status } } }', { id: node.id });
    expect(restored.body.data.restoreThreat.threat.status).toBe('restoring');
    const conflicting = await gql(app, tech.as, 'mutation($id: ID!) { removeThreat(id: $id) { commandId } }', { id: node.id });
    expect(conflicting.body.errors?.[0]?.extensions?.code).toBe('CONFLICT');

    const scan = await gql(app, tech.as, 'mutation($d: ID!) { startSecurityScan(deviceId: $d, type: full) { id status } }', { d: a.deviceId });
    expect(scan.body.data.startSecurityScan).toEqual({ id: expect.any(String), status: 'queued' });
    const scans = await gql(app, viewer.as, 'query($d: ID!) { securityScans(deviceId: $d) { totalCount edges { node { id type status threatsFound } } } }', { d: a.deviceId });
    expect(scans.body.data.securityScans).toEqual({ totalCount: 1, edges: [{ node: { id: scan.body.data.startSecurityScan.id, type: 'full', status: 'queued', threatsFound: null } }] });
  });
});

// Last: it moves the clock past every command's timeout.
describe('unanswered commands', () => {
  test('a threat action or a scan whose command timed out fails', async () => {
    const { api, a } = await securedFleet();
    const t = threat();
    await reportThreats(a, [t]);
    const { id } = await threatOf(api, a, t.externalId);
    expect((await api.post(`/security/threats/${id}/remove`, {})).status).toBe(202);
    const scan = await api.post(`/security/scan/${a.deviceId}`, { type: 'quick' });
    // The default command timeout (an hour) and the grace minute.
    clock.advance((3600 + 61) * 1000);
    await eventually(async () => (await threatOf(api, a, t.externalId)).status === 'failed', 15_000, 'the removal to fail');
    const scans = await eventually(async () => {
      const [last] = (await api.get(`/security/scans/${a.deviceId}`)).body.data;
      return last.status === 'failed' && last;
    }, 15_000, 'the scan to fail');
    expect(scans).toMatchObject({ id: scan.body.id, threatsFound: null, completedAt: expect.any(String) });
  });
});
