import { randomUUID } from 'node:crypto';
import { cutWaves } from '../src/services/deployments/waves.js';
import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import { sql, statementsOn } from './support/db.js';
import { agentCall, enroll, fleet, type EnrolledAgent } from './support/devices.js';
import { eventually } from './support/eventually.js';
import { buildOrg, buildSite, buildUser, unique } from './support/factories.js';

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => {
  await app.stop();
});

type Api = ReturnType<typeof rest>;
const expectError = (res: { status: number; body: any }, status: number, code: string) => expect([res.status, res.body?.code]).toEqual([status, code]);

/** An organization with a technician (deployments, scripts, software, devices), a viewer and `n` enrolled linux devices (by id order). */
async function rolloutFleet(n: number, extra: (i: number) => Record<string, unknown> = () => ({})) {
  const f = await fleet(app);
  const viewer = await buildUser(app, { orgId: f.org.id, role: 'Organization Viewer' });
  const agents: EnrolledAgent[] = [];
  for (let i = 0; i < n; i += 1) agents.push(await enroll(app, f.key, `h${i}-${unique()}`, extra(i)));
  agents.sort((a, b) => (a.deviceId < b.deviceId ? -1 : 1));
  return { ...f, viewer, reader: rest(app, viewer.as), agents };
}

async function script(api: Api, content = 'echo ok'): Promise<string> {
  const res = await api.post('/scripts', { name: `s-${unique()}`, language: 'bash', content });
  expect([res.status, res.body.message]).toEqual([201, undefined]);
  return res.body.id;
}

/** A rollout created, initialized and started; answers its view after the start. */
async function started(api: Api, body: Record<string, unknown>): Promise<any> {
  const created = await api.post('/deployments', { name: `r-${unique()}`, ...body });
  expect([created.status, created.body.message]).toEqual([201, undefined]);
  const ready = await api.post(`/deployments/${created.body.id}/initialize`);
  expect([ready.status, ready.body.status]).toEqual([200, 'ready']);
  const running = await api.post(`/deployments/${created.body.id}/start`);
  expect([running.status, running.body.message]).toEqual([200, undefined]);
  return running.body;
}

async function commandsOf(agent: EnrolledAgent, agentVersion = '1.0.0'): Promise<{ id: string; type: string; payload: Record<string, unknown> }[]> {
  const res = await agentCall(app, agent, '/heartbeat', { agentVersion });
  expect(res.status).toBe(200);
  return res.body.commands;
}

/** The agent takes its commands and answers each with `status`. */
async function answerAll(agent: EnrolledAgent, status: 'completed' | 'failed'): Promise<string[]> {
  const commands = await commandsOf(agent);
  for (const command of commands) {
    const res = await agentCall(app, agent, `/commands/${command.id}/result`, { status, exitCode: status === 'completed' ? 0 : 1 });
    expect(res.status).toBe(200);
  }
  return commands.map((c) => c.type);
}

const devicesOf = async (api: Api, id: string, query = '') => (await api.get(`/deployments/${id}/devices${query}`)).body.data as any[];

/** Waits until the rollout's view satisfies `probe`. */
const until = (api: Api, id: string, probe: (view: any) => boolean, what: string) =>
  eventually(async () => {
    const view = (await api.get(`/deployments/${id}`)).body;
    return probe(view) ? view : undefined;
  }, 20_000, what);

describe('wave cutting', () => {
  test('percent waves take ceil(percent × n / 100), the last the rest; count waves leave a last wave of leftovers; empty waves are dropped', () => {
    expect(cutWaves([{ percent: 10 }, { percent: 40 }, { percent: 50 }], 11)).toEqual([2, 5, 4]);
    expect(cutWaves([{ percent: 50 }, { percent: 50 }], 3)).toEqual([2, 1]);
    expect(cutWaves([{ percent: 34 }, { percent: 33 }, { percent: 33 }], 2)).toEqual([1, 1]);
    expect(cutWaves([{ count: 2 }, { count: 3 }], 10)).toEqual([2, 3, 5]);
    expect(cutWaves([{ count: 2 }, { count: 3 }], 4)).toEqual([2, 2]);
    expect(cutWaves([{ count: 5 }], 5)).toEqual([5]);
  });

  test('initialize cuts the targeted devices in id order into numbered waves, in one insert; percents not summing to 100 and mixed plans are 400', async () => {
    const { api, agents } = await rolloutFleet(5);
    const scriptId = await script(api);
    const created = await api.post('/deployments', { name: 'Cleanup', type: 'script', payload: { scriptId }, targets: { deviceIds: agents.map((a) => a.deviceId) }, waves: [{ percent: 30 }, { percent: 70 }] });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ status: 'draft', type: 'script', payload: { scriptId }, waves: [], currentWave: 0, pauseReason: null, successThresholdPercent: 100, failureThresholdPercent: 20 });
    // One insert for every device, one grouped count for the view.
    const { result: ready, statements } = await statementsOn(app, 'rollout_device', () => api.post(`/deployments/${created.body.id}/initialize`));
    expect(statements).toBe(2);
    expect(ready.body).toMatchObject({ status: 'ready', deviceCount: 5, waves: [{ index: 1, size: 2, status: 'pending', succeeded: 0, failed: 0 }, { index: 2, size: 3, status: 'pending' }] });
    expect((await devicesOf(api, created.body.id)).map((d) => [d.deviceId, d.wave, d.status, d.commandId])).toEqual(agents.map((a, i) => [a.deviceId, i < 2 ? 1 : 2, 'pending', null]));
    expect((await devicesOf(api, created.body.id, '?wave=2&limit=2')).map((d) => d.deviceId)).toEqual(agents.slice(2, 4).map((a) => a.deviceId));
    const paged = await api.get(`/deployments/${created.body.id}/devices?limit=3`);
    expect((await api.get(`/deployments/${created.body.id}/devices?cursor=${paged.body.nextCursor}`)).body.data.map((d: any) => d.deviceId)).toEqual(agents.slice(3).map((a) => a.deviceId));
    expectError(await api.post(`/deployments/${created.body.id}/initialize`), 409, 'CONFLICT');
    // The list counts every rollout's waves in one statement.
    await api.post('/deployments', { name: 'Another', type: 'script', payload: { scriptId }, targets: {}, waves: [{ count: 1 }] });
    const listed = await statementsOn(app, 'rollout_device', () => api.get('/deployments'));
    expect([listed.result.body.data.length, listed.statements]).toEqual([2, 1]);

    const bad = (waves: unknown) => api.post('/deployments', { name: 'x', type: 'script', payload: { scriptId }, targets: {}, waves });
    expectError(await bad([{ percent: 30 }, { percent: 60 }]), 400, 'VALIDATION_ERROR');
    expectError(await bad([{ percent: 50 }, { count: 2 }]), 400, 'VALIDATION_ERROR');
    expectError(await bad([]), 400, 'VALIDATION_ERROR');
  });
});

describe('a script rollout', () => {
  test('advances wave by wave as commands complete, then completes; each device keeps its commandId', async () => {
    const { api, agents } = await rolloutFleet(4);
    const scriptId = await script(api);
    const view = await started(api, { type: 'script', payload: { scriptId }, targets: { deviceIds: agents.map((a) => a.deviceId) }, waves: [{ count: 1 }, { count: 1 }] });
    expect(view).toMatchObject({ status: 'running', currentWave: 1, waves: [{ index: 1, size: 1, status: 'running' }, { index: 2, size: 1, status: 'pending' }, { index: 3, size: 2, status: 'pending' }] });
    // Only wave 1's device has a command: the others are not queued before their turn.
    expect(await commandsOf(agents[1]!)).toEqual([]);
    const first = await commandsOf(agents[0]!);
    expect(first.map((c) => c.type)).toEqual(['run_script']);
    await eventually(async () => (await devicesOf(api, view.id, '?wave=1'))[0].status === 'running', 10_000, 'the handed-out device running');
    expect((await devicesOf(api, view.id, '?wave=1'))[0]).toMatchObject({ deviceId: agents[0]!.deviceId, commandId: first[0]!.id, status: 'running' });
    await agentCall(app, agents[0]!, `/commands/${first[0]!.id}/result`, { status: 'completed', exitCode: 0 });
    await until(api, view.id, (v) => v.currentWave === 2, 'wave 2');
    expect(await answerAll(agents[1]!, 'completed')).toEqual(['run_script']);
    await until(api, view.id, (v) => v.currentWave === 3, 'wave 3');
    for (const agent of agents.slice(2)) await answerAll(agent, 'completed');
    const done = await until(api, view.id, (v) => v.status === 'completed', 'completed');
    expect(done.waves.map((w: any) => [w.status, w.succeeded, w.failed])).toEqual([['completed', 1, 0], ['completed', 1, 0], ['completed', 2, 0]]);
    expect(done.completedAt).toEqual(expect.any(String));
    const audit = await sql(app, `select action from audit_log where resource_id = ? order by seq`, [view.id]);
    expect(audit.map((r) => r.action)).toEqual(['deployment.create', 'deployment.initialize', 'deployment.start', 'deployment.complete']);
  });

  test('pauses on the failure threshold: no new device starts; resume goes on where it stopped; retry hands a failed device a new command', async () => {
    const { api, agents } = await rolloutFleet(4);
    const scriptId = await script(api);
    const view = await started(api, { type: 'script', payload: { scriptId }, targets: { deviceIds: agents.map((a) => a.deviceId) }, waves: [{ count: 2 }, { count: 2 }], successThresholdPercent: 50, failureThresholdPercent: 40 });
    await answerAll(agents[0]!, 'failed');
    const paused = await until(api, view.id, (v) => v.status === 'paused', 'the failure threshold');
    expect(paused).toMatchObject({ pauseReason: 'failure_threshold', currentWave: 1, waves: [{ index: 1, failed: 1 }, { index: 2, status: 'pending' }] });
    // The second device's command was withdrawn before its agent took it: nothing new starts while paused.
    expect(await commandsOf(agents[1]!)).toEqual([]);
    expect((await devicesOf(api, view.id, '?status=pending')).map((d) => [d.deviceId, d.commandId])).toEqual(agents.slice(1).map((a) => [a.deviceId, null]));
    expectError(await api.post(`/deployments/${view.id}/pause`), 409, 'CONFLICT');
    expectError(await api.post(`/deployments/${view.id}/devices/${agents[1]!.deviceId}/retry`), 409, 'CONFLICT');

    const failedBefore = (await devicesOf(api, view.id, '?status=failed'))[0];
    const retried = await api.post(`/deployments/${view.id}/devices/${agents[0]!.deviceId}/retry`);
    expect(retried.status).toBe(202);
    expect(retried.body).toMatchObject({ deviceId: agents[0]!.deviceId, status: 'pending', commandId: expect.any(String) });
    expect(retried.body.commandId).not.toBe(failedBefore.commandId);
    expect(await answerAll(agents[0]!, 'completed')).toEqual(['run_script']);
    await eventually(async () => (await devicesOf(api, view.id, '?wave=1'))[0].status === 'succeeded', 10_000, 'the retried device succeeded');

    const resumed = await api.post(`/deployments/${view.id}/resume`);
    // Wave 1 reached 50 %: wave 2 starts at once; the second device of wave 1 gets its command again.
    expect(resumed.body).toMatchObject({ status: 'running', pauseReason: null, currentWave: 2 });
    for (const agent of agents.slice(1)) await answerAll(agent, 'completed');
    await until(api, view.id, (v) => v.status === 'completed', 'completed');
  });

  test('pauses when a finished wave falls short of the success threshold; manual pause and resume; cancel mid-way leaves the rest cancelled, their commands never handed out', async () => {
    const { api, agents } = await rolloutFleet(4);
    const scriptId = await script(api);
    const view = await started(api, { type: 'script', payload: { scriptId }, targets: { deviceIds: agents.map((a) => a.deviceId) }, waves: [{ count: 2 }, { count: 1 }], failureThresholdPercent: 100 });
    await answerAll(agents[0]!, 'completed');
    await answerAll(agents[1]!, 'failed');
    const short = await until(api, view.id, (v) => v.status === 'paused', 'the success threshold');
    expect(short).toMatchObject({ pauseReason: 'success_threshold', currentWave: 1, waves: [{ index: 1, status: 'completed', succeeded: 1, failed: 1 }, { status: 'pending' }, { status: 'pending' }] });

    // Resuming accepts the wave that fell short: wave 2 starts.
    await api.post(`/deployments/${view.id}/resume`);
    await until(api, view.id, (v) => v.currentWave === 2, 'wave 2');
    const manual = await api.post(`/deployments/${view.id}/pause`);
    expect(manual.body).toMatchObject({ status: 'paused', pauseReason: 'manual' });
    expect(await commandsOf(agents[2]!)).toEqual([]);
    const resumed = await api.post(`/deployments/${view.id}/resume`);
    expect(resumed.body.status).toBe('running');
    await answerAll(agents[2]!, 'completed');
    await until(api, view.id, (v) => v.currentWave === 3, 'wave 3');

    const cancelled = await api.post(`/deployments/${view.id}/cancel`);
    expect(cancelled.body).toMatchObject({ status: 'cancelled' });
    expect((await devicesOf(api, view.id, '?status=cancelled')).map((d) => d.deviceId)).toEqual([agents[3]!.deviceId]);
    expect(await commandsOf(agents[3]!)).toEqual([]);
    expectError(await api.post(`/deployments/${view.id}/cancel`), 409, 'CONFLICT');
    expectError(await api.post(`/deployments/${view.id}/resume`), 409, 'CONFLICT');
    const actions = (await sql(app, `select action from audit_log where resource_id = ? order by seq`, [view.id])).map((r) => r.action);
    expect(actions).toEqual(['deployment.create', 'deployment.initialize', 'deployment.start', 'deployment.auto_pause', 'deployment.resume', 'deployment.pause', 'deployment.resume', 'deployment.cancel']);
  });
});

describe('devices that left', () => {
  test('a device moved to another organization or decommissioned after initialize fails with the reason and gets nothing', async () => {
    const { api, agents } = await rolloutFleet(3);
    const scriptId = await script(api);
    const created = await api.post('/deployments', { name: `r-${unique()}`, type: 'script', payload: { scriptId }, targets: { deviceIds: agents.map((a) => a.deviceId) }, waves: [{ percent: 100 }], failureThresholdPercent: 100, successThresholdPercent: 0 });
    expect((await api.post(`/deployments/${created.body.id}/initialize`)).status).toBe(200);
    const elsewhere = await buildOrg(app);
    await sql(app, 'update device set org_id = ?, site_id = null where id = ?', [elsewhere.id, agents[1]!.deviceId]);
    await sql(app, `update device set status = 'decommissioned' where id = ?`, [agents[2]!.deviceId]);
    expect((await api.post(`/deployments/${created.body.id}/start`)).status).toBe(200);
    const reason = 'the device is no longer an active device of the organization';
    expect((await devicesOf(api, created.body.id)).map((d) => [d.deviceId, d.status, d.reason ?? null])).toEqual([
      [agents[0]!.deviceId, 'pending', null],
      [agents[1]!.deviceId, 'failed', reason],
      [agents[2]!.deviceId, 'failed', reason],
    ]);
    expect(await commandsOf(agents[1]!)).toEqual([]);
  });
});

describe('software and agent version rollouts', () => {
  test('software: install_software with the catalog payload and the rollout as deploymentId; a device without an installer fails with the reason', async () => {
    const { api, agents } = await rolloutFleet(2, (i) => (i === 0 ? {} : { osType: 'macos', osVersion: '14.0', architecture: 'arm64' }));
    const pkg = await api.post('/software/catalog', { name: `App ${unique()}`, vendor: 'Example', category: 'utility' });
    const version = await api.post(`/software/catalog/${pkg.body.id}/versions`, { version: '2.0.0', installers: [{ osType: 'linux', url: 'https://downloads.example.test/app.deb', sha256: 'ab'.repeat(32) }] });
    const view = await started(api, { type: 'software', payload: { catalogId: pkg.body.id, versionId: version.body.id }, targets: { deviceIds: agents.map((a) => a.deviceId) }, waves: [{ percent: 100 }], failureThresholdPercent: 100, successThresholdPercent: 50 });
    const devices = await devicesOf(api, view.id);
    const [linuxRow, macRow] = [devices.find((d) => d.commandId), devices.find((d) => !d.commandId)];
    expect(macRow).toMatchObject({ status: 'failed', reason: expect.stringContaining('no installer for macos') });
    const linuxAgent = agents.find((a) => a.deviceId === linuxRow.deviceId)!;
    const commands = await commandsOf(linuxAgent);
    expect(commands).toEqual([{ id: linuxRow.commandId, type: 'install_software', payload: expect.objectContaining({ deploymentId: view.id, version: '2.0.0', url: 'https://downloads.example.test/app.deb', sha256: 'ab'.repeat(32) }) }]);
    await agentCall(app, linuxAgent, `/commands/${commands[0]!.id}/result`, { status: 'completed', exitCode: 0 });
    const done = await until(api, view.id, (v) => v.status === 'completed', 'completed');
    expect(done.waves).toEqual([{ index: 1, size: 2, status: 'completed', succeeded: 1, failed: 1 }]);
  });

  test('agent_version: the device is offered the registered build as upgradeTo (held by its update window) and succeeds once it heartbeats the version; unknown builds are 404', async () => {
    const { api, org, agents } = await rolloutFleet(2);
    const version = `7.${Math.floor(Math.random() * 1000)}.0`;
    await sql(
      app,
      `insert into agent_version (id, created_at, updated_at, version, component, os, arch, asset_name, url, checksum, prerelease, published_at)
       values (?, now(), now(), ?, 'agent', 'linux', 'amd64', 'rmm-agent-linux-amd64', 'https://releases.example.test/rmm-agent', ?, false, now())`,
      [randomUUID(), version, 'cd'.repeat(32)],
    );
    expectError(await api.post('/deployments', { name: 'x', type: 'agent_version', payload: { version: '9.9.99' }, targets: {}, waves: [{ percent: 100 }] }), 404, 'NOT_FOUND');
    expectError(await api.post('/deployments', { name: 'x', type: 'agent_version', payload: { version: 'latest' }, targets: {}, waves: [{ percent: 100 }] }), 400, 'VALIDATION_ERROR');
    // A closed update window holds the offer.
    const closed = { days: ['mon'], startUtc: '00:00', endUtc: '00:01' };
    await sql(app, `update organization set settings = jsonb_set(settings, '{agentUpdateWindow}', ?::jsonb) where id = ?`, [JSON.stringify(closed), org.id]);
    const view = await started(api, { type: 'agent_version', payload: { version: `v${version}` }, targets: { deviceIds: [agents[0]!.deviceId] }, waves: [{ percent: 100 }] });
    expect(view.payload).toEqual({ version });
    expect((await devicesOf(api, view.id))[0]).toMatchObject({ status: 'running', commandId: null });
    expect((await agentCall(app, agents[0]!, '/heartbeat', { agentVersion: '1.0.0' })).body.upgradeTo).toBeNull();
    await sql(app, `update organization set settings = settings - 'agentUpdateWindow' where id = ?`, [org.id]);
    const offered = (await agentCall(app, agents[0]!, '/heartbeat', { agentVersion: '1.0.0' })).body.upgradeTo;
    expect(offered).toMatchObject({ version, component: 'agent', checksum: 'cd'.repeat(32) });
    // Devices outside the rollout are not offered it.
    expect((await agentCall(app, agents[1]!, '/heartbeat', { agentVersion: '1.0.0' })).body.upgradeTo).toBeNull();
    await agentCall(app, agents[0]!, '/heartbeat', { agentVersion: version });
    const done = await until(api, view.id, (v) => v.status === 'completed', 'completed (due work)');
    expect(done.waves[0]).toMatchObject({ succeeded: 1, failed: 0 });
    expect((await sql(app, `select pinned_agent_version from device where id = ?`, [agents[0]!.deviceId]))[0].pinned_agent_version).toBeNull();
  });
});

describe('policy rollouts', () => {
  test('policy: each wave’s devices get the policy applied and evaluated; a device succeeds once evaluated since its start, its status kept', async () => {
    const { api, agents, org } = await rolloutFleet(2);
    const policy = await api.post('/policies', { name: `P ${unique()}`, targets: { deviceIds: [agents[0]!.deviceId] }, rules: [{ type: 'software_forbidden', name: 'utorrent*' }] });
    expect([policy.status, policy.body.status]).toEqual([201, 'inactive']);
    const view = await started(api, { type: 'policy', payload: { policyId: policy.body.id }, targets: { deviceIds: agents.map((a) => a.deviceId) }, waves: [{ count: 1 }] });
    expect((await devicesOf(api, view.id, '?wave=1'))[0]).toMatchObject({ status: 'running', commandId: null });
    const done = await until(api, view.id, (v) => v.status === 'completed', 'completed (due work)');
    expect(done.waves.map((w: any) => [w.size, w.succeeded])).toEqual([[1, 1], [1, 1]]);
    expect((await devicesOf(api, view.id)).map((d) => [d.status, d.reason])).toEqual([['succeeded', 'compliant'], ['succeeded', 'compliant']]);
    // The second device, outside the policy's targets, was applied it by the rollout.
    const compliance = await api.get(`/policies/${policy.body.id}/compliance`);
    expect(compliance.body.devices.map((d: any) => d.deviceId).sort()).toEqual(agents.map((a) => a.deviceId).sort());

    const planner = rest(app, (await buildUser(app, { orgId: org.id, can: ['deployments:read', 'deployments:write', 'policies:read'] })).as);
    expectError(await planner.post('/deployments', { name: 'x', type: 'policy', payload: { policyId: policy.body.id }, targets: {}, waves: [{ percent: 100 }] }), 403, 'FORBIDDEN');
    const theirs = await rolloutFleet(0);
    const theirPolicy = await theirs.api.post('/policies', { name: 'Theirs', targets: {}, rules: [{ type: 'disk_encryption' }] });
    expectError(await api.post('/deployments', { name: 'x', type: 'policy', payload: { policyId: theirPolicy.body.id }, targets: {}, waves: [{ percent: 100 }] }), 404, 'NOT_FOUND');
    expectError(await api.post('/deployments', { name: 'x', type: 'policy', payload: { policyId: 'nope' }, targets: {}, waves: [{ percent: 100 }] }), 400, 'VALIDATION_ERROR');
  });
});

describe('rules', () => {
  test('PATCH and DELETE only in draft or ready (409 otherwise); a changed target sends a ready rollout back to draft', async () => {
    const { api, agents } = await rolloutFleet(2);
    const scriptId = await script(api);
    const created = await api.post('/deployments', { name: 'One', type: 'script', payload: { scriptId }, targets: { deviceIds: [agents[0]!.deviceId] }, waves: [{ percent: 100 }] });
    const id = created.body.id;
    const renamed = await api.patch(`/deployments/${id}`, { name: 'Two', failureThresholdPercent: 50 });
    expect(renamed.body).toMatchObject({ name: 'Two', failureThresholdPercent: 50, status: 'draft' });
    await api.post(`/deployments/${id}/initialize`);
    const retargeted = await api.patch(`/deployments/${id}`, { targets: { deviceIds: agents.map((a) => a.deviceId) } });
    expect(retargeted.body).toMatchObject({ status: 'draft', waves: [] });
    expect((await api.post(`/deployments/${id}/initialize`)).body.deviceCount).toBe(2);
    expectError(await api.patch(`/deployments/${id}`, { payload: { catalogId: randomUUID() } }), 400, 'VALIDATION_ERROR');
    expectError(await api.patch(`/deployments/${id}`, {}), 400, 'VALIDATION_ERROR');
    await api.post(`/deployments/${id}/start`);
    expectError(await api.patch(`/deployments/${id}`, { name: 'Three' }), 409, 'CONFLICT');
    expectError(await api.delete(`/deployments/${id}`), 409, 'CONFLICT');
    expectError(await api.post(`/deployments/${id}/start`), 409, 'CONFLICT');
    expectError(await api.post(`/deployments/${id}/resume`), 409, 'CONFLICT');

    const other = await api.post('/deployments', { name: 'Gone', type: 'script', payload: { scriptId }, targets: {}, waves: [{ count: 1 }] });
    expect((await api.post(`/deployments/${other.body.id}/initialize`)).body.deviceCount).toBe(2);
    expect((await api.delete(`/deployments/${other.body.id}`)).status).toBe(204);
    expectError(await api.get(`/deployments/${other.body.id}`), 404, 'NOT_FOUND');
  });

  test('lists filter by status and type; unknown enums and malformed input are 400', async () => {
    const { api, agents, org } = await rolloutFleet(1);
    const scriptId = await script(api);
    const a = await api.post('/deployments', { name: 'A', type: 'script', payload: { scriptId }, targets: {}, waves: [{ percent: 100 }] });
    const b = await api.post('/deployments', { name: 'B', type: 'script', payload: { scriptId }, targets: { deviceIds: [agents[0]!.deviceId] }, waves: [{ percent: 100 }] });
    await api.post(`/deployments/${b.body.id}/initialize`);
    expect((await api.get('/deployments')).body.data.map((d: any) => d.id)).toEqual([b.body.id, a.body.id]);
    expect((await api.get('/deployments?status=ready')).body.data.map((d: any) => d.id)).toEqual([b.body.id]);
    expect((await api.get('/deployments?type=software')).body.data).toEqual([]);
    const first = await api.get('/deployments?limit=1');
    expect((await api.get(`/deployments?limit=1&cursor=${first.body.nextCursor}`)).body.data.map((d: any) => d.id)).toEqual([a.body.id]);
    expectError(await api.get('/deployments?status=exploded'), 400, 'VALIDATION_ERROR');
    expectError(await api.get('/deployments?type=firmware'), 400, 'VALIDATION_ERROR');
    expectError(await api.get(`/deployments/${b.body.id}/devices?status=lost`), 400, 'VALIDATION_ERROR');
    expectError(await api.post('/deployments', { name: 'x', type: 'firmware', payload: {}, targets: {}, waves: [{ percent: 100 }] }), 400, 'VALIDATION_ERROR');
    expectError(await api.post('/deployments', { name: 'x', type: 'script', payload: { version: '1.0.0' }, targets: {}, waves: [{ percent: 100 }] }), 400, 'VALIDATION_ERROR');
    expectError(await api.post('/deployments', { name: 'x', type: 'script', payload: { scriptId }, targets: { tags: ['a'] }, waves: [{ percent: 100 }] }), 400, 'VALIDATION_ERROR');
    expectError(await api.post('/deployments', { name: 'x', type: 'script', payload: { scriptId }, targets: {}, waves: [{ percent: 100 }], successThresholdPercent: 101 }), 400, 'VALIDATION_ERROR');
    const gqlBad = await gql(app, (await buildUser(app, { orgId: org.id, role: 'Organization Technician' })).as, `{ deployments(status: exploded) { edges { node { id } } } }`);
    expect(gqlBad.body.errors?.length).toBeGreaterThan(0);
  });

  test('viewers read but do not write (403); the change’s own permission is required to create and start', async () => {
    const { api, org, reader, agents } = await rolloutFleet(1);
    const scriptId = await script(api);
    const created = await api.post('/deployments', { name: 'R', type: 'script', payload: { scriptId }, targets: {}, waves: [{ percent: 100 }] });
    const id = created.body.id;
    expect((await reader.get('/deployments')).body.data.map((d: any) => d.id)).toEqual([id]);
    expect((await reader.get(`/deployments/${id}`)).status).toBe(200);
    expect((await reader.get(`/deployments/${id}/devices`)).status).toBe(200);
    expectError(await reader.post('/deployments', { name: 'R', type: 'script', payload: { scriptId }, targets: {}, waves: [{ percent: 100 }] }), 403, 'FORBIDDEN');
    expectError(await reader.patch(`/deployments/${id}`, { name: 'x' }), 403, 'FORBIDDEN');
    expectError(await reader.delete(`/deployments/${id}`), 403, 'FORBIDDEN');
    for (const verb of ['initialize', 'start', 'pause', 'resume', 'cancel']) expectError(await reader.post(`/deployments/${id}/${verb}`), 403, 'FORBIDDEN');
    expectError(await reader.post(`/deployments/${id}/devices/${agents[0]!.deviceId}/retry`), 403, 'FORBIDDEN');

    // deployments:write alone grants no script runs.
    const planner = rest(app, (await buildUser(app, { orgId: org.id, can: ['deployments:read', 'deployments:write', 'scripts:read'] })).as);
    expectError(await planner.post('/deployments', { name: 'R', type: 'script', payload: { scriptId }, targets: {}, waves: [{ percent: 100 }] }), 403, 'FORBIDDEN');
    await api.post(`/deployments/${id}/initialize`);
    expectError(await planner.post(`/deployments/${id}/start`), 403, 'FORBIDDEN');

    const viewerGql = await gql(app, (await buildUser(app, { orgId: org.id, role: 'Organization Viewer' })).as, `mutation($id: ID!) { startDeployment(id: $id) { id } }`, { id });
    expect(viewerGql.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });

  test('another organization’s rollout, script, catalog version, device, group and site are 404 on every route, REST and GraphQL', async () => {
    const mine = await rolloutFleet(1);
    const theirs = await rolloutFleet(1);
    const theirScript = await script(theirs.api);
    const theirRollout = (await theirs.api.post('/deployments', { name: 'Theirs', type: 'script', payload: { scriptId: theirScript }, targets: {}, waves: [{ percent: 100 }] })).body.id;
    const theirSite = await buildSite(app, theirs.org.id);
    const theirGroup = await theirs.api.post('/groups', { name: `g-${unique()}`, type: 'static' });
    expect(theirGroup.status).toBe(201);
    const pkg = await theirs.api.post('/software/catalog', { name: `App ${unique()}`, vendor: 'E', category: 'u' });
    const version = await theirs.api.post(`/software/catalog/${pkg.body.id}/versions`, { version: '1.0.0', installers: [{ osType: 'linux', url: 'https://x.example.test/a', sha256: 'ab'.repeat(32) }] });
    const myScript = await script(mine.api);
    const base = { name: 'x', type: 'script', payload: { scriptId: myScript }, targets: {}, waves: [{ percent: 100 }] };

    expectError(await mine.api.post('/deployments', { ...base, payload: { scriptId: theirScript } }), 404, 'NOT_FOUND');
    expectError(await mine.api.post('/deployments', { ...base, type: 'software', payload: { catalogId: pkg.body.id, versionId: version.body.id } }), 404, 'NOT_FOUND');
    expectError(await mine.api.post('/deployments', { ...base, targets: { deviceIds: [theirs.agents[0]!.deviceId] } }), 404, 'NOT_FOUND');
    expectError(await mine.api.post('/deployments', { ...base, targets: { groupIds: [theirGroup.body.id] } }), 404, 'NOT_FOUND');
    expectError(await mine.api.post('/deployments', { ...base, targets: { siteIds: [theirSite.id] } }), 404, 'NOT_FOUND');
    expectError(await mine.api.post('/deployments', { ...base, orgId: theirs.org.id }), 404, 'NOT_FOUND');

    const routes: [string, string][] = [
      ['get', `/deployments/${theirRollout}`],
      ['get', `/deployments/${theirRollout}/devices`],
      ['patch', `/deployments/${theirRollout}`],
      ['delete', `/deployments/${theirRollout}`],
      ...['initialize', 'start', 'pause', 'resume', 'cancel'].map((verb): [string, string] => ['post', `/deployments/${theirRollout}/${verb}`]),
      ['post', `/deployments/${theirRollout}/devices/${theirs.agents[0]!.deviceId}/retry`],
    ];
    for (const [method, path] of routes) expectError(await (mine.api as any)[method](path, method === 'patch' ? { name: 'mine' } : undefined), 404, 'NOT_FOUND');
    expect((await mine.api.get('/deployments')).body.data).toEqual([]);
    expect((await mine.api.get(`/deployments?orgId=${theirs.org.id}`)).body.data).toEqual([]);

    // A device of another rollout (or organization) in my rollout's retry: 404.
    const own = (await mine.api.post('/deployments', base)).body.id;
    expectError(await mine.api.post(`/deployments/${own}/devices/${theirs.agents[0]!.deviceId}/retry`), 404, 'NOT_FOUND');

    const documents: [string, Record<string, unknown>][] = [
      [`query($id: ID!) { deployment(id: $id) { id } }`, { id: theirRollout }],
      [`query($id: ID!) { deploymentDevices(id: $id) { edges { node { deviceId } } } }`, { id: theirRollout }],
      [`mutation($id: ID!) { updateDeployment(id: $id, input: {name: "x"}) { id } }`, { id: theirRollout }],
      [`mutation($id: ID!) { deleteDeployment(id: $id) }`, { id: theirRollout }],
      ...['initialize', 'start', 'pause', 'resume', 'cancel'].map((verb): [string, Record<string, unknown>] => [`mutation($id: ID!) { ${verb}Deployment(id: $id) { id } }`, { id: theirRollout }]),
      [`mutation($id: ID!, $d: ID!) { retryDeploymentDevice(id: $id, deviceId: $d) { deviceId } }`, { id: theirRollout, d: theirs.agents[0]!.deviceId }],
      [
        `mutation($s: ID!) { createDeployment(input: {name: "x", type: script, payload: {scriptId: $s}, targets: {}, waves: [{percent: 100}]}) { id } }`,
        { s: theirScript },
      ],
    ];
    for (const [document, variables] of documents) {
      const res = await gql(app, mine.tech.as, document, variables);
      expect([document, res.body.errors?.[0]?.extensions?.code]).toEqual([document, 'NOT_FOUND']);
    }
    const list = await gql(app, mine.tech.as, `{ deployments { edges { node { id } } totalCount } }`);
    expect(list.body.data.deployments).toEqual({ edges: [{ node: { id: own } }], totalCount: 1 });
  });

  test('users limited to some sites see and retry only their sites’ devices of a rollout, and target only their sites', async () => {
    const { api, org, agents } = await rolloutFleet(2);
    const [siteA, siteB] = [await buildSite(app, org.id), await buildSite(app, org.id)];
    await sql(app, 'update device set site_id = ? where id = ?', [siteA.id, agents[0]!.deviceId]);
    await sql(app, 'update device set site_id = ? where id = ?', [siteB.id, agents[1]!.deviceId]);
    const scriptId = await script(api, 'exit 1');
    const view = await started(api, { type: 'script', payload: { scriptId }, targets: { siteIds: [siteA.id, siteB.id] }, waves: [{ percent: 100 }], failureThresholdPercent: 100 });
    for (const agent of agents) await answerAll(agent, 'failed');
    await until(api, view.id, (v) => v.waves[0].failed === 2, 'both failed');
    const limitedUser = await buildUser(app, { orgId: org.id, role: 'Organization Technician' });
    await sql(app, 'update membership set site_ids = ?::jsonb where id = ?', [JSON.stringify([siteA.id]), limitedUser.membership.id]);
    const limited = rest(app, limitedUser.as);
    expect((await limited.get(`/deployments/${view.id}/devices`)).body.data.map((d: any) => d.deviceId)).toEqual([agents[0]!.deviceId]);
    expect((await gql(app, limitedUser.as, `query($id: ID!) { deploymentDevices(id: $id) { totalCount } }`, { id: view.id })).body.data.deploymentDevices.totalCount).toBe(1);
    expectError(await limited.post(`/deployments/${view.id}/devices/${agents[1]!.deviceId}/retry`), 404, 'NOT_FOUND');
    // A rollout reaching another site is not theirs to change, even on their own device.
    expectError(await limited.post(`/deployments/${view.id}/devices/${agents[0]!.deviceId}/retry`), 404, 'NOT_FOUND');
    expectError(await limited.post(`/deployments/${view.id}/cancel`), 404, 'NOT_FOUND');
    expect((await api.get(`/deployments/${view.id}`)).body.status).toBe('paused');
    // One within their site is.
    const own = await started(api, { type: 'script', payload: { scriptId }, targets: { siteIds: [siteA.id] }, waves: [{ percent: 100 }] });
    expect((await limited.post(`/deployments/${own.id}/pause`)).status).toBe(200);
    expectError(await limited.post('/deployments', { name: 'x', type: 'script', payload: { scriptId }, targets: {}, waves: [{ percent: 100 }] }), 403, 'FORBIDDEN');
    expectError(await limited.post('/deployments', { name: 'x', type: 'script', payload: { scriptId }, targets: { siteIds: [siteB.id] }, waves: [{ percent: 100 }] }), 404, 'NOT_FOUND');
  });

  test('GraphQL creates, starts and reads a rollout with its devices', async () => {
    const { tech, agents } = await rolloutFleet(2);
    const scriptId = await script(rest(app, tech.as));
    const created = await gql(app, tech.as, `mutation($s: ID!, $d: [ID!]) { createDeployment(input: {name: "G", type: script, payload: {scriptId: $s}, targets: {deviceIds: $d}, waves: [{count: 1}]}) { id status } }`, {
      s: scriptId,
      d: agents.map((a) => a.deviceId),
    });
    expect(created.body.errors).toBeUndefined();
    const id = created.body.data.createDeployment.id;
    expect((await gql(app, tech.as, `mutation($id: ID!) { initializeDeployment(id: $id) { status waves { index size status } } }`, { id })).body.data.initializeDeployment).toEqual({
      status: 'ready',
      waves: [{ index: 1, size: 1, status: 'pending' }, { index: 2, size: 1, status: 'pending' }],
    });
    expect((await gql(app, tech.as, `mutation($id: ID!) { startDeployment(id: $id) { status currentWave } }`, { id })).body.data.startDeployment).toEqual({ status: 'running', currentWave: 1 });
    const devices = await gql(app, tech.as, `query($id: ID!) { deploymentDevices(id: $id, wave: 1) { totalCount edges { node { deviceId wave status commandId } } } }`, { id });
    expect(devices.body.data.deploymentDevices).toEqual({ totalCount: 1, edges: [{ node: { deviceId: agents[0]!.deviceId, wave: 1, status: 'pending', commandId: expect.any(String) } }] });
    const one = await gql(app, tech.as, `query($id: ID!) { deployment(id: $id) { name type payload } }`, { id });
    expect(one.body.data.deployment).toEqual({ name: 'G', type: 'script', payload: { scriptId } });
  });
});
