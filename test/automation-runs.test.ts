import { createTestApp, useInstancePair, type TestApp } from './support/app.js';
import { TestClock } from './support/clock.js';
import { gql, rest, type As } from './support/clients.js';
import { dispatched, dueWorkTicked, sql } from './support/db.js';
import { agentCall, enroll, fleet, type EnrolledAgent } from './support/devices.js';
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

// A second fleet of two instances on one database, for event triggers.
const pair = useInstancePair();

type Result = { deviceId: string; stepIndex: number; status: string; executionId?: string; commandId?: string; error?: string };
type Run = { id: string; status: string; source: string; startedAt: string; completedAt: string | null; results: Result[] };

/** A fleet and a user who may write and run its automations (and nothing else). */
async function automationFleet(on: TestApp = app) {
  const f = await fleet(on);
  const user = await buildUser(on, { orgId: f.org.id, can: ['automations:read', 'automations:write', 'automations:run'] });
  return { ...f, user, auto: rest(on, user.as) };
}

/** An email channel of the fleet's organization, made by someone who may manage channels. */
async function emailChannel(orgId: string): Promise<string> {
  const admin = await buildUser(app, { orgId, can: ['alerts:read', 'alerts:write'] });
  const res = await rest(app, admin.as).post('/alerts/channels', { name: `ops-${unique()}`, type: 'email', config: { to: ['ops@example.test'] } });
  expect([res.status, res.body.message]).toEqual([201, undefined]);
  return res.body.id;
}

/** What the automation's run queued for channels: the message titles per channel. */
async function channelMessages(runId: string): Promise<[string, string][]> {
  const rows = await sql(app, `select channel_id, message->>'title' as title from alert_channel_delivery where kind = 'automation' and message->>'title' like ? order by created_at`, [`%${runId}%`]);
  return rows.map((row) => [row.channel_id, row.title]);
}

async function createAutomation(as: As, body: Record<string, unknown>, on: TestApp = app): Promise<string> {
  const res = await rest(on, as).post('/automations', { name: `auto-${unique()}`, trigger: { type: 'manual' }, target: { type: 'organization' }, ...body });
  expect([res.status, res.body.message]).toEqual([201, undefined]);
  return res.body.id;
}

async function startRun(as: As, automationId: string): Promise<Run> {
  const res = await rest(app, as).post(`/automations/${automationId}/run`);
  expect([res.status, res.body.status]).toEqual([202, 'running']);
  return res.body;
}

const runOf = async (as: As, runId: string, on: TestApp = app): Promise<Run> => (await rest(on, as).get(`/automations/runs/${runId}`)).body;

/** The run once it has ended. */
const ended = (as: As, runId: string, on: TestApp = app) =>
  eventually(
    async () => {
      const run = await runOf(as, runId, on);
      return run.status !== 'running' && run.results && run;
    },
    15_000,
    `run ${runId} to end`,
  );

/** The results as [device, step, status], sorted. */
const outcomes = (run: Run) => run.results.map((r) => [r.deviceId, r.stepIndex, r.status]).sort((a, b) => String(a).localeCompare(String(b)));

/** Waits for a due-work tick that started after now to finish. */
const aTickHasRun = () => dueWorkTicked(app);

describe('manual runs', () => {
  test('command and wait steps give per-device results; the wait ends by the clock', async () => {
    const { key, user, tech } = await automationFleet();
    const a = await enroll(app, key);
    const b = await enroll(app, key);
    const id = await createAutomation(user.as, {
      steps: [{ type: 'command', commandType: 'refresh_inventory' }, { type: 'wait', seconds: 600 }, { type: 'command', commandType: 'collect_logs', payload: { lines: 10 } }],
    });
    const run = await startRun(user.as, id);

    // The first step is done and the run waits.
    const waiting = await eventually(async () => {
      const current = await runOf(user.as, run.id);
      return current.results.length === 2 && current;
    });
    expect(waiting.status).toBe('running');
    expect(outcomes(waiting)).toEqual(
      [
        [a.deviceId, 0, 'completed'],
        [b.deviceId, 0, 'completed'],
      ].sort((x, y) => String(x).localeCompare(String(y))),
    );

    clock.advance(601_000);
    const done = await ended(user.as, run.id);
    expect(done.status).toBe('completed');
    expect(done.completedAt).not.toBeNull();
    expect(done.results.map((r) => [r.stepIndex, r.status])).toEqual([
      [0, 'completed'],
      [0, 'completed'],
      [1, 'completed'],
      [1, 'completed'],
      [2, 'completed'],
      [2, 'completed'],
    ]);
    // Each command step queued a real device command, named in its result.
    const logs = done.results.find((r) => r.stepIndex === 2 && r.deviceId === a.deviceId)!;
    const commands = (await rest(app, tech.as).get(`/devices/${a.deviceId}/commands`)).body.data as { id: string; type: string; payload: unknown }[];
    expect(commands.find((c) => c.id === logs.commandId)).toMatchObject({ type: 'collect_logs', payload: { lines: 10 } });
    expect(commands.filter((c) => c.type === 'refresh_inventory')).toHaveLength(1);

    // The run's events.
    const events = await sql(app, `select type, data from outbox_event where data->>'runId' = ? order by created_at`, [run.id]);
    expect(events.map((e) => [e.type, e.data.status])).toEqual([
      ['automation.started', 'running'],
      ['automation.completed', 'completed'],
    ]);
    expect(events[1].data).toMatchObject({ automationId: id, deviceCount: 2, failedDeviceIds: [], source: 'manual' });
  });

  test('onFailure stop: a device that failed a step takes no further steps; continue: it goes on', async () => {
    // A second refresh_inventory while one is pending is refused (409), so step 1 fails on every device.
    const steps = [
      { type: 'command', commandType: 'refresh_inventory' },
      { type: 'command', commandType: 'refresh_inventory' },
      { type: 'command', commandType: 'collect_logs' },
    ];
    const stopping = await automationFleet();
    const s = await enroll(app, stopping.key);
    const stopRun = await ended(stopping.user.as, (await startRun(stopping.user.as, await createAutomation(stopping.user.as, { steps, onFailure: 'stop' }))).id);
    expect(stopRun.results.map((r) => [r.deviceId, r.stepIndex, r.status])).toEqual([
      [s.deviceId, 0, 'completed'],
      [s.deviceId, 1, 'failed'],
    ]);
    expect(stopRun.results[1]!.error).toMatch(/already pending/);
    expect(stopRun.status).toBe('partial');

    const going = await automationFleet();
    const g = await enroll(app, going.key);
    const goRun = await ended(going.user.as, (await startRun(going.user.as, await createAutomation(going.user.as, { steps, onFailure: 'continue' }))).id);
    expect(goRun.results.map((r) => [r.deviceId, r.stepIndex, r.status])).toEqual([
      [g.deviceId, 0, 'completed'],
      [g.deviceId, 1, 'failed'],
      [g.deviceId, 2, 'completed'],
    ]);
    expect(goRun.status).toBe('partial');
    const [event] = await sql(app, `select data from outbox_event where type = 'automation.failed' and data->>'runId' = ?`, [goRun.id]);
    expect(event.data).toMatchObject({ status: 'partial', failedDeviceIds: [g.deviceId] });
  });

  test('every result failed: the run failed; onFailure notify tells the channels of its notify steps', async () => {
    const f = await automationFleet();
    await enroll(app, f.key);
    const channelId = await emailChannel(f.org.id);
    const first = await ended(f.user.as, (await startRun(f.user.as, await createAutomation(f.user.as, { steps: [{ type: 'command', commandType: 'refresh_inventory' }] }))).id);
    expect(first.status).toBe('completed');
    const id = await createAutomation(f.user.as, { steps: [{ type: 'command', commandType: 'refresh_inventory' }, { type: 'notify', channelId }], onFailure: 'notify' });
    const run = await ended(f.user.as, (await startRun(f.user.as, id)).id);
    expect([run.status, run.results.map((r) => r.status)]).toEqual(['failed', ['failed']]);
    const notes = await sql(app, `select details from audit_log where action = 'automation.notify' and resource_id = ?`, [id]);
    expect(notes.map((n) => n.details.channelId)).toEqual([channelId]);
    expect(notes[0].details.message).toMatch(/failed on 1 device/);
    expect(await channelMessages(run.id)).toEqual([[channelId, expect.stringMatching(/failed on 1 device/)]]);
  });

  test('a notify step is recorded per device and names its channel', async () => {
    const f = await automationFleet();
    const device = await enroll(app, f.key);
    const channelId = await emailChannel(f.org.id);
    const id = await createAutomation(f.user.as, { steps: [{ type: 'notify', channelId }] });
    const run = await ended(f.user.as, (await startRun(f.user.as, id)).id);
    expect([run.status, outcomes(run)]).toEqual(['completed', [[device.deviceId, 0, 'completed']]]);
    const [note] = await sql(app, `select details from audit_log where action = 'automation.notify' and resource_id = ?`, [id]);
    expect(note.details).toMatchObject({ channelId, runId: run.id });
    expect(await channelMessages(run.id)).toEqual([[channelId, expect.stringMatching(/step 1 of run/)]]);
  });

  test('a device target: only the named devices, and a run with no device completes at once', async () => {
    const f = await automationFleet();
    const [a] = [await enroll(app, f.key), await enroll(app, f.key)];
    const id = await createAutomation(f.user.as, { target: { type: 'devices', deviceIds: [a!.deviceId] }, steps: [{ type: 'command', commandType: 'collect_logs' }] });
    const run = await ended(f.user.as, (await startRun(f.user.as, id)).id);
    expect(outcomes(run)).toEqual([[a!.deviceId, 0, 'completed']]);

    const empty = await automationFleet();
    const none = await ended(empty.user.as, (await startRun(empty.user.as, await createAutomation(empty.user.as, { steps: [{ type: 'wait', seconds: 60 }] }))).id);
    expect([none.status, none.results]).toEqual(['completed', []]);
  });

  test('a group target runs on the group’s members, whoever starts it', async () => {
    const f = await automationFleet();
    const [member] = [await enroll(app, f.key), await enroll(app, f.key)];
    const group = await f.api.post('/groups', { name: `g-${unique()}`, type: 'static' });
    expect((await f.api.post(`/groups/${group.body.id}/devices`, { deviceIds: [member!.deviceId] })).status).toBe(200);
    const id = await createAutomation(f.user.as, { target: { type: 'group', groupIds: [group.body.id] }, steps: [{ type: 'command', commandType: 'collect_logs' }] });
    // A runner who sees no device and no group.
    const runner = await buildUser(app, { orgId: f.org.id, can: ['automations:read', 'automations:run'] });
    const run = await ended(runner.as, (await startRun(runner.as, id)).id);
    expect(outcomes(run)).toEqual([[member!.deviceId, 0, 'completed']]);
  });

  test('a user limited to some sites sees a run’s devices and results of their sites only, over REST and GraphQL', async () => {
    const { org, key, api, user } = await automationFleet();
    const [siteA1, siteA2] = [await buildSite(app, org.id), await buildSite(app, org.id)];
    const a1 = await enroll(app, key);
    const a2 = await enroll(app, key);
    for (const [device, site] of [[a1, siteA1], [a2, siteA2]] as const) expect((await api.patch(`/devices/${device.deviceId}`, { siteId: site.id })).status).toBe(200);
    const id = await createAutomation(user.as, { steps: [{ type: 'command', commandType: 'refresh_inventory' }] });
    const run = await ended(user.as, (await startRun(user.as, id)).id);
    expect(run.results).toHaveLength(2);

    const limited = await buildUser(app, { orgId: org.id, role: 'Organization Viewer' });
    await sql(app, `update membership set site_ids = ?::jsonb where id = ?`, [JSON.stringify([siteA1.id]), limited.membership.id]);
    const seen = await runOf(limited.as, run.id);
    expect([(seen as Run & { deviceIds: string[] }).deviceIds, outcomes(seen)]).toEqual([[a1.deviceId], [[a1.deviceId, 0, 'completed']]]);
    const listed = (await rest(app, limited.as).get(`/automations/${id}/runs`)).body.data[0];
    expect([listed.deviceIds, listed.results.map((r: Result) => r.deviceId)]).toEqual([[a1.deviceId], [a1.deviceId]]);
    const graph = await gql(app, limited.as, 'query($id: ID!) { automationRun(runId: $id) { deviceIds results { deviceId } } }', { id: run.id });
    expect(graph.body.data.automationRun).toEqual({ deviceIds: [a1.deviceId], results: [{ deviceId: a1.deviceId }] });
    expect(JSON.stringify([seen, listed, graph.body])).not.toContain(a2.deviceId);
  });

  test('runs are listed newest first', async () => {
    const f = await automationFleet();
    const id = await createAutomation(f.user.as, { steps: [{ type: 'wait', seconds: 60 }] });
    const first = await startRun(f.user.as, id);
    const second = await startRun(f.user.as, id);
    const page = (await f.auto.get(`/automations/${id}/runs?limit=1`)).body;
    expect(page.pagination).toEqual({ page: 1, limit: 1, total: 2 });
    expect([first.id, second.id]).toContain(page.data[0].id);
  });
});

describe('run_script steps', () => {
  const heartbeat = async (agent: EnrolledAgent) => {
    const res = await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0' });
    expect(res.status).toBe(200);
    return res.body.commands as { id: string; type: string; payload: Record<string, any> }[];
  };

  async function scriptFleet() {
    const f = await automationFleet();
    const author = await buildUser(app, { orgId: f.org.id, can: ['scripts:read', 'scripts:write'] });
    const script = await rest(app, author.as).post('/scripts', { name: `script-${unique()}`, language: 'bash', content: 'uptime' });
    expect(script.status).toBe(201);
    return { ...f, scriptId: script.body.id as string };
  }

  test('the step completes when the agent reports its executions, then the next step runs', async () => {
    const f = await scriptFleet();
    const agent = await enroll(app, f.key, `lin-${unique()}`, { osType: 'linux' });
    const id = await createAutomation(f.user.as, { steps: [{ type: 'run_script', scriptId: f.scriptId }, { type: 'command', commandType: 'collect_logs' }] });
    const run = await startRun(f.user.as, id);

    const executing = await eventually(async () => {
      const current = await runOf(f.user.as, run.id);
      return current.results[0]?.status === 'running' && current;
    });
    const executionId = executing.results[0]!.executionId!;
    expect(executionId).toBeDefined();

    const [command] = await heartbeat(agent);
    expect([command!.type, command!.payload.executionId]).toEqual(['run_script', executionId]);
    const reported = await agentCall(app, agent, `/commands/${command!.id}/result`, { status: 'completed', exitCode: 0, stdout: 'up 3 days' });
    expect(reported.status).toBe(200);

    const done = await ended(f.user.as, run.id);
    expect(done.status).toBe('completed');
    expect(done.results).toEqual([
      { deviceId: agent.deviceId, stepIndex: 0, status: 'completed', executionId },
      expect.objectContaining({ deviceId: agent.deviceId, stepIndex: 1, status: 'completed' }),
    ]);
  });

  test('a failed script stops the device; an unsupported device fails the step', async () => {
    const f = await scriptFleet();
    const agent = await enroll(app, f.key, `lin-${unique()}`, { osType: 'linux' });
    const windows = await enroll(app, f.key, `win-${unique()}`, { osType: 'windows', osVersion: '11' });
    const id = await createAutomation(f.user.as, { steps: [{ type: 'run_script', scriptId: f.scriptId }, { type: 'command', commandType: 'collect_logs' }], onFailure: 'stop' });
    const run = await startRun(f.user.as, id);
    await eventually(async () => (await runOf(f.user.as, run.id)).results.length === 2);
    const [command] = await heartbeat(agent);
    await agentCall(app, agent, `/commands/${command!.id}/result`, { status: 'failed', exitCode: 3, stderr: 'boom' });

    const done = await ended(f.user.as, run.id);
    expect(done.status).toBe('failed');
    expect(outcomes(done)).toEqual(
      [
        [agent.deviceId, 0, 'failed'],
        [windows.deviceId, 0, 'failed'],
      ].sort((x, y) => String(x).localeCompare(String(y))),
    );
    expect(done.results.find((r) => r.deviceId === windows.deviceId)!.error).toBe('skipped: unsupported_os');
    expect(done.results.find((r) => r.deviceId === agent.deviceId)!.error).toMatch(/exit code 3/);
  });
});

describe('event triggers', () => {
  test('an event starts a matching automation once, even with two server instances', async () => {
    const { a, b } = pair;
    const f = await automationFleet(a);
    const hostname = `watched-${unique()}`;
    const id = await createAutomation(
      f.user.as,
      { trigger: { type: 'event', eventType: 'device.enrolled', filter: { hostname } }, steps: [{ type: 'command', commandType: 'collect_logs' }] },
      a,
    );
    const other = await enroll(b, f.key);
    const watched = await enroll(a, f.key, hostname);
    for (const device of [other, watched]) {
      const [event] = await sql(a, `select id from outbox_event where type = 'device.enrolled' and data->>'deviceId' = ?`, [device.deviceId]);
      await dispatched(a, event.id);
    }
    const runs = (await rest(a, f.user.as).get(`/automations/${id}/runs`)).body;
    expect(runs.pagination.total).toBe(1);
    expect(runs.data[0].source).toBe('event');
    const [row] = await sql(a, `select event_id from automation_run where id = ?`, [runs.data[0].id]);
    const [event] = await sql(a, `select id from outbox_event where type = 'device.enrolled' and data->>'deviceId' = ?`, [watched.deviceId]);
    expect(row.event_id).toBe(event.id);
    const done = await ended(f.user.as, runs.data[0].id, b);
    expect(done.status).toBe('completed');
  });
});

describe('schedules', () => {
  // Last in the file: it moves the shared clock to another day.
  test('a schedule fires at its cron’s minute in its time zone; disabled, it stops', async () => {
    const f = await automationFleet();
    clock.set(new Date('2027-01-15T07:59:00.000Z'));
    const id = await createAutomation(f.user.as, { trigger: { type: 'schedule', cron: '0 9 * * *', timezone: 'Europe/Berlin' }, steps: [{ type: 'wait', seconds: 60 }] });
    // 09:00 in Berlin is 08:00 UTC in winter.
    expect((await f.auto.get(`/automations/${id}`)).body.nextRunAt).toBe('2027-01-15T08:00:00.000Z');

    await aTickHasRun();
    expect((await f.auto.get(`/automations/${id}/runs`)).body.pagination.total).toBe(0);

    clock.set(new Date('2027-01-15T08:00:02.000Z'));
    const [run] = await eventually(async () => {
      const page = (await f.auto.get(`/automations/${id}/runs`)).body;
      return page.pagination.total > 0 && page.data;
    });
    expect(run.source).toBe('schedule');
    expect(run.startedAt.slice(0, 16)).toBe('2027-01-15T08:00');
    expect((await f.auto.get(`/automations/${id}`)).body.nextRunAt).toBe('2027-01-16T08:00:00.000Z');

    // The clock moved back: the schedule is computed again from there.
    clock.set(new Date('2026-03-02T07:59:00.000Z'));
    await aTickHasRun();
    expect((await f.auto.get(`/automations/${id}`)).body.nextRunAt).toBe('2026-03-02T08:00:00.000Z');
    clock.set(new Date('2026-03-02T08:00:01.000Z'));
    await eventually(async () => (await f.auto.get(`/automations/${id}/runs`)).body.pagination.total === 2);

    const disabled = await f.auto.patch(`/automations/${id}`, { enabled: false });
    expect(disabled.body.nextRunAt).toBeNull();
    clock.set(new Date('2026-03-03T08:00:02.000Z'));
    await aTickHasRun();
    expect((await f.auto.get(`/automations/${id}/runs`)).body.pagination.total).toBe(2);
  });
});
