import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest, type As } from './support/clients.js';
import { TestClock } from './support/clock.js';
import { dueWorkTicked, sql } from './support/db.js';
import { agentCall, enroll, fleet, heartbeatCommands, reportCommandResult, type EnrolledAgent } from './support/devices.js';
import { eventually } from './support/eventually.js';
import { buildSite, buildUser, unique } from './support/factories.js';
import { patchedFleet as fleetWithPatches, reportPatches } from './support/patches.js';

const clock = new TestClock();
let app: TestApp;

beforeAll(async () => {
  app = await createTestApp({ start: { clock } });
});
afterAll(async () => {
  await app.stop();
});

type Api = ReturnType<typeof rest>;
type Job = { id: string; orgId: string; policyId: string | null; status: string; rebootBehavior: string; devices: { deviceId: string; status: string; patchIds: string[]; commandId: string | null }[]; completedAt: string | null };

const patch = (fields: Record<string, unknown> = {}) => ({ source: 'microsoft', externalId: `KB${unique()}`, title: 'Cumulative update', status: 'missing', ...fields });
const report = (agent: EnrolledAgent, patches: unknown[]) => reportPatches(app, agent, patches);
const patchedFleet = () => fleetWithPatches(app);
const eventsOf = (type: string, orgId: string) => sql(app, `select data from outbox_event where type = ? and org_id = ? order by created_at, id`, [type, orgId]);

/** The organization's patch ids by externalId. */
async function patchIds(api: Api): Promise<Record<string, string>> {
  const res = await api.get('/patches');
  expect(res.status).toBe(200);
  return Object.fromEntries(res.body.data.map((p: any) => [p.externalId, p.id]));
}

async function approve(api: Api, id: string): Promise<void> {
  const res = await api.post(`/patches/${id}/approve`, {});
  expect([res.status, res.body.approvalStatus]).toEqual([200, 'approved']);
}

async function createPolicy(api: Api, fields: Record<string, unknown> = {}): Promise<string> {
  const res = await api.post('/patch-policies', { name: `Install ${unique()}`, targets: {}, autoApprove: [], schedule: { type: 'immediate' }, rebootBehavior: 'if_required', ...fields });
  expect([res.status, res.body.message]).toEqual([201, undefined]);
  return res.body.id;
}

async function jobs(api: Api, query = ''): Promise<Job[]> {
  const res = await api.get(`/patches/jobs${query}`);
  expect([res.status, res.body.message]).toEqual([200, undefined]);
  return res.body.data;
}

const deviceOf = (job: Job, deviceId: string) => job.devices.find((d) => d.deviceId === deviceId)!;

const heartbeat = (agent: EnrolledAgent) => heartbeatCommands(app, agent);
const answer = (agent: EnrolledAgent, commandId: string, body: Record<string, unknown>) => reportCommandResult(app, agent, commandId, body);
const aTickHasRun = () => dueWorkTicked(app);

const statusOn = async (api: Api, deviceId: string) =>
  Object.fromEntries((await api.get(`/patches?deviceId=${deviceId}`)).body.data.map((p: any) => [p.externalId, p.deviceStatus]));

describe('install jobs of immediate policies', () => {
  test('a policy made with approved missing patches starts a job; agents get install_patches; their results set statuses, publish events and end the job completed', async () => {
    const { org, api, viewer, tech, a, b } = await patchedFleet();
    const curl = patch({ source: 'linux', externalId: 'curl-8.5.0', packageName: 'curl', version: '8.5.0' });
    const kb = patch({ externalId: 'KB5030211', kbNumber: 'KB5030211' });
    const declined = patch();
    await report(a, [curl, kb, declined, patch({ externalId: 'never-approved' }), patch({ externalId: 'done', status: 'installed' })]);
    await report(b, [kb]);
    const ids = await patchIds(api);
    await approve(api, ids['curl-8.5.0']!);
    await approve(api, ids.KB5030211!);
    // Approved patches wait for a policy: none yet, no job.
    expect(await jobs(api)).toEqual([]);

    const policyId = await createPolicy(api);
    const [job] = await jobs(api);
    expect(job).toMatchObject({ orgId: org.id, policyId, status: 'scheduled', rebootBehavior: 'if_required', completedAt: null });
    expect(deviceOf(job!, a.deviceId)).toMatchObject({ status: 'pending', patchIds: [ids['curl-8.5.0'], ids.KB5030211].sort() });
    expect(deviceOf(job!, b.deviceId)).toMatchObject({ status: 'pending', patchIds: [ids.KB5030211] });

    const [command] = await heartbeat(a);
    expect(command).toEqual({
      id: deviceOf(job!, a.deviceId).commandId,
      type: 'install_patches',
      payload: {
        jobId: job!.id,
        rebootBehavior: 'if_required',
        patches: [
          { patchId: ids['curl-8.5.0'], source: 'linux', externalId: 'curl-8.5.0', packageName: 'curl', version: '8.5.0' },
          { patchId: ids.KB5030211, source: 'microsoft', externalId: 'KB5030211', packageName: null, version: null },
        ].sort((x, y) => x.patchId!.localeCompare(y.patchId!)),
      },
    });
    const running = (await jobs(api))[0]!;
    expect([running.status, deviceOf(running, a.deviceId).status, deviceOf(running, b.deviceId).status]).toEqual(['running', 'sent', 'pending']);

    // A patch the command did not name is not the agent's to set.
    const res = await agentCall(app, a, `/commands/${command!.id}/result`, {
      status: 'completed',
      result: { patches: [{ patchId: ids['curl-8.5.0'], status: 'installed' }, { patchId: ids.KB5030211, status: 'pending_reboot' }, { patchId: ids['never-approved'], status: 'installed' }] },
    });
    expect(res.status).toBe(200);
    expect(await statusOn(api, a.deviceId)).toMatchObject({ 'curl-8.5.0': 'installed', KB5030211: 'pending_reboot', 'never-approved': 'missing' });
    expect(deviceOf((await jobs(api))[0]!, a.deviceId).status).toBe('completed');
    expect((await jobs(api))[0]!.status).toBe('running');

    const [forB] = await heartbeat(b);
    expect(forB!.payload.patches.map((p: any) => p.patchId)).toEqual([ids.KB5030211]);
    expect((await agentCall(app, b, `/commands/${forB!.id}/result`, { status: 'completed', result: { patches: [{ patchId: ids.KB5030211, status: 'installed' }] } })).status).toBe(200);
    const done = (await jobs(api))[0]!;
    expect([done.status, typeof done.completedAt]).toEqual(['completed', 'string']);

    const installed = (await eventsOf('patch.installed', org.id)).map((e) => e.data);
    expect(installed).toEqual(
      expect.arrayContaining([
        { patchId: ids['curl-8.5.0'], deviceId: a.deviceId, jobId: job!.id },
        { patchId: ids.KB5030211, deviceId: a.deviceId, jobId: job!.id },
        { patchId: ids.KB5030211, deviceId: b.deviceId, jobId: job!.id },
      ]),
    );
    expect(installed).toHaveLength(3);
    expect(await eventsOf('patch.failed', org.id)).toEqual([]);

    // Filters, the viewer's read, GraphQL alike.
    expect((await jobs(rest(app, viewer.as), `?policyId=${policyId}&deviceId=${b.deviceId}&status=completed`)).map((j) => j.id)).toEqual([job!.id]);
    expect(await jobs(api, '?status=running')).toEqual([]);
    const viaGraphql = await gql(app, viewer.as, `query($policyId: ID, $deviceId: ID) { patchJobs(policyId: $policyId, deviceId: $deviceId, first: 5) { totalCount edges { node { id policyId status devices { deviceId status patchIds } } } } }`, {
      policyId,
      deviceId: a.deviceId,
    });
    expect(viaGraphql.body.errors).toBeUndefined();
    expect(viaGraphql.body.data.patchJobs.totalCount).toBe(1);
    expect(viaGraphql.body.data.patchJobs.edges[0].node).toEqual({ id: job!.id, policyId, status: 'completed', devices: done.devices.map(({ deviceId, status, patchIds }) => ({ deviceId, status, patchIds })) });
    // No one queues the command by hand.
    const byHand = await rest(app, tech.as).post(`/devices/${a.deviceId}/commands`, { type: 'install_patches', payload: {} });
    expect([byHand.status, byHand.body.code]).toEqual([400, 'VALIDATION_ERROR']);
  });

  test('a failed patch fails its device (partial job); a trigger meanwhile runs the policy again once the job ends; a failed command fails it; never two unfinished jobs', async () => {
    const { org, api, a, b } = await patchedFleet();
    await report(a, [patch({ externalId: 'one' }), patch({ externalId: 'two' })]);
    await report(b, [patch({ externalId: 'one' })]);
    const ids = await patchIds(api);
    const policyId = await createPolicy(api, { rebootBehavior: 'never' });
    expect(await jobs(api)).toEqual([]);

    await approve(api, ids.one!);
    const [first] = await jobs(api);
    expect(first!.devices.map((d) => [d.deviceId, d.patchIds]).sort()).toEqual([[a.deviceId, [ids.one]], [b.deviceId, [ids.one]]].sort());
    // Approved while the job is under way: no second job.
    await approve(api, ids.two!);
    expect(await jobs(api)).toHaveLength(1);
    await report(a, [patch({ externalId: 'one' }), patch({ externalId: 'two' })]);
    expect(await jobs(api)).toHaveLength(1);

    const [forA] = await heartbeat(a);
    // A malformed item is left out; the others still count.
    await answer(a, forA!.id, { status: 'completed', result: { patches: [{ patchId: 'KB-not-an-id', status: 'exploded' }, { patchId: ids.one, status: 'failed' }] } });
    const [forB] = await heartbeat(b);
    await answer(b, forB!.id, { status: 'completed', result: { patches: [{ patchId: ids.one, status: 'installed' }] } });
    const [second, ended] = await jobs(api, `?policyId=${policyId}`);
    expect([ended!.id, ended!.status, deviceOf(ended!, a.deviceId).status, deviceOf(ended!, b.deviceId).status]).toEqual([first!.id, 'partial', 'failed', 'completed']);
    expect((await eventsOf('patch.failed', org.id)).map((e) => e.data)).toEqual([{ patchId: ids.one, deviceId: a.deviceId, jobId: first!.id }]);
    expect(await statusOn(api, a.deviceId)).toEqual({ one: 'failed', two: 'missing' });

    // The policy ran again: `two` for a (b has nothing left to install); its command fails: the job fails.
    expect(second!.devices.map((d) => [d.deviceId, d.patchIds, d.status])).toEqual([[a.deviceId, [ids.two], 'pending']]);
    const [again] = await heartbeat(a);
    expect(again!.payload).toMatchObject({ jobId: second!.id, rebootBehavior: 'never' });
    await answer(a, again!.id, { status: 'failed', stderr: 'dpkg lock held' });
    expect((await jobs(api, `?policyId=${policyId}`)).map((j) => j.status)).toEqual(['failed', 'partial']);
    expect(await statusOn(api, a.deviceId)).toEqual({ one: 'failed', two: 'missing' });
    const [row] = await sql(app, `select count(*)::int as n from patch_job where policy_id = ? and status in ('scheduled', 'running')`, [policyId]);
    expect(row.n).toBe(0);
  });

  test('a targeted device reporting a patch its policy approves gets a job; an untargeted one does not; a decommissioned device’s command fails its part', async () => {
    const { org, api, a, b } = await patchedFleet();
    const c = await enroll(app, (await api.post('/enrollment-keys', { name: `k-${unique()}` })).body.key);
    const policyId = await createPolicy(api, { targets: { deviceIds: [a.deviceId, c.deviceId] }, autoApprove: [{ severities: ['critical'] }] });
    const critical = patch({ severity: 'critical' });
    await report(b, [critical]);
    expect(await jobs(api)).toEqual([]);
    await report(a, [critical]);
    const [job] = await jobs(api);
    expect([job!.policyId, job!.devices.map((d) => d.deviceId)]).toEqual([policyId, [a.deviceId]]);
    // c reports it while the job is unfinished: the job stays alone and the policy runs again once it ends.
    await report(c, [critical]);
    expect(await jobs(api)).toHaveLength(1);
    const admin = await buildUser(app, { orgId: org.id, role: 'Organization Admin' });
    expect((await rest(app, admin.as).delete(`/devices/${a.deviceId}`)).status).toBe(204);
    const [next, failed] = await jobs(api);
    expect([failed!.id, failed!.status, deviceOf(failed!, a.deviceId).status]).toEqual([job!.id, 'failed', 'failed']);
    expect(next!.devices.map((d) => [d.deviceId, d.status])).toEqual([[c.deviceId, 'pending']]);
  });
});

describe('cron policies and maintenance', () => {
  test('a cron policy starts a job at each instant of its schedule (the due-work tick, by the clock), skipping an instant while its job is unfinished', async () => {
    const { api, a } = await patchedFleet();
    const tenMinutes = 600_000;
    const boundary = Math.ceil((Math.max(clock.now().getTime(), Date.now()) + 3_600_000) / tenMinutes) * tenMinutes;
    clock.set(new Date(boundary - 5 * 60_000));
    await report(a, [patch({ externalId: 'one' })]);
    const ids = await patchIds(api);
    await approve(api, ids.one!);
    const policyId = await createPolicy(api, { schedule: { type: 'cron', cron: '*/10 * * * *', timezone: 'Europe/Berlin' } });
    await aTickHasRun();
    expect(await jobs(api)).toEqual([]);

    clock.set(new Date(boundary + 5_000));
    const [job] = await eventually(async () => {
      const found = await jobs(api);
      return found.length > 0 && found;
    }, 15_000, 'the cron job');
    expect([job!.policyId, job!.devices.map((d) => [d.deviceId, d.patchIds])]).toEqual([policyId, [[a.deviceId, [ids.one]]]]);
    await aTickHasRun();
    expect(await jobs(api)).toHaveLength(1);

    // The next instant comes while the job is unfinished: skipped.
    clock.set(new Date(boundary + tenMinutes + 5_000));
    await aTickHasRun();
    await aTickHasRun();
    expect(await jobs(api)).toHaveLength(1);
    const [command] = await heartbeat(a);
    await answer(a, command!.id, { status: 'completed', result: { patches: [{ patchId: ids.one, status: 'installed' }] } });
    await report(a, [patch({ externalId: 'one', status: 'installed' }), patch({ externalId: 'two' })]);
    await approve(api, (await patchIds(api)).two!);
    // A cron policy installs at its instants only.
    expect(await jobs(api)).toHaveLength(1);
    clock.set(new Date(boundary + 2 * tenMinutes + 5_000));
    const [second] = await eventually(async () => {
      const found = await jobs(api);
      return found.length === 2 && found;
    }, 15_000, 'the second cron job');
    expect(second!.devices.map((d) => d.patchIds)).toEqual([[(await patchIds(api)).two]]);
  });

  test('a device under a maintenance window that defers patching waits (deferred, no command) until the occurrence ends, then gets its command', async () => {
    const { api, tech, a, b } = await patchedFleet();
    const startsAt = new Date(clock.now().getTime() + 86_400_000).toISOString().slice(0, 19);
    const window = await rest(app, tech.as).post('/maintenance/windows', {
      name: `Freeze ${unique()}`,
      timezone: 'UTC',
      startsAt,
      durationMinutes: 60,
      recurrence: { type: 'once' },
      targets: { deviceIds: [a.deviceId] },
      deferPatching: true,
    });
    expect([window.status, window.body.message]).toEqual([201, undefined]);
    const occurrences = await api.get(`/maintenance/windows/${window.body.id}/occurrences?from=${clock.now().toISOString()}&to=${new Date(clock.now().getTime() + 2 * 86_400_000).toISOString()}`);
    const occurrenceId = occurrences.body.data[0].id;
    expect((await api.post(`/maintenance/occurrences/${occurrenceId}/start`)).status).toBe(200);

    await report(a, [patch({ externalId: 'one' })]);
    await report(b, [patch({ externalId: 'one' })]);
    await approve(api, (await patchIds(api)).one!);
    await createPolicy(api);
    const [job] = await jobs(api);
    expect([deviceOf(job!, a.deviceId), deviceOf(job!, b.deviceId).status]).toEqual([expect.objectContaining({ status: 'deferred', commandId: null }), 'pending']);
    expect(await heartbeat(a)).toEqual([]);
    await aTickHasRun();
    expect(deviceOf((await jobs(api))[0]!, a.deviceId).status).toBe('deferred');

    expect((await api.post(`/maintenance/occurrences/${occurrenceId}/end`)).status).toBe(200);
    await eventually(async () => deviceOf((await jobs(api))[0]!, a.deviceId).status === 'pending', 15_000, 'the deferred device’s command');
    expect((await heartbeat(a)).map((c) => c.type)).toEqual(['install_patches']);
  });
});

describe('scans', () => {
  test('queue patch_scan on the devices the caller may scan (others skipped with the reason); the result is stored as the inventory’s patches part', async () => {
    const { org, api, viewer, tech, a, b } = await patchedFleet();
    const other = await fleet(app);
    const theirs = await enroll(app, other.key);
    const admin = await buildUser(app, { orgId: org.id, role: 'Organization Admin' });
    expect((await rest(app, admin.as).delete(`/devices/${b.deviceId}`)).status).toBe(204);

    const res = await api.post('/patches/scan', { deviceIds: [a.deviceId, b.deviceId, theirs.deviceId] });
    expect(res.status).toBe(202);
    expect(res.body.commands).toEqual([{ deviceId: a.deviceId, commandId: expect.any(String) }]);
    expect(res.body.skipped).toEqual(expect.arrayContaining([{ deviceId: b.deviceId, reason: 'decommissioned' }, { deviceId: theirs.deviceId, reason: 'not found' }]));
    expect((await api.post('/patches/scan', { deviceIds: [a.deviceId] })).body).toEqual({ commands: [], skipped: [{ deviceId: a.deviceId, reason: 'already pending' }] });
    const [audit] = await sql(app, `select details from audit_log where action = 'patch.scan' and org_id = ?`, [org.id]);
    expect(audit.details.commands).toEqual(res.body.commands);

    const [command] = await heartbeat(a);
    expect([command!.id, command!.type, command!.payload]).toEqual([res.body.commands[0].commandId, 'patch_scan', {}]);
    const wrong = await agentCall(app, a, `/commands/${command!.id}/result`, { status: 'completed', result: { patches: [patch({ source: 'windows' })] } });
    expect([wrong.status, wrong.body.code, wrong.body.details?.[0]?.path]).toEqual([400, 'VALIDATION_ERROR', 'patches.0.source']);
    await answer(a, command!.id, { status: 'completed', result: { patches: [patch({ externalId: 'scanned', severity: 'critical' }), patch({ externalId: 'ok', status: 'installed' })] } });
    expect(await statusOn(api, a.deviceId)).toEqual({ scanned: 'missing', ok: 'installed' });
    expect(await eventsOf('patch.available', org.id)).toHaveLength(2);

    // GraphQL alike; the viewer may not; bad input is 400.
    const viaGraphql = await gql(app, tech.as, 'mutation($input: ScanPatchesInput!) { scanPatches(input: $input) { commands { deviceId commandId } skipped { deviceId reason } } }', { input: { deviceIds: [a.deviceId, theirs.deviceId] } });
    expect(viaGraphql.body.errors).toBeUndefined();
    expect(viaGraphql.body.data.scanPatches).toEqual({ commands: [{ deviceId: a.deviceId, commandId: expect.any(String) }], skipped: [{ deviceId: theirs.deviceId, reason: 'not found' }] });
    const denied = await rest(app, viewer.as).post('/patches/scan', { deviceIds: [a.deviceId] });
    expect([denied.status, denied.body.code]).toEqual([403, 'FORBIDDEN']);
    for (const body of [{ deviceIds: [] }, { deviceIds: ['nope'] }, { deviceIds: Array.from({ length: 501 }, () => a.deviceId) }, {}]) {
      const bad = await api.post('/patches/scan', body);
      expect([bad.status, bad.body.code]).toEqual([400, 'VALIDATION_ERROR']);
    }
  });
});

describe('rollbacks', () => {
  test('queue rollback_patch where the patch is installed (others skipped), decline it; a completed rollback sets it missing and publishes patch.rollback', async () => {
    const { org, api, tech, viewer, a, b } = await patchedFleet();
    const kb = patch({ source: 'third_party', externalId: 'chrome-120', packageName: 'chrome', version: '120.0' });
    await report(a, [{ ...kb, status: 'installed' }]);
    await report(b, [kb]);
    const id = (await patchIds(api))['chrome-120']!;
    await approve(api, id);

    const res = await api.post(`/patches/${id}/rollback`, { deviceIds: [a.deviceId, b.deviceId], reason: 'breaks printing' });
    expect(res.status).toBe(202);
    expect(res.body).toEqual({ commands: [{ deviceId: a.deviceId, commandId: expect.any(String) }], skipped: [{ deviceId: b.deviceId, reason: 'not installed' }] });
    const detail = (await api.get(`/patches/${id}`)).body;
    expect(detail.approvalStatus).toBe('declined');
    const approvals = (await api.get(`/patches/approvals?patchId=${id}`)).body.data;
    expect(approvals[0]).toMatchObject({ status: 'declined', note: 'breaks printing', policyId: null });
    const [audit] = await sql(app, `select details from audit_log where action = 'patch.rollback' and resource_id = ?`, [id]);
    expect(audit.details).toEqual({ commands: res.body.commands, reason: 'breaks printing' });

    const [command] = await heartbeat(a);
    expect([command!.type, command!.payload]).toEqual(['rollback_patch', { patchId: id, source: 'third_party', externalId: 'chrome-120', packageName: 'chrome', version: '120.0', reason: 'breaks printing' }]);
    expect(await eventsOf('patch.rollback', org.id)).toEqual([]);
    await answer(a, command!.id, { status: 'completed' });
    expect(await statusOn(api, a.deviceId)).toEqual({ 'chrome-120': 'missing' });
    expect((await eventsOf('patch.rollback', org.id)).map((e) => e.data)).toEqual([{ patchId: id, deviceId: a.deviceId }]);

    // Default: every device that has it installed (none now); GraphQL alike.
    await report(b, [{ ...kb, status: 'pending_reboot' }]);
    const viaGraphql = await gql(app, tech.as, 'mutation($id: ID!) { rollbackPatch(id: $id) { commands { deviceId } skipped { deviceId reason } } }', { id });
    expect(viaGraphql.body.errors).toBeUndefined();
    expect(viaGraphql.body.data.rollbackPatch).toEqual({ commands: [{ deviceId: b.deviceId }], skipped: [] });

    const denied = await rest(app, viewer.as).post(`/patches/${id}/rollback`, {});
    expect([denied.status, denied.body.code]).toEqual([403, 'FORBIDDEN']);
    const bad = await api.post(`/patches/${id}/rollback`, { deviceIds: ['nope'] });
    expect([bad.status, bad.body.code]).toEqual([400, 'VALIDATION_ERROR']);
    const byHand = await api.post(`/devices/${a.deviceId}/commands`, { type: 'rollback_patch', payload: {} });
    expect([byHand.status, byHand.body.code]).toEqual([400, 'VALIDATION_ERROR']);
  });
});

describe('tenancy and input', () => {
  test('another organization’s patches, policies, devices and jobs are 404 (REST and GraphQL); unknown enums are 400', async () => {
    const mine = await patchedFleet();
    await report(mine.a, [patch({ externalId: 'one', status: 'installed' })]);
    const id = (await patchIds(mine.api)).one!;
    const policyId = await createPolicy(mine.api);
    const other = await fleet(app);
    const theirs: As = other.tech.as;
    const api = rest(app, theirs);

    for (const res of [
      await api.post(`/patches/${id}/rollback`, {}),
      await api.get(`/patches/jobs?policyId=${policyId}`),
      await api.get(`/patches/jobs?deviceId=${mine.a.deviceId}`),
    ]) {
      expect([res.status, res.body.code]).toEqual([404, 'NOT_FOUND']);
    }
    expect((await api.post(`/patches/${id}/rollback`, {})).body.message).toBe('Patch not found');
    expect((await api.post('/patches/not-a-uuid/rollback', {})).status).toBe(404);
    const viaGraphql = await gql(app, theirs, 'mutation($id: ID!) { rollbackPatch(id: $id) { commands { deviceId } } }', { id });
    expect(viaGraphql.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const jobsOf = await gql(app, theirs, 'query($policyId: ID) { patchJobs(policyId: $policyId) { totalCount } }', { policyId });
    expect(jobsOf.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect((await mine.api.get(`/patches/${id}`)).body.approvalStatus).toBe('pending');
    expect(await statusOn(mine.api, mine.a.deviceId)).toEqual({ one: 'installed' });

    for (const query of ['?status=done', '?policyId=nope', '?limit=0']) {
      const res = await api.get(`/patches/jobs${query}`);
      expect([res.status, res.body.code]).toEqual([400, 'VALIDATION_ERROR']);
    }
    const badEnum = await gql(app, theirs, '{ patchJobs(status: done) { totalCount } }');
    expect(badEnum.body.errors).toBeDefined();
  });

  test('a user limited to a site sees only their site’s devices of a job, scans only those, and may not roll back (the decline is organization-wide)', async () => {
    const { org, api, a, b } = await patchedFleet();
    const [siteA, siteB] = [await buildSite(app, org.id), await buildSite(app, org.id)];
    await sql(app, 'update device set site_id = ? where id = ?', [siteA.id, a.deviceId]);
    await sql(app, 'update device set site_id = ? where id = ?', [siteB.id, b.deviceId]);
    await report(a, [patch({ externalId: 'one' })]);
    await report(b, [patch({ externalId: 'one', status: 'installed' }), patch({ externalId: 'two' })]);
    const ids = await patchIds(api);
    await approve(api, ids.one!);
    await approve(api, ids.two!);
    await createPolicy(api);
    const [job] = await jobs(api);
    expect(job!.devices.map((d) => d.deviceId).sort()).toEqual([a.deviceId, b.deviceId].sort());

    const limited = await buildUser(app, { orgId: org.id, role: 'Organization Technician' });
    await sql(app, 'update membership set site_ids = ?::jsonb where id = ?', [JSON.stringify([siteB.id]), limited.membership.id]);
    const theirs = rest(app, limited.as);
    expect((await jobs(theirs)).map((j) => [j.id, j.devices.map((d) => [d.deviceId, d.patchIds])])).toEqual([[job!.id, [[b.deviceId, [ids.two]]]]]);
    expect((await theirs.get(`/patches/jobs?deviceId=${a.deviceId}`)).status).toBe(404);
    const scan = await theirs.post('/patches/scan', { deviceIds: [a.deviceId, b.deviceId] });
    expect(scan.body).toEqual({ commands: [{ deviceId: b.deviceId, commandId: expect.any(String) }], skipped: [{ deviceId: a.deviceId, reason: 'not found' }] });
    const rollback = await theirs.post(`/patches/${ids.one}/rollback`, {});
    expect([rollback.status, rollback.body.code]).toEqual([403, 'FORBIDDEN']);
    expect((await api.get(`/patches/${ids.one}`)).body.approvalStatus).toBe('approved');
  });
});
