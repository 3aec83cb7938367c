import WebSocket from 'ws';
import { authenticate } from '../src/auth/authenticate.js';
import { RequestContext } from '../src/auth/context.js';
import { AppError } from '../src/errors.js';
import { callAgent } from '../src/services/devices/agent-channel.js';
import { createTestApp, type TestApp } from './support/app.js';
import { rest } from './support/clients.js';
import { sql } from './support/db.js';
import { eventually } from './support/eventually.js';
import { agentCall, enroll, fleet, type EnrolledAgent } from './support/devices.js';
import { buildUser } from './support/factories.js';

type Message = { type: string } & Record<string, any>;

/** A test agent's channel: every message it received, in order, and a way to wait for the next that matches. */
class Channel {
  readonly received: Message[] = [];
  closed: { code: number; reason: string } | null = null;
  private waiters: { match: (m: Message) => boolean; resolve: (m: Message) => void }[] = [];

  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data) => {
      const message = JSON.parse(data.toString()) as Message;
      this.received.push(message);
      for (const waiter of [...this.waiters]) {
        if (waiter.match(message)) {
          this.waiters.splice(this.waiters.indexOf(waiter), 1);
          waiter.resolve(message);
        }
      }
    });
    ws.on('close', (code, reason) => (this.closed = { code, reason: reason.toString() }));
  }

  static open(app: TestApp, agent: { agentId: string; authToken: string }): Promise<Channel> {
    const ws = new WebSocket(`${app.url.replace('http', 'ws')}/api/v1/agents/${agent.agentId}/ws`, { headers: { authorization: `Bearer ${agent.authToken}` } });
    const channel = new Channel(ws);
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(channel));
      ws.once('unexpected-response', (_req, res) => reject(new Error(`upgrade refused: ${res.statusCode}`)));
      ws.once('error', reject);
    });
  }

  send(message: Record<string, unknown> | string): void {
    this.ws.send(typeof message === 'string' ? message : JSON.stringify(message));
  }

  /** The first message (already received or still to come) that matches. */
  next(match: (m: Message) => boolean, what: string, timeoutMs = 10_000): Promise<Message> {
    const found = this.received.find(match);
    if (found) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}; received ${JSON.stringify(this.received.map((m) => m.type))}`)), timeoutMs);
      this.waiters.push({ match, resolve: (m) => (clearTimeout(timer), resolve(m)) });
    });
  }

  waitClosed(timeoutMs = 10_000): Promise<{ code: number; reason: string }> {
    return eventually(() => this.closed ?? undefined, timeoutMs, 'the channel to close');
  }

  close(): void {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.close();
  }
}

/** An upgrade the server refuses: its HTTP status and JSON body. */
function refusedUpgrade(app: TestApp, agentId: string, headers: Record<string, string>): Promise<{ status: number; body: any }> {
  const ws = new WebSocket(`${app.url.replace('http', 'ws')}/api/v1/agents/${agentId}/ws`, { headers });
  return new Promise((resolve, reject) => {
    ws.once('open', () => reject(new Error('the upgrade was accepted')));
    ws.once('unexpected-response', (_req, res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, body: JSON.parse(text) }));
    });
    ws.once('error', () => {});
  });
}

const channels: Channel[] = [];
async function open(app: TestApp, agent: EnrolledAgent): Promise<Channel> {
  const channel = await Channel.open(app, agent);
  channels.push(channel);
  return channel;
}

describe('two instances on one database', () => {
  let a: TestApp;
  let b: TestApp;

  beforeAll(async () => {
    a = await createTestApp({ start: { tunables: { agentChannel: { acceptTimeoutMs: 1_000 } } } });
    b = await createTestApp({ databaseUrl: a.databaseUrl, start: { tunables: { agentChannel: { acceptTimeoutMs: 1_000 } } } });
  });
  afterAll(async () => {
    for (const channel of channels) channel.close();
    await b.stop();
    await a.stop();
  });

  test('a command queued through instance B is pushed over the channel held by A; its result over the channel completes it', async () => {
    const { tech, key } = await fleet(a);
    const agent = await enroll(a, key, 'pushed');
    const channel = await open(a, agent);

    const queued = await rest(b, tech.as).post(`/devices/${agent.deviceId}/commands`, { type: 'collect_logs', payload: { script: 'echo hi' } });
    expect(queued.status).toBe(201);
    const pushed = await channel.next((m) => m.type === 'command', 'the pushed command');
    expect(pushed).toEqual({ type: 'command', command: { id: queued.body.id, type: 'collect_logs', payload: { script: 'echo hi' } } });
    expect((await rest(b, tech.as).get(`/devices/${agent.deviceId}/commands`)).body.data[0]).toMatchObject({ id: queued.body.id, status: 'sent' });

    channel.send({ type: 'result', commandId: queued.body.id, status: 'completed', exitCode: 0, stdout: 'hi\n', result: { lines: 1 } });
    expect(await channel.next((m) => m.type === 'result_ack', 'the result ack')).toEqual({ type: 'result_ack', commandId: queued.body.id });
    expect((await rest(b, tech.as).get(`/devices/${agent.deviceId}/commands`)).body.data[0]).toMatchObject({
      id: queued.body.id,
      status: 'completed',
      exitCode: 0,
      stdout: 'hi\n',
      result: { lines: 1 },
    });
    // Answering twice changes nothing.
    channel.send({ type: 'result', commandId: queued.body.id, status: 'failed', exitCode: 1 });
    await eventually(() => channel.received.filter((m) => m.type === 'result_ack').length === 2, 10_000, 'the second ack');
    expect((await rest(b, tech.as).get(`/devices/${agent.deviceId}/commands`)).body.data[0]).toMatchObject({ status: 'completed', exitCode: 0 });
  });

  test('commands queued while the agent was away are pushed when it connects; heartbeats over the channel are answered', async () => {
    const { tech, key } = await fleet(a);
    const agent = await enroll(a, key, 'returning');
    const first = await rest(b, tech.as).post(`/devices/${agent.deviceId}/commands`, { type: 'refresh_inventory' });
    const second = await rest(b, tech.as).post(`/devices/${agent.deviceId}/commands`, { type: 'reboot' });
    const channel = await open(b, agent);
    await channel.next((m) => m.type === 'command' && m.command.id === second.body.id, 'the second command');
    expect(channel.received.filter((m) => m.type === 'command').map((m) => m.command.id)).toEqual([first.body.id, second.body.id]);

    channel.send({ type: 'heartbeat', agentVersion: '1.0.1', metrics: { cpuPercent: 7 } });
    expect(await channel.next((m) => m.type === 'heartbeat_ack', 'the heartbeat ack')).toEqual({ type: 'heartbeat_ack', commands: [], configUpdate: null, upgradeTo: null });
    expect((await rest(a, tech.as).get(`/devices/${agent.deviceId}`)).body).toMatchObject({ agentVersion: '1.0.1', metrics: { cpuPercent: 7 } });
  });

  test('pushes racing heartbeats (REST on B, channel on A) hand each command out exactly once', async () => {
    const { tech, key } = await fleet(a);
    const agent = await enroll(a, key, 'racing');
    const channel = await open(a, agent);
    const viaRest: string[] = [];
    let beating = true;
    const restBeats = (async () => {
      while (beating) {
        const res = await agentCall(b, agent, '/heartbeat', { agentVersion: '1.0.0' });
        expect(res.status).toBe(200);
        viaRest.push(...res.body.commands.map((c: { id: string }) => c.id));
      }
    })();
    const channelBeats = setInterval(() => channel.send({ type: 'heartbeat', agentVersion: '1.0.0' }), 10);

    const overChannel = () =>
      channel.received.flatMap((m) => (m.type === 'command' ? [m.command.id as string] : m.type === 'heartbeat_ack' ? m.commands.map((c: { id: string }) => c.id) : []));
    let ids: string[];
    try {
      const api = rest(b, tech.as);
      // In waves of five: enough to race, without taking every database connection of the test server.
      const queued = [];
      for (let wave = 0; wave < 6; wave++) {
        queued.push(...(await Promise.all(Array.from({ length: 5 }, (_, i) => api.post(`/devices/${agent.deviceId}/commands`, { type: 'collect_logs', payload: { n: wave * 5 + i } })))));
      }
      expect(queued.every((q) => q.status === 201)).toBe(true);
      ids = queued.map((q) => q.body.id as string).sort();
      await eventually(() => new Set([...viaRest, ...overChannel()]).size === ids.length, 15_000, 'every command handed out');
    } finally {
      clearInterval(channelBeats);
      beating = false;
      await restBeats;
    }

    const handed = [...viaRest, ...overChannel()].sort();
    expect(handed).toEqual(ids);
    expect(channel.received.some((m) => m.type === 'command')).toBe(true);
    const statuses = await sql(a, `select distinct status from device_command where device_id = ?`, [agent.deviceId]);
    expect(statuses).toEqual([{ status: 'sent' }]);
  });

  test('callAgent reaches the agent through either instance and resolves with its response; large answers cross the bus', async () => {
    const { key } = await fleet(a);
    const agent = await enroll(a, key, 'called');
    const channel = await open(a, agent);
    channel.ws.on('message', (data) => {
      const message = JSON.parse(data.toString()) as Message;
      if (message.type !== 'request') return;
      const result = message.method === 'system.big' ? { blob: 'x'.repeat(200_000) } : { echo: message.params, method: message.method };
      channel.send({ type: 'response', requestId: message.requestId, ok: message.method !== 'system.fail', ...(message.method === 'system.fail' ? { error: 'no such tool' } : { result }) });
    });

    const local = await callAgent(RequestContext.system(a.server.runtime, 'test'), agent.deviceId, 'system.info', { verbose: true }, { timeoutMs: 5_000 });
    expect(local).toEqual({ ok: true, result: { echo: { verbose: true }, method: 'system.info' } });
    const remote = await callAgent(RequestContext.system(b.server.runtime, 'test'), agent.deviceId, 'system.info', { via: 'b' }, { timeoutMs: 5_000 });
    expect(remote).toEqual({ ok: true, result: { echo: { via: 'b' }, method: 'system.info' } });
    const big = await callAgent(RequestContext.system(b.server.runtime, 'test'), agent.deviceId, 'system.big', {}, { timeoutMs: 10_000 });
    expect((big.result as { blob: string }).blob).toHaveLength(200_000);
    expect(await callAgent(RequestContext.system(b.server.runtime, 'test'), agent.deviceId, 'system.fail')).toEqual({ ok: false, error: 'no such tool' });
    const requests = channel.received.filter((m) => m.type === 'request');
    expect(requests[0]).toEqual({ type: 'request', requestId: expect.any(String), method: 'system.info', params: { verbose: true }, timeoutMs: 5_000 });
  });

  test('callAgent times out with 504, and answers 409 for a device without a channel', async () => {
    const { key } = await fleet(a);
    const silent = await enroll(a, key, 'silent');
    const channel = await open(a, silent);
    for (const via of [a, b]) {
      const started = Date.now();
      const error = await callAgent(RequestContext.system(via.server.runtime, 'test'), silent.deviceId, 'system.info', {}, { timeoutMs: 400 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AppError);
      expect(error).toMatchObject({ status: 504, code: 'AGENT_TIMEOUT' });
      expect(Date.now() - started).toBeGreaterThanOrEqual(390);
    }
    // The agent answering after the deadline is told nobody waits for it.
    const late = channel.received.find((m) => m.type === 'request')!;
    channel.send({ type: 'response', requestId: late.requestId, ok: true, result: {} });
    expect(await channel.next((m) => m.type === 'error' && m.requestId === late.requestId, 'the late answer refused')).toMatchObject({ code: 'NOT_FOUND' });

    const away = await enroll(a, key, 'away');
    for (const via of [a, b]) {
      await expect(callAgent(RequestContext.system(via.server.runtime, 'test'), away.deviceId, 'system.info', {}, { timeoutMs: 5_000 })).rejects.toMatchObject({
        status: 409,
        code: 'AGENT_NOT_CONNECTED',
        message: 'Agent not connected',
      });
    }
  });

  test("callAgent needs devices:execute on the device, as the caller's own access", async () => {
    const { org, key } = await fleet(a);
    const agent = await enroll(a, key, 'guarded');
    const viewer = await buildUser(a, { orgId: org.id, role: 'Organization Viewer' });
    const other = await fleet(a);
    const outsider = other.tech;
    const as = async (user: typeof viewer) => {
      const principal = await authenticate(a.server.runtime, { authorization: `Bearer ${user.token}`, apiKey: null });
      return RequestContext.create(a.server.runtime, principal);
    };
    await expect(callAgent(await as(viewer), agent.deviceId, 'system.info')).rejects.toMatchObject({ status: 403 });
    await expect(callAgent(await as(outsider), agent.deviceId, 'system.info')).rejects.toMatchObject({ status: 404 });
  });

  test("another device's token, no token and a malformed agent id are refused before the upgrade", async () => {
    const { key } = await fleet(a);
    const mine = await enroll(a, key, 'mine');
    const theirs = await enroll(a, key, 'theirs');
    const crossed = await refusedUpgrade(a, mine.agentId, { authorization: `Bearer ${theirs.authToken}` });
    expect(crossed).toEqual({ status: 401, body: { code: 'UNAUTHENTICATED', message: 'Invalid agent credentials' } });
    expect((await refusedUpgrade(b, mine.agentId, {})).status).toBe(401);
    expect((await refusedUpgrade(a, 'not-a-uuid', { authorization: `Bearer ${mine.authToken}` })).status).toBe(404);
    // Nothing of the device went out, and it was not marked seen through someone else's token.
    const [row] = await sql(a, 'select count(*)::int as n from outbox_event where data->>\'deviceId\' = ? and type = \'device.online\'', [mine.deviceId]);
    expect(row.n).toBe(0);
  });

  test('decommissioning closes the channel with 4410; re-enrolling closes the old token\'s channel with 4401', async () => {
    const { tech, key } = await fleet(a);
    const doomed = await enroll(a, key, 'doomed');
    const doomedChannel = await open(a, doomed);
    expect((await rest(b, tech.as).delete(`/devices/${doomed.deviceId}`)).status).toBe(204);
    expect(await doomedChannel.waitClosed()).toEqual({ code: 4410, reason: 'Device decommissioned' });
    expect((await refusedUpgrade(a, doomed.agentId, { authorization: `Bearer ${doomed.authToken}` })).status).toBe(401);

    const first = await enroll(a, key, 'phoenix', { machineId: 'machine-phoenix' });
    const oldChannel = await open(b, first);
    const second = await enroll(a, key, 'phoenix', { machineId: 'machine-phoenix' }, first.authToken);
    expect(second.deviceId).toBe(first.deviceId);
    expect(await oldChannel.waitClosed()).toEqual({ code: 4401, reason: 'Agent credentials replaced' });
    expect(await refusedUpgrade(b, first.agentId, { authorization: `Bearer ${first.authToken}` })).toEqual({ status: 401, body: { code: 'UNAUTHENTICATED', message: 'Invalid agent credentials' } });
    const newChannel = await open(a, second);
    newChannel.send({ type: 'heartbeat', agentVersion: '1.0.0' });
    await newChannel.next((m) => m.type === 'heartbeat_ack', 'a heartbeat on the new token');
  });

  test('a second channel of the same agent, on the other instance, replaces the first (4409)', async () => {
    const { key } = await fleet(a);
    const agent = await enroll(a, key, 'twice');
    const older = await open(a, agent);
    const newer = await open(b, agent);
    expect(await older.waitClosed()).toEqual({ code: 4409, reason: 'Replaced by a newer connection' });
    newer.send({ type: 'heartbeat', agentVersion: '1.0.0' });
    await newer.next((m) => m.type === 'heartbeat_ack', 'the newer channel working');
    expect(newer.closed).toBeNull();
  });

  test('an answer nested too deep to forward is refused; the call times out and both instances keep serving', async () => {
    const { key } = await fleet(a);
    const agent = await enroll(a, key, 'hostile');
    const channel = await open(a, agent);
    const deep = `${'{"n":'.repeat(100_000)}{}${'}'.repeat(100_000)}`;
    channel.ws.on('message', (data) => {
      const message = JSON.parse(data.toString()) as Message;
      if (message.type === 'request') channel.send(`{"type":"response","requestId":"${message.requestId}","ok":true,"result":${deep}}`);
    });
    await expect(callAgent(RequestContext.system(b.server.runtime, 'test'), agent.deviceId, 'system.info', {}, { timeoutMs: 1_000 })).rejects.toMatchObject({ status: 504, code: 'AGENT_TIMEOUT' });
    expect(await channel.next((m) => m.type === 'error' && m.replyTo === 'response', 'the refused answer')).toMatchObject({ code: 'VALIDATION_ERROR', message: expect.stringContaining('nest') });
    channel.send({ type: 'heartbeat', agentVersion: '1.0.0' });
    await channel.next((m) => m.type === 'heartbeat_ack', 'a heartbeat answered afterwards');
    expect((await agentCall(b, agent, '/heartbeat', { agentVersion: '1.0.0' })).status).toBe(200);
  });

  test('invalid messages are answered with an error; a message over 1 MiB closes the channel (1009)', async () => {
    const { key } = await fleet(a);
    const agent = await enroll(a, key, 'noisy');
    const channel = await open(a, agent);
    channel.send('not json');
    expect(await channel.next((m) => m.type === 'error', 'the JSON error')).toEqual({ type: 'error', code: 'VALIDATION_ERROR', message: 'Message is not valid JSON' });
    channel.send({ type: 'dance' });
    expect(await channel.next((m) => m.type === 'error' && /Unknown message type/.test(m.message), 'the type error')).toMatchObject({ code: 'VALIDATION_ERROR' });
    channel.send({ type: 'heartbeat' });
    expect(await channel.next((m) => m.type === 'error' && m.replyTo === 'heartbeat', 'the heartbeat error')).toMatchObject({ code: 'VALIDATION_ERROR', message: expect.stringContaining('agentVersion') });
    const missing = '00000000-0000-4000-8000-000000000000';
    channel.send({ type: 'result', commandId: missing, status: 'completed' });
    expect(await channel.next((m) => m.type === 'error' && m.commandId === missing, 'the unknown command')).toEqual({
      type: 'error',
      replyTo: 'result',
      commandId: missing,
      code: 'NOT_FOUND',
      message: 'Command not found',
    });
    expect(channel.closed).toBeNull();

    channel.send({ type: 'heartbeat', agentVersion: '1.0.0', padding: 'x'.repeat(1024 * 1024) });
    expect((await channel.waitClosed()).code).toBe(1009);
  });
});

describe('presence', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await createTestApp({ env: { DEVICE_OFFLINE_AFTER_SECONDS: '2' } });
  });
  afterAll(async () => {
    for (const channel of channels) channel.close();
    await app.stop();
  });

  test('a connected device stays online through the sweep while a silent one goes offline, and connecting brings it back online', async () => {
    const { tech, key } = await fleet(app);
    const connected = await enroll(app, key, 'connected');
    const silent = await enroll(app, key, 'silent');
    await open(app, connected);
    const status = async (agent: EnrolledAgent) => (await rest(app, tech.as).get(`/devices/${agent.deviceId}`)).body.status as string;

    // Both enrolled together: once the sweep has found the silent one, it has judged the connected one too.
    await eventually(async () => (await status(silent)) === 'offline', 15_000, 'the silent device to go offline');
    expect(await status(connected)).toBe('online');
    await eventually(async () => (await sql(app, `select count(*)::int as n from outbox_event where type = 'device.offline' and data->>'deviceId' = ?`, [silent.deviceId]))[0].n > 0, 5_000, 'the sweep event');
    const [seen] = await sql(app, 'select last_seen_at from device where id = ?', [connected.deviceId]);
    expect(Date.now() - new Date(seen.last_seen_at).getTime()).toBeLessThan(2_000);

    await open(app, silent);
    await eventually(async () => (await status(silent)) === 'online', 5_000, 'the returning device online');
    const events = await sql(app, `select type from outbox_event where data->>'deviceId' = ? order by created_at`, [silent.deviceId]);
    expect(events.map((e) => e.type)).toEqual(['device.enrolled', 'device.offline', 'device.online']);
    const quiet = await sql(app, `select type from outbox_event where data->>'deviceId' = ? order by created_at`, [connected.deviceId]);
    expect(quiet.map((e) => e.type)).toEqual(['device.enrolled']);
  });
});
