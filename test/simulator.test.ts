import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import path from 'node:path';
import { RequestContext } from '../src/auth/context.js';
import { DOMAIN_EVENT_TOPIC } from '../src/events/dispatcher.js';
import { projectRoot } from '../src/paths.js';
import { ApiSession, FLEET_NAME, prepareFleet, startSimulation, watchDeviceStatus, type Simulation, type Watch } from '../src/scripts/simulator.js';
import { callAgent } from '../src/services/devices/agent-channel.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, createTestApp, type TestApp } from './support/app.js';
import { rest } from './support/clients.js';
import { sql } from './support/db.js';
import { fleet } from './support/devices.js';
import { eventually } from './support/eventually.js';
import { buildPartner, buildUser } from './support/factories.js';

let app: TestApp;
let api: ReturnType<typeof rest>;
let key: string;
const running: Simulation[] = [];

beforeAll(async () => {
  app = await createTestApp();
  ({ api, key } = await fleet(app, { keyName: 'Simulator' }));
});
afterAll(async () => {
  await Promise.all(running.map((s) => s.stop()));
  await app.stop();
});

async function simulate(options: { devices: number; ws?: boolean; prefix: string }): Promise<Simulation> {
  const simulation = await startSimulation({ url: app.url, enrollmentKey: key, intervalSeconds: 0.2, jitterSeconds: 0.1, rebootSeconds: 0.5, updateSeconds: 0.2, ...options });
  running.push(simulation);
  return simulation;
}

/** Queues a command and waits for the simulated agent's result. */
async function runCommand(deviceId: string, type: string, payload: Record<string, unknown> = {}) {
  const queued = await api.post(`/devices/${deviceId}/commands`, { type, payload });
  expect(queued.status).toBe(201);
  return eventually(
    async () => {
      const command = (await api.get(`/devices/${deviceId}/commands`)).body.data.find((c: { id: string }) => c.id === queued.body.id);
      return ['completed', 'failed'].includes(command.status) ? command : undefined;
    },
    15_000,
    `the ${type} result`,
  );
}

/** Runs a script on the device (a script execution: run_script commands are never queued by hand) and waits for its result. */
async function runScript(deviceId: string, content: string) {
  const script = await api.post('/scripts', { name: `sim-${crypto.randomUUID()}`, language: 'python', content });
  expect([script.status, script.body.message]).toEqual([201, undefined]);
  const started = await api.post(`/scripts/${script.body.id}/execute`, { deviceIds: [deviceId] });
  expect([started.status, started.body.message]).toEqual([202, undefined]);
  const executionId = started.body.executions[0].id as string;
  return eventually(
    async () => {
      const execution = (await api.get(`/scripts/executions/${executionId}`)).body;
      return ['completed', 'failed'].includes(execution.status) ? execution : undefined;
    },
    15_000,
    'the script result',
  );
}

test('three simulated agents enroll, heartbeat and answer their commands over REST', async () => {
  const simulation = await simulate({ devices: 3, prefix: `rest-${Date.now()}` });
  const [first, second, third] = simulation.agents.map((a) => a.deviceId!);
  await eventually(() => simulation.agents.every((a) => a.heartbeats >= 2), 10_000, 'two heartbeats from each agent');
  const listed = (await api.get('/devices?limit=100')).body.devices.filter((d: { id: string }) => [first, second, third].includes(d.id));
  expect(listed.map((d: { status: string }) => d.status)).toEqual(['online', 'online', 'online']);
  expect((await api.get(`/devices/${first}`)).body.metrics).toEqual({ cpuPercent: expect.any(Number), ramPercent: expect.any(Number), diskPercent: expect.any(Number) });

  const inventory = await runCommand(first!, 'refresh_inventory');
  expect(inventory).toMatchObject({ status: 'completed', exitCode: 0, result: { software: expect.any(Number), patches: 1 } });
  const stored = (await api.get(`/devices/${first}/inventory`)).body;
  expect(stored.software.length).toBe(inventory?.result?.software);
  // An uninstall: the agent completes it, the item is gone, and the agent no longer reports it.
  const [installed] = (await api.get(`/software/inventory/${first}`)).body.data as { id: string; name: string }[];
  const uninstall = await api.post(`/software/inventory/${first}/${installed!.id}/uninstall`, {});
  expect(uninstall.status).toBe(202);
  await eventually(async () => !(await api.get(`/software/inventory/${first}`)).body.data.some((s: { id: string }) => s.id === installed!.id), 15_000, 'the uninstall');
  await runCommand(first!, 'refresh_inventory');
  expect((await api.get(`/software/inventory/${first}`)).body.data.map((s: { name: string }) => s.name)).not.toContain(installed!.name);
  const patches = (await api.get(`/patches?deviceId=${first}`)).body.data;
  expect(patches).toEqual([expect.objectContaining({ source: expect.stringMatching(/^(microsoft|apple|linux)$/), deviceStatus: expect.stringMatching(/^(installed|missing)$/) })]);
  expect((await api.get(`/devices/${first}`)).body.hardwareInfo).toMatchObject({ serialNumber: expect.any(String), disks: [expect.objectContaining({ sizeBytes: expect.any(Number) })] });
  // A scan runs (reported started) and completes with the device's threats, as its inventory reports them.
  const scan = await api.post(`/security/scan/${first}`, { type: 'quick' });
  expect(scan.status).toBe(202);
  const scanned = await eventually(async () => (await api.get(`/security/scans/${first}`)).body.data.find((s: { id: string; status: string }) => s.id === scan.body.id && s.status === 'completed'), 15_000, 'the scan');
  expect(scanned.threatsFound).toBe((await api.get(`/security/threats/${first}`)).body.data.length);

  // Patching end to end: a patch scan; a rollback where the update is installed; an immediate policy's job installs it.
  const statusOf = async () => (await api.get(`/patches?deviceId=${first}`)).body.data[0] as { id: string; deviceStatus: string };
  const commandDone = (commandId: string) =>
    eventually(async () => ['completed', 'failed'].includes((await api.get(`/devices/${first}/commands`)).body.data.find((c: { id: string }) => c.id === commandId)?.status), 15_000, `command ${commandId}`);
  const patchScan = await api.post('/patches/scan', { deviceIds: [first] });
  expect([patchScan.status, patchScan.body.skipped]).toEqual([202, []]);
  await commandDone(patchScan.body.commands[0].commandId);
  const osUpdate = await statusOf();
  if (osUpdate.deviceStatus === 'installed') {
    const rolledBack = await api.post(`/patches/${osUpdate.id}/rollback`, { deviceIds: [first], reason: 'simulated' });
    expect(rolledBack.status).toBe(202);
    await commandDone(rolledBack.body.commands[0].commandId);
    expect((await statusOf()).deviceStatus).toBe('missing');
  }
  expect((await api.post(`/patches/${osUpdate.id}/approve`, {})).status).toBe(200);
  const policy = await api.post('/patch-policies', { name: `Sim ${Date.now()}`, targets: { deviceIds: [first] }, autoApprove: [], schedule: { type: 'immediate' }, rebootBehavior: 'never' });
  expect(policy.status).toBe(201);
  await eventually(async () => (await api.get(`/patches/jobs?policyId=${policy.body.id}`)).body.data[0]?.status === 'completed', 15_000, 'the install job');
  expect((await statusOf()).deviceStatus).toBe('installed');

  const script = await runScript(second!, 'echo hello\necho world');
  expect(script).toMatchObject({ status: 'completed', exitCode: 0, stdout: expect.stringMatching(/^hello\nworld\n\[simulated on /) });
  // `exit N` fails it.
  expect(await runScript(second!, 'echo oops\nexit 3')).toMatchObject({ status: 'failed', exitCode: 3, stderr: 'script exited with 3\n' });

  const update = await runCommand(third!, 'update', { version: '1.0.1' });
  expect(update).toMatchObject({ status: 'completed', result: { from: '1.0.0', to: '1.0.1' } });
  expect((await api.get(`/devices/${third}`)).body).toMatchObject({ status: 'online', agentVersion: '1.0.1' });
  const transitions = await sql(app, `select type, data->>'status' as status from outbox_event where data->>'deviceId' = ? and type in ('device.updated', 'device.online') order by created_at`, [third]);
  expect(transitions).toEqual([
    { type: 'device.updated', status: 'updating' },
    { type: 'device.online', status: 'online' },
  ]);

  expect(await runCommand(first!, 'set_auto_update', { enabled: false })).toMatchObject({ status: 'completed', result: { autoUpdate: false } });
  expect(simulation.agents[0]!.autoUpdate).toBe(false);

  const beatsBefore = simulation.agents[1]!.heartbeats;
  expect(await runCommand(second!, 'reboot')).toMatchObject({ status: 'completed', result: { rebooting: true } });
  await eventually(() => simulation.agents[1]!.state === 'running' && simulation.agents[1]!.heartbeats > beatsBefore + 1, 10_000, 'the agent back from its reboot');
});

test('with --ws the agents keep a channel open: commands are pushed and requests answered', async () => {
  const simulation = await simulate({ devices: 2, ws: true, prefix: `ws-${Date.now()}` });
  await eventually(() => simulation.stats().channels === 2, 10_000, 'both channels open');
  const device = simulation.agents[0]!.deviceId!;
  expect(await runScript(device, 'echo pushed')).toMatchObject({ status: 'completed', stdout: expect.stringMatching(/^pushed\n/) });
  const info = await callAgent(RequestContext.system(app.server.runtime, 'test'), device, 'system.info', {}, { timeoutMs: 5_000 });
  expect(info).toMatchObject({ ok: true, result: { hostname: simulation.agents[0]!.hostname, agentVersion: '1.0.0' } });
  expect(simulation.agents[0]!.requests).toBe(1);
  expect(await callAgent(RequestContext.system(app.server.runtime, 'test'), device, 'system.nothing')).toEqual({ ok: false, error: 'unknown method: system.nothing' });
});

// ── without a key: `npm run simulate` signs in and sets up the "Simulated fleet" organization ────

describe('without a key', () => {
  // Devices silent for 2 s go offline (the sweep runs every second), so --watch sees them leave.
  let fleetApp: TestApp;
  const simulations: Simulation[] = [];
  const watches: Watch[] = [];
  beforeAll(async () => {
    fleetApp = await createTestApp({ env: { DEVICE_OFFLINE_AFTER_SECONDS: '2' } });
  });
  afterAll(async () => {
    await Promise.all([...simulations.map((s) => s.stop()), ...watches.map((w) => w.stop())]);
    await fleetApp.stop();
  });

  const admin = () => ApiSession.login(fleetApp.url, ADMIN_EMAIL, ADMIN_PASSWORD);

  async function simulateWith(enrollmentKey: string, prefix: string, devices = 2): Promise<Simulation> {
    const simulation = await startSimulation({ url: fleetApp.url, enrollmentKey, devices, prefix, intervalSeconds: 0.2, jitterSeconds: 0.1 });
    simulations.push(simulation);
    return simulation;
  }

  type Listed = { id: string; hostname: string; status: string };
  async function devicesOf(session: ApiSession, orgId: string): Promise<Listed[]> {
    return (await session.request<{ devices: Listed[] }>('GET', `/devices?orgIds=${orgId}&limit=200`)).devices;
  }

  /** The built CLI (`npm test` builds first), as `npm run simulate` runs it, with only the given environment. */
  function runCli(args: string[], env: Record<string, string> = {}) {
    const child = spawn(process.execPath, [path.join(projectRoot, 'dist/src/scripts/simulate.js'), ...args], {
      env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    return { child, output: () => output, exited };
  }

  test('the bootstrap admin gets the "Simulated fleet" partner, organization and a key; a second run reuses them, rotates the key and re-enrolls the same devices', async () => {
    const session = await admin();
    const first = await prepareFleet(session);
    expect(first).toEqual({
      orgId: expect.any(String),
      orgName: FLEET_NAME,
      partnerId: expect.any(String),
      enrollmentKey: expect.stringMatching(/^enr_/),
      enrollmentKeyId: expect.any(String),
      created: { partner: true, organization: true, key: true },
    });
    const simulation = await simulateWith(first.enrollmentKey, 'fleet');
    expect(simulation.agents.map((a) => a.orgId)).toEqual([first.orgId, first.orgId]);
    await eventually(() => simulation.agents.every((a) => a.heartbeats >= 1), 10_000, 'a heartbeat from each agent');
    expect((await devicesOf(session, first.orgId)).map((d) => [d.hostname, d.status])).toEqual([
      ['fleet-001', 'online'],
      ['fleet-002', 'online'],
    ]);
    await simulation.stop();

    const second = await prepareFleet(await admin());
    expect(second).toMatchObject({ orgId: first.orgId, partnerId: first.partnerId, enrollmentKeyId: first.enrollmentKeyId, created: { partner: false, organization: false, key: false } });
    expect(second.enrollmentKey).not.toBe(first.enrollmentKey);
    // The rotated key's previous value no longer enrolls.
    await expect(startSimulation({ url: fleetApp.url, enrollmentKey: first.enrollmentKey, devices: 1, prefix: 'stale', intervalSeconds: 60 })).rejects.toThrow(
      /HTTP 401 UNAUTHENTICATED: Invalid, expired or exhausted enrollment key/,
    );
    const again = await simulateWith(second.enrollmentKey, 'fleet');
    expect(again.agents.map((a) => a.deviceId)).toEqual(simulation.agents.map((a) => a.deviceId));
    expect(await devicesOf(session, first.orgId)).toHaveLength(2);
    const [counts] = await sql(
      fleetApp,
      `select (select count(*)::int from partner where name = ?) as partners, (select count(*)::int from organization where name = ?) as orgs,
              (select count(*)::int from enrollment_key where org_id = ? and name = 'simulator' and expires_at is null and max_usage is null) as keys`,
      [FLEET_NAME, FLEET_NAME, first.orgId],
    );
    expect(counts).toEqual({ partners: 1, orgs: 1, keys: 1 });
    await again.stop();

    // A session whose access token ran out refreshes it before the next call.
    session.expire();
    expect((await devicesOf(session, first.orgId)).length).toBe(2);
  });

  test('a partner user gets the organization in their own partner; a refused login, MFA and an unreachable server are LoginErrors', async () => {
    const partner = await buildPartner(fleetApp);
    const partnerAdmin = await buildUser(fleetApp, { partnerId: partner.id, role: 'Partner Admin' });
    const simulated = await prepareFleet(await ApiSession.login(fleetApp.url, partnerAdmin.user.email, partnerAdmin.password));
    expect(simulated).toMatchObject({ orgName: FLEET_NAME, partnerId: partner.id, created: { partner: false, organization: true, key: true } });

    await expect(ApiSession.login(fleetApp.url, 'nobody@example.test', 'not the password')).rejects.toMatchObject({ reason: 'refused' });
    const withMfa = await buildUser(fleetApp, { role: 'Platform Admin' });
    await sql(fleetApp, 'update "user" set mfa_enabled = true where id = ?', [withMfa.user.id]);
    await expect(ApiSession.login(fleetApp.url, withMfa.user.email, withMfa.password)).rejects.toMatchObject({ reason: 'mfa', message: expect.stringContaining('multi-factor') });
    await expect(ApiSession.login('http://127.0.0.1:1', ADMIN_EMAIL, ADMIN_PASSWORD)).rejects.toMatchObject({ reason: 'unreachable' });
  });

  test('--watch prints a line per status change of the organization: new devices going online, stopped ones going offline', async () => {
    const session = await admin();
    const simulated = await prepareFleet(session);
    const lines: string[] = [];
    const before = fleetApp.subscriptions(DOMAIN_EVENT_TOPIC);
    const watch = watchDeviceStatus({ url: fleetApp.url, session, orgId: simulated.orgId, print: (line) => lines.push(line), report: (line) => lines.push(`report: ${line}`) });
    watches.push(watch);
    await watch.ready;
    await eventually(() => fleetApp.subscriptions(DOMAIN_EVENT_TOPIC) > before, 10_000, 'the subscription to be live');

    // Another organization's device changes go unseen.
    const other = await prepareFleet(session, { name: 'Another fleet' });
    const elsewhere = await simulateWith(other.enrollmentKey, 'elsewhere', 1);
    const prefix = `watch-${Date.now()}`;
    const simulation = await simulateWith(simulated.enrollmentKey, prefix);
    const seen = (line: string) => lines.some((l) => l.endsWith(line));
    await eventually(() => seen(`${prefix}-001 new → online`) && seen(`${prefix}-002 new → online`), 10_000, 'both devices online');
    await simulation.stop();
    await eventually(() => seen(`${prefix}-001 online → offline`) && seen(`${prefix}-002 online → offline`), 15_000, 'both devices offline');
    await elsewhere.stop();

    const mine = lines.filter((l) => l.includes(prefix));
    expect(mine).toHaveLength(4);
    for (const line of mine) expect(line).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z ${prefix}-00[12] (new → online|online → offline)$`));
    expect(lines.filter((l) => l.includes('elsewhere') || l.startsWith('report:'))).toEqual([]);
    await watch.stop();

    // A fixed token (--token) of a user who cannot see the organization: the subscription is refused.
    const outsider = await buildUser(fleetApp, { orgId: other.orgId, role: 'Organization Viewer' });
    const refused: string[] = [];
    const denied = watchDeviceStatus({ url: fleetApp.url, session: ApiSession.fromToken(fleetApp.url, outsider.token), orgId: simulated.orgId, print: (l) => refused.push(l), report: (l) => refused.push(l) });
    watches.push(denied);
    await denied.ready;
    await eventually(() => refused.length > 0, 10_000, 'the refusal');
    expect(refused).toEqual([expect.stringMatching(/watch stopped: NOT_FOUND: Organization not found$/)]);
  });

  test('the CLI without --key signs in from ADMIN_EMAIL/ADMIN_PASSWORD, reuses the organization, and with --watch prints its changes', async () => {
    const session = await admin();
    const { orgId } = await prepareFleet(session);
    const prefix = `cli-${Date.now()}`;
    const cli = runCli(['--url', fleetApp.url, '--devices', '2', '--interval', '0.3', '--prefix', prefix, '--watch', '--quiet'], { ADMIN_EMAIL, ADMIN_PASSWORD });
    try {
      await eventually(() => cli.output().includes('agents 2/2 running'), 30_000, 'the CLI to enroll its agents');
      expect(cli.output()).toContain(`Organization "${FLEET_NAME}" ${orgId} (reused); enrollment key "simulator" rotated to enr_`);
      expect(cli.output()).toContain(`deviceStatusChanged(orgId: "${orgId}") { deviceId hostname previousStatus status lastSeenAt }`);
      const device = (await devicesOf(session, orgId)).find((d) => d.hostname === `${prefix}-001`)!;
      await session.request('DELETE', `/devices/${device.id}`);
      await eventually(() => cli.output().includes(`${prefix}-001 online → decommissioned`), 10_000, 'the watch line');
    } finally {
      cli.child.kill('SIGTERM');
    }
    expect(await cli.exited).toBe(0);
  });

  test('the CLI without --key and without working credentials says how to pass a key instead', async () => {
    const refused = runCli(['--url', fleetApp.url], { ADMIN_EMAIL: 'nobody@example.test', ADMIN_PASSWORD: 'not the password' });
    expect(await refused.exited).toBe(1);
    expect(refused.output()).toContain(`Signing in as nobody@example.test at ${fleetApp.url} failed`);
    expect(refused.output()).toContain('npm run simulate -- --key <key>');

    const nothing = runCli(['--url', fleetApp.url]);
    expect(await nothing.exited).toBe(2);
    expect(nothing.output()).toMatch(/^Nothing to enroll with: pass --email and --password/);

    const watchWithKey = runCli(['--url', fleetApp.url, '--key', 'enr_x_y', '--watch']);
    expect(await watchWithKey.exited).toBe(2);
    expect(watchWithKey.output()).toMatch(/^--watch subscribes as a user/);
  });
});
