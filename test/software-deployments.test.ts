import { RequestContext } from '../src/auth/context.js';
import { timeOutCommands } from '../src/services/devices/device-commands.js';
import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import { TestClock } from './support/clock.js';
import { auditOf, dueWorkTicked, sql, statementsOn } from './support/db.js';
import { agentCall, enroll, fleet, heartbeatCommands, reportCommandResult, type EnrolledAgent } from './support/devices.js';
import { eventually } from './support/eventually.js';
import { buildSite, buildUser, unique } from './support/factories.js';

const clock = new TestClock();
let app: TestApp;

beforeAll(async () => {
  app = await createTestApp({ start: { clock } });
});
afterAll(async () => {
  await app.stop();
});

type Api = ReturnType<typeof rest>;
type Result = { deviceId: string; hostname: string; status: string; reason: string | null; commandId: string | null; exitCode: number | null; error: string | null };

const installer = (osType: string) => ({ osType, url: `https://downloads.example.test/${osType}/app`, sha256: 'ab'.repeat(32), silentArgs: `--quiet-${osType}`, uninstallArgs: '--remove', detection: { type: 'file', path: `/opt/${osType}` } });

/**
 * An organization with a technician (software:*), a viewer (software:read), a package with a version
 * that has Windows and Linux installers only, and a mixed fleet: one Windows, one Linux, one macOS device.
 */
async function deploymentFleet() {
  const f = await fleet(app);
  const viewer = await buildUser(app, { orgId: f.org.id, role: 'Organization Viewer' });
  const win = await enroll(app, f.key, `a-win-${unique()}`, { osType: 'windows', osVersion: 'Windows 11' });
  const lin = await enroll(app, f.key, `b-lin-${unique()}`, { osType: 'linux' });
  const mac = await enroll(app, f.key, `c-mac-${unique()}`, { osType: 'macos', osVersion: 'macOS 14' });
  const entry = await f.api.post('/software/catalog', { name: `App ${unique()}`, vendor: 'Example', category: 'utility' });
  expect(entry.status).toBe(201);
  const version = await f.api.post(`/software/catalog/${entry.body.id}/versions`, { version: '2.1.0', installers: [installer('windows'), installer('linux')] });
  expect(version.status).toBe(201);
  return { ...f, viewer, reader: rest(app, viewer.as), win, lin, mac, catalogId: entry.body.id as string, versionId: version.body.id as string, name: entry.body.name as string };
}
type Fleet = Awaited<ReturnType<typeof deploymentFleet>>;

async function deploy(f: Fleet, fields: Record<string, unknown> = {}, agents: EnrolledAgent[] = [f.win, f.lin, f.mac]) {
  const res = await f.api.post('/software/deployments', { catalogId: f.catalogId, versionId: f.versionId, action: 'install', targets: { deviceIds: agents.map((a) => a.deviceId) }, ...fields });
  expect([res.status, res.body.message]).toEqual([201, undefined]);
  return res.body;
}

async function results(api: Api, id: string, query = ''): Promise<Result[]> {
  const res = await api.get(`/software/deployments/${id}/results${query}`);
  expect([res.status, res.body.message]).toEqual([200, undefined]);
  return res.body.data;
}
const resultOf = async (api: Api, id: string, agent: EnrolledAgent) => (await results(api, id)).find((r) => r.deviceId === agent.deviceId)!;
const statusOf = async (api: Api, id: string) => (await api.get(`/software/deployments/${id}`)).body.status as string;

const heartbeat = (agent: EnrolledAgent) => heartbeatCommands(app, agent);
const answer = (agent: EnrolledAgent, commandId: string, body: Record<string, unknown>) => reportCommandResult(app, agent, commandId, body);

const expectError = (res: { status: number; body: any }, status: number, code: string) => expect([res.status, res.body.code]).toEqual([status, code]);
const counts = (fields: Record<string, number>) => ({ pending: 0, downloading: 0, installing: 0, succeeded: 0, failed: 0, skipped: 0, cancelled: 0, ...fields });

describe('software deployments', () => {
  test('a mixed fleet: macOS is skipped (no installer), the others go downloading → installing → succeeded / failed, the deployment ends partial', async () => {
    const f = await deploymentFleet();
    const created = await deploy(f);
    expect(created).toEqual({
      id: expect.any(String),
      orgId: f.org.id,
      catalogId: f.catalogId,
      versionId: f.versionId,
      name: f.name,
      version: '2.1.0',
      action: 'install',
      targets: { siteIds: [], groupIds: [], deviceIds: [f.win.deviceId, f.lin.deviceId, f.mac.deviceId].sort() },
      schedule: { type: 'now', at: null },
      status: 'scheduled',
      counts: counts({ pending: 2, skipped: 1, total: 3 }),
      createdBy: f.tech.user.id,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
      completedAt: null,
    });
    const id = created.id;
    const listed = await results(f.reader, id);
    expect(listed.map((r) => [r.hostname, r.status])).toEqual([
      [expect.stringMatching(/^a-win/), 'pending'],
      [expect.stringMatching(/^b-lin/), 'pending'],
      [expect.stringMatching(/^c-mac/), 'skipped'],
    ]);
    expect(listed[2]).toMatchObject({ deviceId: f.mac.deviceId, reason: `${f.name} 2.1.0 has no installer for macos`, commandId: null, exitCode: null, error: null });
    expect(await heartbeat(f.mac)).toEqual([]);

    const [command] = await heartbeat(f.win);
    expect(command).toEqual({
      id: listed[0]!.commandId,
      type: 'install_software',
      payload: { deploymentId: id, name: f.name, version: '2.1.0', url: 'https://downloads.example.test/windows/app', sha256: 'ab'.repeat(32), silentArgs: '--quiet-windows', uninstallArgs: '--remove', detection: { type: 'file', path: '/opt/windows' } },
    });
    expect(await resultOf(f.reader, id, f.win)).toMatchObject({ status: 'downloading' });
    expect(await statusOf(f.reader, id)).toBe('running');
    await answer(f.win, command!.id, { status: 'running' });
    expect(await resultOf(f.reader, id, f.win)).toMatchObject({ status: 'installing' });
    expect((await sql(app, 'select status from device_command where id = ?', [command!.id]))[0].status).toBe('sent');
    await answer(f.win, command!.id, { status: 'completed', exitCode: 0, stdout: 'done' });
    expect(await resultOf(f.reader, id, f.win)).toMatchObject({ status: 'succeeded', exitCode: 0, error: null });
    expect((await f.reader.get(`/software/inventory/${f.win.deviceId}`)).body.data).toEqual([expect.objectContaining({ name: f.name, version: '2.1.0' })]);
    expect(await statusOf(f.reader, id)).toBe('running');

    const [linCommand] = await heartbeat(f.lin);
    expect(linCommand!.payload).toMatchObject({ deploymentId: id, url: 'https://downloads.example.test/linux/app', silentArgs: '--quiet-linux' });
    await answer(f.lin, linCommand!.id, { status: 'failed', exitCode: 1603, stderr: 'Fatal error during installation\n' });
    expect(await resultOf(f.reader, id, f.lin)).toMatchObject({ status: 'failed', exitCode: 1603, error: 'Fatal error during installation' });

    const done = (await f.reader.get(`/software/deployments/${id}`)).body;
    expect(done).toMatchObject({ status: 'partial', counts: counts({ succeeded: 1, failed: 1, skipped: 1, total: 3 }), completedAt: expect.any(String) });
    expect((await results(f.reader, id, '?status=failed')).map((r) => r.deviceId)).toEqual([f.lin.deviceId]);
    const first = await f.reader.get(`/software/deployments/${id}/results?limit=2`);
    expect([first.body.data.length, first.body.nextCursor]).toEqual([2, expect.any(String)]);
    const rest2 = await f.reader.get(`/software/deployments/${id}/results?limit=2&cursor=${first.body.nextCursor}`);
    expect([rest2.body.data.map((r: Result) => r.deviceId), rest2.body.nextCursor]).toEqual([[f.mac.deviceId], null]);
    expect(await auditOf(app, id, ['action', 'org_id'])).toEqual([{ action: 'software_deployment.create', org_id: f.org.id }]);
  });

  test('end states: every device failing (one by timeout) is failed; every device succeeding is completed; the list filters', async () => {
    const f = await deploymentFleet();
    const failing = await deploy(f, {}, [f.win, f.lin]);
    const [winCommand] = await heartbeat(f.win);
    const [linCommand] = await heartbeat(f.lin);
    await answer(f.win, winCommand!.id, { status: 'failed', exitCode: 1, result: { error: 'checksum mismatch' } });
    expect(await resultOf(f.api, failing.id, f.win)).toMatchObject({ status: 'failed', exitCode: 1, error: 'checksum mismatch' });
    expect(await statusOf(f.api, failing.id)).toBe('running');
    // The linux agent never answers: its command times out (the devices domain's sweep), the result fails.
    clock.advance(3_601_000);
    await timeOutCommands(RequestContext.system(app.server.runtime, 'test'));
    await eventually(async () => (await resultOf(f.api, failing.id, f.lin)).status === 'failed', 15_000, 'the timed-out result');
    expect(await resultOf(f.api, failing.id, f.lin)).toMatchObject({ status: 'failed', error: 'The command timed out', exitCode: null });
    expect((await f.api.get(`/software/deployments/${failing.id}`)).body).toMatchObject({ status: 'failed', counts: counts({ failed: 2, total: 2 }) });
    // A late answer changes nothing.
    await answer(f.lin, linCommand!.id, { status: 'completed', exitCode: 0 });
    expect((await resultOf(f.api, failing.id, f.lin)).status).toBe('failed');

    const passing = await deploy(f, {}, [f.win, f.mac]);
    const [again] = await heartbeat(f.win);
    await answer(f.win, again!.id, { status: 'completed', exitCode: 0 });
    expect((await f.api.get(`/software/deployments/${passing.id}`)).body).toMatchObject({ status: 'completed', counts: counts({ succeeded: 1, skipped: 1, total: 2 }) });

    const page = await f.reader.get(`/software/deployments?catalogId=${f.catalogId}`);
    expect(page.body.data.map((d: { id: string }) => d.id)).toEqual([passing.id, failing.id]);
    expect((await f.reader.get(`/software/deployments?status=failed&orgId=${f.org.id}`)).body.data.map((d: { id: string }) => d.id)).toEqual([failing.id]);
    const one = await f.reader.get('/software/deployments?limit=1');
    expect([one.body.data.map((d: { id: string }) => d.id), one.body.nextCursor]).toEqual([[passing.id], expect.any(String)]);
  });

  test('an `at` schedule queues nothing until the service clock passes it; an instant in the past is refused', async () => {
    const f = await deploymentFleet();
    expectError(await f.api.post('/software/deployments', { catalogId: f.catalogId, versionId: f.versionId, action: 'install', targets: { deviceIds: [f.lin.deviceId] }, schedule: { type: 'at', at: new Date(clock.now().getTime() - 60_000).toISOString() } }), 400, 'VALIDATION_ERROR');
    expectError(await f.api.post('/software/deployments', { catalogId: f.catalogId, versionId: f.versionId, action: 'install', targets: { deviceIds: [f.lin.deviceId] }, schedule: { type: 'at' } }), 400, 'VALIDATION_ERROR');
    const at = new Date(clock.now().getTime() + 3_600_000).toISOString();
    const created = await deploy(f, { schedule: { type: 'at', at } }, [f.lin]);
    expect(created).toMatchObject({ status: 'scheduled', schedule: { type: 'at', at }, counts: counts({ pending: 1, total: 1 }) });
    await dueWorkTicked(app);
    expect(await resultOf(f.api, created.id, f.lin)).toMatchObject({ status: 'pending', commandId: null });
    expect(await heartbeat(f.lin)).toEqual([]);
    clock.advance(3_600_000 + 1000);
    await eventually(async () => (await resultOf(f.api, created.id, f.lin)).commandId !== null, 15_000, 'the command to be queued');
    const [command] = await heartbeat(f.lin);
    expect(command).toMatchObject({ type: 'install_software', payload: { deploymentId: created.id } });
    await answer(f.lin, command!.id, { status: 'completed', exitCode: 0 });
    expect(await statusOf(f.api, created.id)).toBe('completed');
  });

  test('a maintenance_window schedule sends each device its command once it shows status maintenance', async () => {
    const f = await deploymentFleet();
    const created = await deploy(f, { schedule: { type: 'maintenance_window' } }, [f.win, f.lin]);
    expect(created).toMatchObject({ status: 'scheduled', schedule: { type: 'maintenance_window', at: null }, counts: counts({ pending: 2, total: 2 }) });
    await dueWorkTicked(app);
    expect(await heartbeat(f.lin)).toEqual([]);

    const startsAt = new Date(clock.now().getTime() + 86_400_000).toISOString().slice(0, 19);
    const window = await f.api.post('/maintenance/windows', { name: `Window ${unique()}`, timezone: 'UTC', startsAt, durationMinutes: 60, recurrence: { type: 'once' }, targets: { deviceIds: [f.lin.deviceId] } });
    expect([window.status, window.body.message]).toEqual([201, undefined]);
    const occurrences = await f.api.get(`/maintenance/windows/${window.body.id}/occurrences?from=${clock.now().toISOString()}&to=${new Date(clock.now().getTime() + 2 * 86_400_000).toISOString()}`);
    expect((await f.api.post(`/maintenance/occurrences/${occurrences.body.data[0].id}/start`)).status).toBe(200);
    await eventually(async () => (await f.api.get(`/devices/${f.lin.deviceId}`)).body.status === 'maintenance', 15_000, 'the device in maintenance');

    await eventually(async () => (await resultOf(f.api, created.id, f.lin)).commandId !== null, 15_000, 'the command of the device in maintenance');
    const [command] = await heartbeat(f.lin);
    expect(command).toMatchObject({ type: 'install_software', payload: { deploymentId: created.id } });
    expect(await resultOf(f.api, created.id, f.win)).toMatchObject({ status: 'pending', commandId: null });
    expect(await heartbeat(f.win)).toEqual([]);
    expect(await statusOf(f.api, created.id)).toBe('running');
  });

  test('cancel: pending devices are cancelled and never get their command, one already handed out still reports; a second cancel is 409', async () => {
    const f = await deploymentFleet();
    const other = await enroll(app, f.key, `d-lin-${unique()}`, { osType: 'linux' });
    const created = await deploy(f, {}, [f.win, f.lin, f.mac, other]);
    const [taken] = await heartbeat(f.win);
    expectError(await f.reader.post(`/software/deployments/${created.id}/cancel`, {}), 403, 'FORBIDDEN');

    const cancelled = await f.api.post(`/software/deployments/${created.id}/cancel`, {});
    expect([cancelled.status, cancelled.body.status, cancelled.body.completedAt]).toEqual([200, 'cancelled', expect.any(String)]);
    expect(cancelled.body.counts).toEqual(counts({ downloading: 1, cancelled: 2, skipped: 1, total: 4 }));
    expect(await resultOf(f.api, created.id, f.lin)).toMatchObject({ status: 'cancelled', reason: 'The deployment was cancelled' });
    expect(await heartbeat(f.lin)).toEqual([]);
    expect(await heartbeat(other)).toEqual([]);
    const commands = await sql(app, `select status from device_command where payload->>'deploymentId' = ? and device_id in (?, ?)`, [created.id, f.lin.deviceId, other.deviceId]);
    expect(commands.map((c) => c.status)).toEqual(['cancelled', 'cancelled']);
    expectError(await f.api.post(`/software/deployments/${created.id}/cancel`, {}), 409, 'CONFLICT');

    await answer(f.win, taken!.id, { status: 'completed', exitCode: 0 });
    expect((await f.api.get(`/software/deployments/${created.id}`)).body).toMatchObject({ status: 'cancelled', counts: counts({ succeeded: 1, cancelled: 2, skipped: 1, total: 4 }) });
    expect(await auditOf(app, created.id, ['action'])).toEqual([{ action: 'software_deployment.create' }, { action: 'software_deployment.cancel' }]);

    const finished = await deploy(f, {}, [f.mac]);
    expect(finished.status).toBe('completed');
    expectError(await f.api.post(`/software/deployments/${finished.id}/cancel`, {}), 409, 'CONFLICT');
  });

  test('uninstall: the agent gets uninstall_software; a completed one removes the item from the device’s inventory', async () => {
    const f = await deploymentFleet();
    const reported = await agentCall(app, f.lin, '/inventory', { software: [{ name: f.name, version: '2.1.0' }, { name: 'curl', version: '8.5.0' }] });
    expect(reported.status).toBe(200);
    const created = await deploy(f, { action: 'uninstall' }, [f.lin]);
    const [command] = await heartbeat(f.lin);
    expect(command).toMatchObject({ type: 'uninstall_software', payload: { deploymentId: created.id, name: f.name, version: '2.1.0', uninstallArgs: '--remove' } });
    await answer(f.lin, command!.id, { status: 'running' });
    await answer(f.lin, command!.id, { status: 'completed', exitCode: 0 });
    expect((await f.api.get(`/software/deployments/${created.id}`)).body).toMatchObject({ action: 'uninstall', status: 'completed' });
    expect((await f.api.get(`/software/inventory/${f.lin.deviceId}`)).body.data.map((s: { name: string }) => s.name)).toEqual(['curl']);
  });

  test('validation: unknown enums and fields are 400; another organization’s package, version or devices are 404; a version of another package is 404', async () => {
    const f = await deploymentFleet();
    const base = { catalogId: f.catalogId, versionId: f.versionId, action: 'install', targets: { deviceIds: [f.lin.deviceId] } };
    for (const body of [{ ...base, action: 'reinstall' }, { ...base, schedule: { type: 'weekly' } }, { ...base, targets: { tags: ['x'] } }, { ...base, catalogId: 'nope' }, { ...base, extra: 1 }]) {
      expectError(await f.api.post('/software/deployments', body), 400, 'VALIDATION_ERROR');
    }
    expectError(await f.api.get('/software/deployments?status=done'), 400, 'VALIDATION_ERROR');
    const created = await deploy(f, {}, [f.mac]);
    expectError(await f.api.get(`/software/deployments/${created.id}/results?status=done`), 400, 'VALIDATION_ERROR');

    const them = await deploymentFleet();
    expectError(await f.api.post('/software/deployments', { ...base, catalogId: them.catalogId, versionId: them.versionId }), 404, 'NOT_FOUND');
    expectError(await f.api.post('/software/deployments', { ...base, versionId: them.versionId }), 404, 'NOT_FOUND');
    expectError(await f.api.post('/software/deployments', { ...base, targets: { deviceIds: [them.lin.deviceId] } }), 404, 'NOT_FOUND');
    expectError(await f.api.post('/software/deployments', { ...base, orgId: them.org.id }), 404, 'NOT_FOUND');
    const second = await f.api.post(`/software/catalog`, { name: `Other ${unique()}`, vendor: 'Example', category: 'utility' });
    expectError(await f.api.post('/software/deployments', { ...base, catalogId: second.body.id }), 404, 'NOT_FOUND');
  });

  test('viewers read but do not write (403); another organization’s deployment is 404 on every route, REST and GraphQL', async () => {
    const f = await deploymentFleet();
    const them = await deploymentFleet();
    const theirs = await deploy(them, {}, [them.lin]);
    expectError(await f.reader.post('/software/deployments', { catalogId: f.catalogId, versionId: f.versionId, action: 'install', targets: {} }), 403, 'FORBIDDEN');
    expect((await f.reader.get('/software/deployments')).status).toBe(200);

    for (const res of [
      await f.api.get(`/software/deployments/${theirs.id}`),
      await f.api.get(`/software/deployments/${theirs.id}/results`),
      await f.api.post(`/software/deployments/${theirs.id}/cancel`, {}),
      await f.reader.get(`/software/deployments/${theirs.id}`),
    ]) {
      expectError(res, 404, 'NOT_FOUND');
    }
    expectError(await f.api.get(`/software/deployments?orgId=${them.org.id}`), 404, 'NOT_FOUND');
    expect((await f.api.get('/software/deployments')).body.data.map((d: { id: string }) => d.id)).not.toContain(theirs.id);

    const queries = [
      ['query($id: ID!) { softwareDeployment(id: $id) { id } }', { id: theirs.id }],
      ['query($id: ID!) { softwareDeploymentResults(deploymentId: $id) { totalCount } }', { id: theirs.id }],
      ['mutation($id: ID!) { cancelSoftwareDeployment(id: $id) { id } }', { id: theirs.id }],
      [
        'mutation($input: CreateSoftwareDeploymentInput!) { createSoftwareDeployment(input: $input) { id } }',
        { input: { catalogId: them.catalogId, versionId: them.versionId, action: 'install', targets: { deviceIds: [them.lin.deviceId] } } },
      ],
    ] as const;
    for (const [query, variables] of queries) {
      const res = await gql(app, f.tech.as, query, variables);
      expect(res.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    }
    expect((await gql(app, f.tech.as, '{ softwareDeployments { edges { node { id } } } }')).body.data!.softwareDeployments.edges).toEqual([]);
    expect((await gql(app, f.viewer.as, 'mutation($id: ID!) { cancelSoftwareDeployment(id: $id) { id } }', { id: theirs.id })).body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });

  test('GraphQL: create, read, list the results and cancel, as over REST', async () => {
    const f = await deploymentFleet();
    const created = await gql(app, f.tech.as, 'mutation($input: CreateSoftwareDeploymentInput!) { createSoftwareDeployment(input: $input) { id status action schedule { type at } counts { pending skipped total } } }', {
      input: { catalogId: f.catalogId, versionId: f.versionId, action: 'install', targets: { deviceIds: [f.lin.deviceId, f.mac.deviceId] }, schedule: { type: 'now' } },
    });
    expect(created.body.errors).toBeUndefined();
    const deployment = created.body.data.createSoftwareDeployment;
    expect(deployment).toEqual({ id: expect.any(String), status: 'scheduled', action: 'install', schedule: { type: 'now', at: null }, counts: { pending: 1, skipped: 1, total: 2 } });
    const bad = await gql(app, f.tech.as, 'mutation($input: CreateSoftwareDeploymentInput!) { createSoftwareDeployment(input: $input) { id } }', {
      input: { catalogId: f.catalogId, versionId: f.versionId, action: 'reinstall', targets: {} },
    });
    expect(bad.body.errors?.[0]?.extensions?.code).toEqual(expect.stringMatching(/BAD_USER_INPUT|VALIDATION_ERROR/));

    const read = await gql(
      app,
      f.viewer.as,
      `query($id: ID!) {
        softwareDeployment(id: $id) { id status name version }
        softwareDeploymentResults(deploymentId: $id, first: 1) { totalCount edges { node { deviceId hostname status reason } } pageInfo { hasNextPage endCursor } }
        softwareDeployments(catalogId: "${f.catalogId}") { totalCount edges { node { id } } }
      }`,
      { id: deployment.id },
    );
    expect(read.body.errors).toBeUndefined();
    expect(read.body.data.softwareDeployment).toEqual({ id: deployment.id, status: 'scheduled', name: f.name, version: '2.1.0' });
    expect(read.body.data.softwareDeploymentResults).toMatchObject({ totalCount: 2, edges: [{ node: { deviceId: f.lin.deviceId, status: 'pending', reason: null } }], pageInfo: { hasNextPage: true } });
    const after = await gql(app, f.viewer.as, 'query($id: ID!, $after: String) { softwareDeploymentResults(deploymentId: $id, after: $after) { edges { node { deviceId status } } } }', {
      id: deployment.id,
      after: read.body.data.softwareDeploymentResults.pageInfo.endCursor,
    });
    expect(after.body.data.softwareDeploymentResults.edges).toEqual([{ node: { deviceId: f.mac.deviceId, status: 'skipped' } }]);
    expect(read.body.data.softwareDeployments).toEqual({ totalCount: 1, edges: [{ node: { id: deployment.id } }] });

    expect((await gql(app, f.viewer.as, 'mutation($id: ID!) { cancelSoftwareDeployment(id: $id) { id } }', { id: deployment.id })).body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const cancelled = await gql(app, f.tech.as, 'mutation($id: ID!) { cancelSoftwareDeployment(id: $id) { status counts { cancelled } } }', { id: deployment.id });
    expect(cancelled.body.data.cancelSoftwareDeployment).toEqual({ status: 'cancelled', counts: { cancelled: 1 } });
    expect((await gql(app, f.tech.as, 'mutation($id: ID!) { cancelSoftwareDeployment(id: $id) { status } }', { id: deployment.id })).body.errors?.[0]?.extensions?.code).toBe('CONFLICT');
  });
  test('a user limited to a site deploys only to their site’s devices (the whole organization is 403, another site 404) and sees only those', async () => {
    const f = await deploymentFleet();
    const [siteA, siteB] = [await buildSite(app, f.org.id), await buildSite(app, f.org.id)];
    await sql(app, 'update device set site_id = ? where id in (?, ?)', [siteA.id, f.win.deviceId, f.mac.deviceId]);
    await sql(app, 'update device set site_id = ? where id = ?', [siteB.id, f.lin.deviceId]);
    const everywhere = await deploy(f, {}, [f.win, f.lin, f.mac]);
    const limited = await buildUser(app, { orgId: f.org.id, role: 'Organization Technician' });
    await sql(app, 'update membership set site_ids = ?::jsonb where id = ?', [JSON.stringify([siteA.id]), limited.membership.id]);
    const theirs = rest(app, limited.as);

    const base = { catalogId: f.catalogId, versionId: f.versionId, action: 'install' };
    expectError(await theirs.post('/software/deployments', { ...base, targets: {} }), 403, 'FORBIDDEN');
    expectError(await theirs.post('/software/deployments', { ...base, targets: { deviceIds: [f.lin.deviceId] } }), 404, 'NOT_FOUND');
    const mine = await theirs.post('/software/deployments', { ...base, targets: { siteIds: [siteA.id] } });
    expect([mine.status, mine.body.counts]).toEqual([201, counts({ pending: 1, skipped: 1, total: 2 })]);

    expect((await theirs.get(`/software/deployments/${everywhere.id}`)).body.counts).toEqual(counts({ pending: 1, skipped: 1, total: 2 }));
    expect((await results(theirs, everywhere.id)).map((r) => r.deviceId)).toEqual([f.win.deviceId, f.mac.deviceId]);
    const onlyB = await deploy(f, {}, [f.lin]);
    expectError(await theirs.get(`/software/deployments/${onlyB.id}`), 404, 'NOT_FOUND');
    expect((await theirs.get('/software/deployments')).body.data.map((d: { id: string }) => d.id)).toEqual([mine.body.id, everywhere.id]);
    // They cancel only deployments within their site.
    expectError(await theirs.post(`/software/deployments/${everywhere.id}/cancel`), 404, 'NOT_FOUND');
    expect((await f.api.get(`/software/deployments/${everywhere.id}`)).body.status).not.toBe('cancelled');
    expect((await theirs.post(`/software/deployments/${mine.body.id}/cancel`)).body.status).toBe('cancelled');
  });

  test('install_software commands other domains queue (a third-party catalog test) are not a deployment’s: its results stay as they were', async () => {
    const f = await deploymentFleet();
    const platform = rest(app, (await buildUser(app, { role: 'Platform Admin' })).as);
    const entry = await platform.post('/third-party-catalog', { name: `App ${unique()}`, vendor: 'Example', versions: [{ version: '1.0.0', installerUrl: 'https://downloads.example.test/app.msi', sha256: 'a'.repeat(64), detection: { type: 'package', name: 'app' } }] });
    expect(entry.status).toBe(201);
    const created = await deploy(f, {}, [f.win]);
    expect((await platform.post(`/third-party-catalog/${entry.body.id}/test`, { version: '1.0.0', deviceId: f.win.deviceId })).status).toBe(202);
    const commands = await heartbeat(f.win);
    expect(commands.map((c) => [c.type, c.payload.deploymentId ?? null])).toEqual([
      ['install_software', created.id],
      ['install_software', null],
    ]);
    const test = commands[1]!;
    await answer(f.win, test.id, { status: 'running' });
    await answer(f.win, test.id, { status: 'failed', exitCode: 1 });
    expect(await resultOf(f.api, created.id, f.win)).toMatchObject({ status: 'downloading', commandId: commands[0]!.id });
    expect((await platform.get(`/third-party-catalog/${entry.body.id}`)).body.lastTest).toMatchObject({ status: 'failed' });
    await answer(f.win, commands[0]!.id, { status: 'completed', exitCode: 0 });
    expect(await statusOf(f.api, created.id)).toBe('completed');
  });
  test('results are written in one statement and lists read them in one, however many devices and deployments', async () => {
    const f = await deploymentFleet();
    const more = [await enroll(app, f.key, `e-${unique()}`), await enroll(app, f.key, `f-${unique()}`)];
    const later = { schedule: { type: 'at', at: new Date(clock.now().getTime() + 86_400_000).toISOString() } };
    const one = await statementsOn(app, 'software_deployment_result', () => deploy(f, later, [f.lin]));
    const five = await statementsOn(app, 'software_deployment_result', () => deploy(f, later, [f.win, f.lin, f.mac, ...more]));
    expect(five.result.counts).toEqual(counts({ pending: 4, skipped: 1, total: 5 }));
    expect(five.statements).toBe(one.statements);
    const inserts = await statementsOn(app, 'insert into software_deployment_result', () => deploy(f, later, [f.win, f.lin, f.mac, ...more]));
    expect(inserts.statements).toBe(1);

    const listOne = await statementsOn(app, 'software_deployment_result', () => f.api.get('/software/deployments?limit=1'));
    const listAll = await statementsOn(app, 'software_deployment_result', () => f.api.get('/software/deployments'));
    expect([listAll.result.body.data.length, listAll.statements]).toEqual([3, listOne.statements]);
  });
});
