import crypto from 'node:crypto';
import WebSocket from 'ws';
import { createTestApp, type TestApp } from './support/app.js';
import { TestClock } from './support/clock.js';
import { gql, rest, type As } from './support/clients.js';
import { sql } from './support/db.js';
import { agentCall, enroll, fleet, type EnrolledAgent } from './support/devices.js';
import { eventually } from './support/eventually.js';
import { buildOrg, buildSite, buildUser } from './support/factories.js';

const clock = new TestClock();
let app: TestApp;

beforeAll(async () => {
  app = await createTestApp({ start: { clock } });
});
afterAll(async () => {
  await app.stop();
});

/** A fleet (enrolled by a technician), an author (scripts:read/write) and an operator who may only read and run scripts. */
async function scriptFleet() {
  const f = await fleet(app);
  const author = await buildUser(app, { orgId: f.org.id, can: ['scripts:read', 'scripts:write'] });
  const operator = await buildUser(app, { orgId: f.org.id, can: ['scripts:read', 'scripts:execute'] });
  return { ...f, author, operator };
}

async function createScript(as: As, body: Record<string, unknown>): Promise<{ id: string; [k: string]: any }> {
  const res = await rest(app, as).post('/scripts', { name: `script-${Math.random().toString(36).slice(2)}`, language: 'bash', content: 'echo hello', ...body });
  expect([res.status, res.body.message]).toEqual([201, undefined]);
  return res.body;
}

async function execute(as: As, scriptId: string, body: Record<string, unknown>) {
  const res = await rest(app, as).post(`/scripts/${scriptId}/execute`, body);
  expect([res.status, res.body.message]).toEqual([202, undefined]);
  return res.body as { executions: { id: string; deviceId: string; status: string }[]; skipped: { deviceId: string; reason: string }[] };
}

const heartbeat = async (agent: EnrolledAgent) => {
  const res = await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0' });
  expect(res.status).toBe(200);
  return res.body.commands as { id: string; type: string; payload: Record<string, any> }[];
};

const report = async (agent: EnrolledAgent, commandId: string, body: Record<string, unknown>) => {
  const res = await agentCall(app, agent, `/commands/${commandId}/result`, body);
  expect([res.status, res.body.message]).toEqual([200, undefined]);
};

const executionOf = async (as: As, id: string) => {
  const res = await rest(app, as).get(`/scripts/executions/${id}`);
  expect(res.status).toBe(200);
  return res.body;
};

describe('executing', () => {
  test('one execution and exactly one run_script command per supported device; other operating systems are skipped', async () => {
    const { key, author, operator } = await scriptFleet();
    const linux = await enroll(app, key, 'lin-1', { osType: 'linux' });
    const mac = await enroll(app, key, 'mac-1', { osType: 'macos', osVersion: '14.5' });
    const windows = await enroll(app, key, 'win-1', { osType: 'windows', osVersion: '11' });
    const script = await createScript(author.as, { language: 'bash', content: 'uptime', osTypes: ['linux', 'macos'], runAs: 'elevated', timeoutSeconds: 120 });

    const result = await execute(operator.as, script.id, { deviceIds: [linux.deviceId, mac.deviceId, windows.deviceId, linux.deviceId] });
    expect(result.skipped).toEqual([{ deviceId: windows.deviceId, reason: 'unsupported_os' }]);
    expect(result.executions.map((e) => [e.deviceId, e.status]).sort()).toEqual(
      [
        [linux.deviceId, 'pending'],
        [mac.deviceId, 'pending'],
      ].sort(),
    );
    const commands = await sql(app, `select device_id, count(*)::int as n from device_command where type = 'run_script' and device_id in (?, ?, ?) group by device_id`, [
      linux.deviceId,
      mac.deviceId,
      windows.deviceId,
    ]);
    expect(commands.map((c) => [c.device_id, c.n]).sort()).toEqual(
      [
        [linux.deviceId, 1],
        [mac.deviceId, 1],
      ].sort(),
    );

    const linuxExecution = result.executions.find((e) => e.deviceId === linux.deviceId)!;
    const [command] = await heartbeat(linux);
    expect(command).toEqual({
      id: expect.any(String),
      type: 'run_script',
      payload: { executionId: linuxExecution.id, language: 'bash', content: 'uptime', parameters: {}, runAs: 'elevated', timeoutSeconds: 120 },
    });
    expect(await heartbeat(linux)).toEqual([]);
    expect(await executionOf(operator.as, linuxExecution.id)).toMatchObject({ status: 'queued', scriptId: script.id, deviceId: linux.deviceId, startedAt: null });

    await report(linux, command!.id, { status: 'running' });
    const running = await executionOf(operator.as, linuxExecution.id);
    expect(running).toMatchObject({ status: 'running', startedAt: expect.any(String), completedAt: null });

    await report(linux, command!.id, { status: 'completed', exitCode: 0, stdout: ' 10:00:00 up 3 days\n', stderr: '' });
    expect(await executionOf(operator.as, linuxExecution.id)).toMatchObject({
      id: linuxExecution.id,
      status: 'completed',
      exitCode: 0,
      stdout: ' 10:00:00 up 3 days\n',
      stderr: '',
      truncated: false,
      parameters: {},
      startedAt: running.startedAt,
      completedAt: expect.any(String),
    });
    // Answering again changes nothing.
    await report(linux, command!.id, { status: 'failed', exitCode: 3 });
    expect((await executionOf(operator.as, linuxExecution.id)).status).toBe('completed');

    const events = await sql(app, `select type, data from outbox_event where data->>'executionId' = ? and type like 'script.%' order by created_at`, [linuxExecution.id]);
    expect(events.filter((e) => e.type !== 'script.execution_updated').map((e) => e.type)).toEqual(['script.started', 'script.completed']);
    expect(events.at(-1)!.data).toMatchObject({ executionId: linuxExecution.id, scriptId: script.id, deviceId: linux.deviceId, status: 'completed', exitCode: 0 });

    const list = await rest(app, operator.as).get(`/scripts/${script.id}/executions`);
    expect(list.status).toBe(200);
    expect(list.body.pagination.total).toBe(2);
  });

  test('a group’s members run it; the output keeps the first MiB of each stream; a non-zero exit fails', async () => {
    const { key, author, tech, operator } = await scriptFleet();
    const a = await enroll(app, key, 'grp-a', { osType: 'windows' });
    const b = await enroll(app, key, 'grp-b', { osType: 'windows' });
    const group = await rest(app, tech.as).post('/groups', { name: 'Windows boxes', type: 'static' });
    await rest(app, tech.as).post(`/groups/${group.body.id}/devices`, { deviceIds: [a.deviceId, b.deviceId] });
    const script = await createScript(author.as, { language: 'powershell', content: 'Get-Process' });
    expect(script.osTypes).toEqual(['windows']);

    const result = await execute(operator.as, script.id, { groupId: group.body.id });
    expect(result.executions).toHaveLength(2);
    expect(result.skipped).toEqual([]);

    const big = 'x'.repeat(1024 * 1024 + 100);
    const [forA] = await heartbeat(a);
    await report(a, forA!.id, { status: 'completed', exitCode: 0, stdout: big, stderr: 'warn' });
    const [forB] = await heartbeat(b);
    await report(b, forB!.id, { status: 'completed', exitCode: 2, stdout: '', stderr: 'boom' });

    const execA = await executionOf(operator.as, forA!.payload.executionId);
    expect(execA).toMatchObject({ status: 'completed', truncated: true, stderr: 'warn' });
    expect(execA.stdout).toHaveLength(1024 * 1024);
    expect(await executionOf(operator.as, forB!.payload.executionId)).toMatchObject({ status: 'failed', exitCode: 2, stderr: 'boom', truncated: false });
    const failed = await sql(app, `select data from outbox_event where type = 'script.failed' and data->>'executionId' = ?`, [forB!.payload.executionId]);
    expect(failed).toHaveLength(1);
  });

  test('parameters: defaults fill in; undeclared names, wrong types and missing required values are 400', async () => {
    const { key, author, operator } = await scriptFleet();
    const agent = await enroll(app, key);
    const script = await createScript(author.as, {
      parameters: [
        { name: 'service', type: 'string', required: true },
        { name: 'retries', type: 'number', default: 3 },
        { name: 'force', type: 'boolean' },
        { name: 'mode', type: 'select', options: ['fast', 'safe'], default: 'safe' },
      ],
    });
    const api = rest(app, operator.as);
    const bad = async (body: Record<string, unknown>, message: RegExp) => {
      const res = await api.post(`/scripts/${script.id}/execute`, body);
      expect([res.status, res.body.code]).toEqual([400, 'VALIDATION_ERROR']);
      expect(res.body.message).toMatch(message);
    };
    await bad({ deviceIds: [agent.deviceId], parameters: { service: 'nginx', colour: 'red' } }, /parameters\.colour: is not a parameter of this script/);
    await bad({ deviceIds: [agent.deviceId], parameters: { service: 'nginx', retries: 'three' } }, /parameters\.retries: must be a number/);
    await bad({ deviceIds: [agent.deviceId], parameters: { service: 'nginx', force: 'yes' } }, /parameters\.force: must be a boolean/);
    await bad({ deviceIds: [agent.deviceId], parameters: { service: 'nginx', mode: 'reckless' } }, /parameters\.mode: must be one of: fast, safe/);
    await bad({ deviceIds: [agent.deviceId], parameters: {} }, /parameters\.service: is required/);
    await bad({ parameters: { service: 'nginx' } }, /deviceIds/);
    await bad({ deviceIds: ['nope'] }, /deviceIds/);
    expect(await sql(app, `select id from device_command where device_id = ?`, [agent.deviceId])).toEqual([]);

    const ok = await execute(operator.as, script.id, { deviceIds: [agent.deviceId], parameters: { service: 'nginx', force: true } });
    expect(await executionOf(operator.as, ok.executions[0]!.id)).toMatchObject({ parameters: { service: 'nginx', retries: 3, force: true, mode: 'safe' } });
  });
});

describe('over the agent channel', () => {
  test('a connected agent gets the run_script pushed at once, secrets unsealed, and reports over the channel', async () => {
    const { key, author, operator } = await scriptFleet();
    const agent = await enroll(app, key);
    const ws = new WebSocket(`${app.url.replace('http', 'ws')}/api/v1/agents/${agent.agentId}/ws`, { headers: { authorization: `Bearer ${agent.authToken}` } });
    const received: any[] = [];
    ws.on('message', (data) => received.push(JSON.parse(data.toString())));
    await new Promise((resolve, reject) => (ws.once('open', resolve), ws.once('error', reject)));
    try {
      const script = await createScript(author.as, { parameters: [{ name: 'apiKey', type: 'string', secret: true }] });
      const { executions } = await execute(operator.as, script.id, { deviceIds: [agent.deviceId], parameters: { apiKey: 'sk-live-123' } });
      const pushed = await eventually(() => received.find((m) => m.type === 'command'), 10_000, 'the pushed command');
      expect(pushed.command).toMatchObject({ type: 'run_script', payload: { executionId: executions[0]!.id, parameters: { apiKey: 'sk-live-123' } } });
      ws.send(JSON.stringify({ type: 'result', commandId: pushed.command.id, status: 'running' }));
      await eventually(async () => (await executionOf(operator.as, executions[0]!.id)).status === 'running', 10_000, 'running');
      ws.send(JSON.stringify({ type: 'result', commandId: pushed.command.id, status: 'completed', exitCode: 0, stdout: 'pushed' }));
      await eventually(async () => (await executionOf(operator.as, executions[0]!.id)).status === 'completed', 10_000, 'completed');
      expect(await executionOf(operator.as, executions[0]!.id)).toMatchObject({ stdout: 'pushed', parameters: { apiKey: '********' } });
    } finally {
      ws.close();
    }
  });
});

describe('secrets', () => {
  test('secret values are sealed in every table, masked in every answer and unsealed for the agent only', async () => {
    const { key, author, operator, tech } = await scriptFleet();
    const agent = await enroll(app, key);
    const secretDefault = `default-secret-${Math.random().toString(36).slice(2)}`;
    const secretValue = `given-secret-${Math.random().toString(36).slice(2)}`;
    const script = await createScript(author.as, {
      parameters: [
        { name: 'token', type: 'string', secret: true, default: secretDefault },
        { name: 'password', type: 'string', secret: true },
        { name: 'user', type: 'string', default: 'svc' },
      ],
    });
    expect(script.parameters[0]).toMatchObject({ name: 'token', secret: true, default: '********' });
    // PUT with the mask keeps the stored secret default.
    const put = await rest(app, author.as).put(`/scripts/${script.id}`, { name: script.name, language: 'bash', content: 'echo "$user"', parameters: script.parameters });
    expect([put.status, put.body.message]).toEqual([200, undefined]);

    const result = await execute(operator.as, script.id, { deviceIds: [agent.deviceId], parameters: { password: secretValue } });
    const executionId = result.executions[0]!.id;
    const answers = [JSON.stringify(await executionOf(operator.as, executionId)), JSON.stringify((await rest(app, tech.as).get(`/devices/${agent.deviceId}/commands`)).body)];
    answers.push(JSON.stringify((await rest(app, operator.as).get(`/scripts/${script.id}/executions`)).body), JSON.stringify((await rest(app, author.as).get(`/scripts/${script.id}`)).body));
    for (const answer of answers) {
      expect(answer).not.toContain(secretDefault);
      expect(answer).not.toContain(secretValue);
    }
    expect((await executionOf(operator.as, executionId)).parameters).toEqual({ token: '********', password: '********', user: 'svc' });

    const [command] = await heartbeat(agent);
    expect(command!.payload.parameters).toEqual({ token: secretDefault, password: secretValue, user: 'svc' });
    await report(agent, command!.id, { status: 'completed', exitCode: 0, stdout: 'done' });

    // No table holds either plaintext, in any row or column (jobs and the outbox included).
    const tables = await sql(app, `select table_schema, table_name from information_schema.tables where table_schema not in ('pg_catalog', 'information_schema') and table_type = 'BASE TABLE'`);
    for (const { table_schema, table_name } of tables) {
      const hits = await sql(app, `select count(*)::int as n from "${table_schema}"."${table_name}" t where t::text like ? or t::text like ?`, [`%${secretDefault}%`, `%${secretValue}%`]);
      expect([table_name, hits[0].n]).toEqual([table_name, 0]);
    }
  });
});

describe('secrets across organizations', () => {
  test("command views mask secret values, and a sealed value copied into another organization's command is never opened", async () => {
    const { key, author, operator, tech } = await scriptFleet();
    const agent = await enroll(app, key);
    const secret = `copied-secret-${Math.random().toString(36).slice(2)}`;
    const script = await createScript(author.as, { parameters: [{ name: 'apiKey', type: 'string', secret: true }] });
    await execute(operator.as, script.id, { deviceIds: [agent.deviceId], parameters: { apiKey: secret } });
    const [listed] = (await rest(app, tech.as).get(`/devices/${agent.deviceId}/commands`)).body.data;
    expect(listed.payload.parameters).toEqual({ apiKey: '********' });

    // Another organization's technician, with the sealed text (as a command view showed it before) and an agent of their own.
    const [{ sealed }] = await sql(app, `select payload->'parameters'->'apiKey'->>'sealed' as sealed from device_command where id = ?`, [listed.id]);
    const other = await scriptFleet();
    const theirs = await enroll(app, other.key);
    const copied = { language: 'bash', content: 'echo "$apiKey"', parameters: { apiKey: { sealed } } };
    const refused = await rest(app, other.tech.as).post(`/devices/${theirs.deviceId}/commands`, { type: 'run_script', payload: copied });
    expect([refused.status, refused.body.code]).toEqual([400, 'VALIDATION_ERROR']);
    // Even stored (a row from before that rule), nothing opens it: only an execution's own values reach the agent.
    const forged = crypto.randomUUID();
    await sql(
      app,
      `insert into device_command (id, created_at, updated_at, device_id, org_id, type, payload, timeout_at) values (?, now(), now(), ?, ?, 'run_script', ?::jsonb, now() + interval '1 hour')`,
      [forged, theirs.deviceId, theirs.orgId, JSON.stringify(copied)],
    );
    const beat = await agentCall(app, theirs, '/heartbeat', { agentVersion: '1.0.0' });
    expect([beat.status, beat.body.commands]).toEqual([200, []]);
    expect((await sql(app, 'select status from device_command where id = ?', [forged]))[0].status).toBe('failed');
  });
});

describe('timeouts and cancelling', () => {
  test("cancelling an execution's run_script command on its device cancels the execution", async () => {
    const { key, author, operator, tech } = await scriptFleet();
    const agent = await enroll(app, key);
    const script = await createScript(author.as, {});
    const cancelCommandOf = async (executionId: string) => {
      const { commandId } = await executionOf(operator.as, executionId);
      const res = await rest(app, tech.as).post(`/devices/${agent.deviceId}/commands/${commandId}/cancel`);
      expect([res.status, res.body.status]).toEqual([200, 'cancelled']);
      expect(await executionOf(operator.as, executionId)).toMatchObject({ status: 'cancelled', completedAt: expect.any(String) });
    };
    const pending = (await execute(operator.as, script.id, { deviceIds: [agent.deviceId] })).executions[0]!;
    await cancelCommandOf(pending.id);
    expect(await heartbeat(agent)).toEqual([]);
    // Handed out already: the agent is told to stop it.
    const queued = (await execute(operator.as, script.id, { deviceIds: [agent.deviceId] })).executions[0]!;
    expect((await heartbeat(agent)).map((c) => c.type)).toEqual(['run_script']);
    await cancelCommandOf(queued.id);
    expect((await heartbeat(agent)).map((c) => [c.type, c.payload])).toEqual([['cancel_script', { executionId: queued.id }]]);
  });

  test('a device decommissioned or moved to another organization takes its unfinished executions with its commands', async () => {
    const { org, key, author, operator } = await scriptFleet();
    const script = await createScript(author.as, {});
    const partnerTech = rest(app, (await buildUser(app, { partnerId: org.partnerId, role: 'Partner Technician' })).as);

    const retired = await enroll(app, key);
    const waiting = (await execute(operator.as, script.id, { deviceIds: [retired.deviceId] })).executions[0]!;
    expect((await partnerTech.delete(`/devices/${retired.deviceId}`)).status).toBe(204);
    expect(await executionOf(operator.as, waiting.id)).toMatchObject({ status: 'cancelled', completedAt: expect.any(String) });

    // Moved while its agent runs the script: the execution ends, and the agent (still the machine's) is told to stop.
    const mover = await enroll(app, key);
    const running = (await execute(operator.as, script.id, { deviceIds: [mover.deviceId] })).executions[0]!;
    const [command] = await heartbeat(mover);
    await report(mover, command!.id, { status: 'running' });
    const sibling = await buildOrg(app, { partnerId: org.partnerId });
    expect((await partnerTech.post(`/devices/${mover.deviceId}/move-org`, { orgId: sibling.id })).status).toBe(200);
    expect(await executionOf(operator.as, running.id)).toMatchObject({ status: 'cancelled', completedAt: expect.any(String) });
    expect((await heartbeat(mover)).map((c) => [c.type, c.payload])).toEqual([['cancel_script', { executionId: running.id }]]);
  });

  test('an execution not finished by its timeout plus the grace minute turns timeout', async () => {
    const { key, author, operator } = await scriptFleet();
    const agent = await enroll(app, key);
    const script = await createScript(author.as, { timeoutSeconds: 30 });
    const { executions } = await execute(operator.as, script.id, { deviceIds: [agent.deviceId] });
    const [command] = await heartbeat(agent);
    await report(agent, command!.id, { status: 'running' });
    clock.advance(20_000);
    expect((await executionOf(operator.as, executions[0]!.id)).status).toBe('running');
    clock.advance(75_000);
    await eventually(async () => (await executionOf(operator.as, executions[0]!.id)).status === 'timeout', 15_000, 'the execution to time out');
    expect(await executionOf(operator.as, executions[0]!.id)).toMatchObject({ status: 'timeout', completedAt: expect.any(String) });
    expect((await sql(app, `select status from device_command where id = ?`, [command!.id]))[0].status).toBe('timeout');
    expect(await sql(app, `select type from outbox_event where type = 'script.failed' and data->>'executionId' = ?`, [executions[0]!.id])).toHaveLength(1);
    // A late result changes nothing.
    await report(agent, command!.id, { status: 'completed', exitCode: 0 });
    expect((await executionOf(operator.as, executions[0]!.id)).status).toBe('timeout');
  });

  test('cancelling a pending execution cancels its command: the agent never gets it', async () => {
    const { key, author, operator } = await scriptFleet();
    const agent = await enroll(app, key);
    const script = await createScript(author.as, {});
    const { executions } = await execute(operator.as, script.id, { deviceIds: [agent.deviceId] });
    const cancelled = await rest(app, operator.as).post(`/scripts/executions/${executions[0]!.id}/cancel`);
    expect([cancelled.status, cancelled.body.status]).toEqual([200, 'cancelled']);
    expect(await heartbeat(agent)).toEqual([]);
    const again = await rest(app, operator.as).post(`/scripts/executions/${executions[0]!.id}/cancel`);
    expect([again.status, again.body.code]).toEqual([409, 'CONFLICT']);
  });

  test('cancelling a queued or running execution sends cancel_script; its late result is ignored', async () => {
    const { key, author, operator } = await scriptFleet();
    const agent = await enroll(app, key);
    const script = await createScript(author.as, {});
    const queued = (await execute(operator.as, script.id, { deviceIds: [agent.deviceId] })).executions[0]!;
    const running = (await execute(operator.as, script.id, { deviceIds: [agent.deviceId] })).executions[0]!;
    const [forQueued, forRunning] = await heartbeat(agent);
    await report(agent, forRunning!.id, { status: 'running' });

    for (const execution of [queued, running]) {
      const res = await rest(app, operator.as).post(`/scripts/executions/${execution.id}/cancel`);
      expect([res.status, res.body.status]).toEqual([200, 'cancelled']);
    }
    const sent = await heartbeat(agent);
    expect(sent.map((c) => [c.type, c.payload])).toEqual([
      ['cancel_script', { executionId: queued.id }],
      ['cancel_script', { executionId: running.id }],
    ]);
    await report(agent, forQueued!.id, { status: 'completed', exitCode: 0, stdout: 'too late' });
    expect(await executionOf(operator.as, queued.id)).toMatchObject({ status: 'cancelled', stdout: null });
  });
});

describe('access', () => {
  test('another organization’s scripts, executions and devices are not found, over REST and GraphQL', async () => {
    const mine = await scriptFleet();
    const theirs = await scriptFleet();
    const agent = await enroll(app, mine.key);
    const theirAgent = await enroll(app, theirs.key);
    const script = await createScript(mine.author.as, {});
    const { executions } = await execute(mine.operator.as, script.id, { deviceIds: [agent.deviceId] });
    const outsider = rest(app, theirs.operator.as);
    for (const res of [
      await outsider.post(`/scripts/${script.id}/execute`, { deviceIds: [theirAgent.deviceId] }),
      await outsider.get(`/scripts/${script.id}/executions`),
      await outsider.get(`/scripts/executions/${executions[0]!.id}`),
      await outsider.post(`/scripts/executions/${executions[0]!.id}/cancel`),
    ]) {
      expect([res.status, res.body.code]).toEqual([404, 'NOT_FOUND']);
    }
    // Their own script on a device of mine: that device is not found.
    const theirScript = await createScript(theirs.author.as, {});
    const res = await outsider.post(`/scripts/${theirScript.id}/execute`, { deviceIds: [agent.deviceId] });
    expect([res.status, res.body.message]).toEqual([404, 'Device not found']);
    const myGroup = await rest(app, mine.tech.as).post('/groups', { name: 'Mine', type: 'static' });
    const byGroup = await outsider.post(`/scripts/${theirScript.id}/execute`, { groupId: myGroup.body.id });
    expect([byGroup.status, byGroup.body.message]).toEqual([404, 'Group not found']);

    const graph = await gql(app, theirs.operator.as, `query ($id: ID!) { scriptExecution(id: $id) { id status } }`, { id: executions[0]!.id });
    expect(graph.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const cancel = await gql(app, theirs.operator.as, `mutation ($id: ID!) { cancelScriptExecution(id: $id) { id } }`, { id: executions[0]!.id });
    expect(cancel.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    expect((await executionOf(mine.operator.as, executions[0]!.id)).status).toBe('pending');
  });

  test('users limited to some sites run scripts on, and see executions of, their sites’ devices only', async () => {
    const { org, api, author, operator } = await scriptFleet();
    const [siteA, siteB] = [await buildSite(app, org.id), await buildSite(app, org.id)];
    const keyA = (await api.post('/enrollment-keys', { name: 'A', siteId: siteA.id })).body.key;
    const keyB = (await api.post('/enrollment-keys', { name: 'B', siteId: siteB.id })).body.key;
    const [inA, inB] = [await enroll(app, keyA), await enroll(app, keyB)];
    const limited = await buildUser(app, { orgId: org.id, can: ['scripts:read', 'scripts:execute'] });
    await sql(app, `update membership set site_ids = ?::jsonb where id = ?`, [JSON.stringify([siteA.id]), limited.membership.id]);
    const script = await createScript(author.as, {});
    const all = await execute(operator.as, script.id, { deviceIds: [inA.deviceId, inB.deviceId] });
    const onB = all.executions.find((e) => e.deviceId === inB.deviceId)!;

    const refused = await rest(app, limited.as).post(`/scripts/${script.id}/execute`, { deviceIds: [inB.deviceId] });
    expect([refused.status, refused.body.message]).toEqual([404, 'Device not found']);
    await execute(limited.as, script.id, { deviceIds: [inA.deviceId] });
    const listed = await rest(app, limited.as).get(`/scripts/${script.id}/executions`);
    expect(listed.body.data.map((e: { deviceId: string }) => e.deviceId)).toEqual([inA.deviceId, inA.deviceId]);
    expect((await rest(app, limited.as).get(`/scripts/executions/${onB.id}`)).status).toBe(404);
    expect((await rest(app, limited.as).post(`/scripts/executions/${onB.id}/cancel`)).status).toBe(404);
    expect((await rest(app, operator.as).get(`/scripts/${script.id}/executions`)).body.pagination.total).toBe(3);
  });

  test('running a script needs scripts:execute; writing one is not enough', async () => {
    const { key, author } = await scriptFleet();
    const agent = await enroll(app, key);
    const script = await createScript(author.as, {});
    const res = await rest(app, author.as).post(`/scripts/${script.id}/execute`, { deviceIds: [agent.deviceId] });
    expect([res.status, res.body.code]).toEqual([403, 'FORBIDDEN']);
  });
});
