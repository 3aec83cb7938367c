/**
 * The device figures of `npm run bench` (sections `heartbeats`, `device-list`, `device-events`;
 * `devices` runs the three), each printed beside a ceiling measured in the same run:
 *
 * - heartbeats: BENCH_AGENTS (default 2,000) devices written straight into one organization with
 *   known agent tokens, then BENCH_HEARTBEAT_CONNECTIONS (default 50) keep-alive connections send
 *   `POST /api/v1/agents/:agentId/heartbeat` with the real Bearer tokens, spread over every device,
 *   for BENCH_HEARTBEAT_SECONDS (default 10) after a 2 s warm-up. Ceiling: the same generator
 *   against a plain `node:http` JSON server. Beside it, the heartbeat's own statement sent once per
 *   heartbeat by a bare `pg` pool (no HTTP, no ORM, no batching): what the shared statements save. Also the statements one heartbeat sends to PostgreSQL, and the CPU
 *   each heartbeat costs the server process and PostgreSQL's backends. Then the same load again with
 *   50 enabled alert rules in the organization (`routeWithAlertRules`, `alertEvaluationCostPercent`).
 * - device-list: BENCH_LIST_DEVICES (default 100,000) devices in one organization (generate_series),
 *   `GET /api/v1/devices?limit=50` as an Organization Technician (signed in), sorted by hostname (asc)
 *   and by lastSeen (desc), first page and the page after row 50,000 (its cursor the one the server
 *   hands out there, reached by walking the list 1,000 rows at a time; checked to start at the row
 *   after), BENCH_LIST_SAMPLES requests one at a time. Ceiling: the SQL the server ran, sent by a
 *   bare `pg` client. Plus `EXPLAIN ANALYZE` of the deep page's query.
 * - device-events: a graphql-ws client subscribed to `deviceStatusChanged(orgId)` as the technician;
 *   a device set offline in the database (no event) is brought back by its heartbeat, and its
 *   `online` message is timed from the heartbeat's answer to the subscription message,
 *   BENCH_TRANSITIONS (default 200) times. Ceilings: one PostgreSQL NOTIFY → LISTEN hop between bare
 *   `pg` clients (the path has two), and a plain graphql-js schema's subscription over graphql-ws
 *   (publish → client message).
 */
import crypto from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { buildSchema } from 'graphql';
import { createClient, type Client } from 'graphql-ws';
import { useServer } from 'graphql-ws/use/ws';
import pg from 'pg';
import WebSocket, { WebSocketServer } from 'ws';
import { RequestContext } from '../auth/context.js';
import { DOMAIN_EVENT_TOPIC } from '../events/dispatcher.js';
import { sha256Hex } from '../secrets.js';
import { createAlertRule } from '../services/alerts/alert-rules.js';
import type { RunningServer } from '../server.js';
import { percentiles, runLoad, type LoadRequest } from './bench-load.js';
import {
  Meter,
  benchOrg,
  bounded,
  captureQueries,
  cursorAfterRow,
  explain,
  failures,
  loadFigures,
  metered,
  notifyHop,
  portOf,
  print,
  request,
  round,
  serverQueries,
  shapeOf,
  signedInGetter,
  signedInUser,
  statementShapes,
  timeSql,
  withPlainServer,
  withPool,
  type BenchSection,
  type Statement,
} from './bench-support.js';
import { DEVICE_STATUS_SUBSCRIPTION, type DeviceStatusChange } from './simulator.js';

const AGENTS = bounded('BENCH_AGENTS', 2000, 100_000);
const HEARTBEAT_CONNECTIONS = bounded('BENCH_HEARTBEAT_CONNECTIONS', 50, 1000);
const HEARTBEAT_SECONDS = bounded('BENCH_HEARTBEAT_SECONDS', 10, 300);
const LIST_DEVICES = bounded('BENCH_LIST_DEVICES', 100_000, 1_000_000);
const LIST_SAMPLES = bounded('BENCH_LIST_SAMPLES', 200, 10_000);
const TRANSITIONS = bounded('BENCH_TRANSITIONS', 200, 5000);
const PAGE = 50;
/** the deep page starts after this row (half the fleet when it is smaller than 100,000) */
const DEEP_ROW = Math.max(PAGE, Math.min(50_000, Math.floor(LIST_DEVICES / 2)));

export const DEVICE_SECTIONS = {
  heartbeats: (server) => withPool(server.runtime, (pool) => heartbeats(server, pool)),
  'device-list': (server) => withPool(server.runtime, (pool) => deviceList(server, pool)),
  'device-events': (server) => withPool(server.runtime, (pool) => deviceEvents(server, pool)),
} satisfies Record<string, BenchSection>;

// ── heartbeats ──────────────────────────────────────────────────────────────────────────────────

/** What a heartbeat answers when there is nothing to hand out: the plain server's answer. */
const IDLE_HEARTBEAT_ANSWER = JSON.stringify({ commands: [], configUpdate: null, upgradeTo: null });

async function heartbeats(server: RunningServer, pool: pg.Pool): Promise<boolean> {
  const port = portOf(server);
  const orgId = await benchOrg(server.runtime, 'Bench heartbeats');
  const seedStarted = performance.now();
  const agents = await seedAgents(pool, orgId, AGENTS);
  console.log(
    `bench: heartbeats — ${AGENTS} devices seeded in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s; ${HEARTBEAT_CONNECTIONS} connections, ${HEARTBEAT_SECONDS} s after a 2 s warm-up`,
  );
  const load = { requests: agents.map(heartbeatRequest), connections: HEARTBEAT_CONNECTIONS, warmupMs: 2000, durationMs: HEARTBEAT_SECONDS * 1000 };

  const ceiling = await withPlainServer(
    (body) => (JSON.parse(body || '{}'), IDLE_HEARTBEAT_ANSWER),
    (plainPort) => metered(pool, (onWindow) => runLoad({ ...load, port: plainPort, warmupMs: 1000, durationMs: 5000 }, onWindow)),
  );
  // The statements of 50 heartbeats, one at a time, each captured on its own.
  const sample = agents.slice(0, 50);
  const captured: Statement[][] = [];
  for (const agent of sample) captured.push((await captureQueries(() => request(port, heartbeatRequest(agent)), pool)).queries);
  const shapes = statementShapes(captured.flat(), sample.length);
  const unbatched = await replayStatements(pool, typicalCapture(sample, captured), agents, HEARTBEAT_CONNECTIONS, 5000);
  const measured = await metered(pool, (onWindow) => runLoad({ ...load, port }, onWindow));
  await seedAlertRules(server, orgId);
  // One heartbeat per device first: each instance reads a device's alert standing once, on its first heartbeat after start-up.
  for (let i = 0; i < agents.length; i += HEARTBEAT_CONNECTIONS) await Promise.all(agents.slice(i, i + HEARTBEAT_CONNECTIONS).map((agent) => request(port, heartbeatRequest(agent))));
  const capturedWithRules: Statement[][] = [];
  for (const agent of sample) capturedWithRules.push((await captureQueries(() => request(port, heartbeatRequest(agent)), pool)).queries);
  const withRules = await metered(pool, (onWindow) => runLoad({ ...load, port }, onWindow));

  print({
    heartbeats: {
      devices: AGENTS,
      connections: HEARTBEAT_CONNECTIONS,
      route: { ...loadFigures(measured.result), ...measured.usage },
      routeWithAlertRules: { rules: ALERT_RULES, ...loadFigures(withRules.result), ...withRules.usage, statementsPerHeartbeat: statementShapes(capturedWithRules.flat(), sample.length).perUnit },
      // Server CPU per heartbeat, not throughput: on a busy machine the rate moves more than evaluation costs.
      alertEvaluationCostPercent: round((withRules.usage.processCpuMsPerRequest / measured.usage.processCpuMsPerRequest - 1) * 100),
      ceilingPlainNodeHttp: { ...loadFigures(ceiling.result), ...ceiling.usage },
      unbatchedBarePgStatements: unbatched,
      statementsPerHeartbeat: shapes.perUnit,
      statements: shapes.list,
    },
  });
  return measured.result.statuses['200'] !== undefined && failures(measured.result) === 0 && failures(withRules.result) === 0;
}

const ALERT_RULES = 50;

/**
 * ALERT_RULES enabled rules watching the whole organization, on the metrics every heartbeat sends, with
 * thresholds no percentage passes: evaluation's steady cost (every rule evaluated on every heartbeat),
 * without the one-off writes of alerts being raised.
 */
async function seedAlertRules(server: RunningServer, orgId: string): Promise<void> {
  const metrics = ['cpuPercent', 'ramPercent', 'diskPercent'];
  for (let i = 0; i < ALERT_RULES; i++) {
    await createAlertRule(RequestContext.system(server.runtime, 'bench'), {
      orgId,
      name: `Bench rule ${i}`,
      targetType: 'organization',
      targetId: orgId,
      conditions: [{ type: 'metric', metric: metrics[i % metrics.length], operator: 'gt', threshold: 100, ...(i % 2 ? { durationSeconds: 300 } : {}) }],
      severity: 'medium',
    });
  }
}

/** A heartbeat as an agent sends it: its version and a few metrics (the same for a device every time). */
export function heartbeatRequest(agent: SeededAgent): LoadRequest {
  const metrics = { cpuPercent: (agent.index * 7) % 100, ramPercent: (agent.index * 13) % 100, diskPercent: (agent.index * 29) % 100 };
  return {
    method: 'POST',
    path: `/api/v1/agents/${agent.agentId}/heartbeat`,
    headers: { authorization: `Bearer ${agent.token}` },
    body: JSON.stringify({ agentVersion: '1.0.0', metrics }),
  };
}

/** The statements the most requests of the sample sent (the same shapes in the same order; a job's or the outbox poll's meanwhile differ), with the agent they were sent for. */
export function typicalCapture(sample: SeededAgent[], captured: Statement[][]): { agent: SeededAgent; statements: Statement[] } {
  const counts = new Map<string, number>();
  const keys = captured.map((statements) => statements.map((q) => shapeOf(q.text)).join('\n'));
  for (const key of keys) counts.set(key, (counts.get(key) ?? 0) + 1);
  const best = keys.indexOf([...counts.entries()].sort((a, b) => b[1] - a[1])[0]![0]);
  return { agent: sample[best]!, statements: captured[best]! };
}

/**
 * What PostgreSQL alone costs per request of an agent (a heartbeat, a report): the statements the route sent for one
 * (`typicalCapture`), sent again by a bare `pg` pool as large as the ORM's from `connections` closed
 * loops, each time with another device's agent id, device id and token hash in place of the
 * captured ones. No HTTP, no ORM; prepared statements keep their names.
 */
export async function replayStatements(pool: pg.Pool, template: { agent: SeededAgent; statements: Statement[] }, agents: SeededAgent[], connections: number, durationMs: number) {
  const from = [template.agent.agentId, template.agent.deviceId, sha256Hex(template.agent.token)];
  const swap = (value: unknown, to: string[]): unknown => (typeof value === 'string' ? from.reduce((text, id, i) => text.split(id).join(to[i]!), value) : value);
  const latencies: number[] = [];
  let failure: string | null = null;
  const meter = new Meter(pool);
  await meter.open();
  const stopAt = performance.now() + durationMs;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: connections }, async (_, c) => {
      for (let i = c; performance.now() < stopAt && failure === null; i += connections) {
        const agent = agents[i % agents.length]!;
        const to = [agent.agentId, agent.deviceId, sha256Hex(agent.token)];
        const sentAt = performance.now();
        const client = await pool.connect();
        let error: Error | undefined;
        try {
          for (const statement of template.statements) {
            await client.query({ ...(statement.name ? { name: statement.name } : {}), text: swap(statement.text, to) as string, values: statement.values?.map((v) => swap(v, to)) });
          }
        } catch (e) {
          // A statement that cannot be sent twice (an insert of a fixed id): no ceiling, and why.
          error = e as Error;
          failure ??= error.message;
        } finally {
          client.release(error);
        }
        if (!error) latencies.push(performance.now() - sentAt);
      }
    }),
  );
  const elapsed = performance.now() - started;
  await meter.close();
  if (failure !== null) return { statements: template.statements.length, failed: failure };
  const { p50, p99 } = percentiles(latencies);
  return { statements: template.statements.length, perSecond: Math.round((latencies.length / elapsed) * 1000), p50Ms: p50, p99Ms: p99, ...meter.perRequest(latencies.length) };
}

// ── device list ─────────────────────────────────────────────────────────────────────────────────

const LIST_SORTS = [
  { name: 'hostname', dir: 'asc', column: 'hostname' },
  { name: 'lastSeen', dir: 'desc', column: 'last_seen_at' },
] as const;

type DevicePage = { devices: { id: string }[]; nextCursor: string | null };

/** The list's own statement among those of a request (the ORM's select of devices). */
const DEVICE_SELECT = /^\s*select\b[\s\S]*\bfrom "?device"? as "?d0"?/i;

async function deviceList(server: RunningServer, pool: pg.Pool): Promise<boolean> {
  const port = portOf(server);
  const orgId = await benchOrg(server.runtime, 'Bench fleet');
  const { headers, get } = await signedInGetter(server.runtime, port, orgId, 'Organization Technician');
  const seedStarted = performance.now();
  await seedFleet(pool, orgId, LIST_DEVICES);
  console.log(`bench: device-list — ${LIST_DEVICES} devices seeded and analyzed in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s; ${LIST_SAMPLES} requests per figure, one at a time`);
  const figures: Record<string, unknown> = {};
  let ok = true;
  const plans: unknown[] = [];

  for (const sort of LIST_SORTS) {
    const order = `sort=${sort.name}&sortDir=${sort.dir}`;
    const base = `/api/v1/devices?limit=${PAGE}&${order}`;
    const cursor = await cursorAfterRow(get<DevicePage>, `/api/v1/devices?${order}`, DEEP_ROW, 1000, (page) => page.devices);
    const deep = `${base}&cursor=${encodeURIComponent(cursor)}`;
    // Row DEEP_ROW + 1 of the same order, by the bench's own SQL: the deep page must start there.
    const { rows } = await pool.query(`select id from device where org_id = $1 and status <> 'decommissioned' order by ${sort.column} ${sort.dir}, id ${sort.dir} offset $2 limit 1`, [orgId, DEEP_ROW]);
    const firstOfDeep = (await get<DevicePage>(deep)).devices[0]?.id;
    if (firstOfDeep !== (rows[0] as { id: string } | undefined)?.id) {
      console.error(`bench: the page after row ${DEEP_ROW} (${sort.name}) starts at ${firstOfDeep}, not at row ${DEEP_ROW + 1} (${(rows[0] as { id: string } | undefined)?.id})`);
      ok = false;
    }

    // The SQL the server runs for each page, to time it bare and to explain the deep one.
    const firstSql = await serverQueries(pool, port, base, headers, DEVICE_SELECT);
    const deepSql = await serverQueries(pool, port, deep, headers, DEVICE_SELECT);
    const one = { port, connections: 1, warmupMs: 300, durationMs: 60_000, maxCount: LIST_SAMPLES };
    const first = await runLoad({ ...one, requests: [{ method: 'GET', path: base, headers }] });
    const deepPage = await runLoad({ ...one, requests: [{ method: 'GET', path: deep, headers }] });
    ok = ok && failures(first) === 0 && failures(deepPage) === 0;
    figures[`${sort.name} ${sort.dir}`] = {
      firstPage: { ...loadFigures(first, false), ceilingBareSql: await timeSql(pool, firstSql, LIST_SAMPLES) },
      [`pageAfterRow${DEEP_ROW}`]: { ...loadFigures(deepPage, false), ceilingBareSql: await timeSql(pool, deepSql, LIST_SAMPLES) },
    };
    plans.push({ sort: `${sort.name} ${sort.dir}`, ...(await explain(pool, deepSql[0]!)) });
  }
  // What one list request sends to PostgreSQL (the first page by hostname, 20 times).
  const { queries } = await captureQueries(async () => {
    for (let i = 0; i < 20; i++) await get(`/api/v1/devices?limit=${PAGE}&sort=hostname`);
  }, pool);
  const shapes = statementShapes(queries, 20);
  print({
    deviceList: { devices: LIST_DEVICES, limit: PAGE, ...figures, statementsPerRequest: shapes.perUnit, statements: shapes.list, explainPageAfterRow: { row: DEEP_ROW, plans } },
  });
  return ok;
}

// ── device status events ────────────────────────────────────────────────────────────────────────

async function deviceEvents(server: RunningServer, pool: pg.Pool): Promise<boolean> {
  const { runtime } = server;
  const port = portOf(server);
  const orgId = await benchOrg(runtime, 'Bench events');
  const token = await signedInUser(runtime, port, orgId, 'Organization Technician');
  const CAPTURED = 20;
  const WARMUP = 10;
  const agents = await seedAgents(pool, orgId, WARMUP + TRANSITIONS + CAPTURED);
  console.log(`bench: device-events — ${TRANSITIONS} offline → online transitions one after another, subscribed to deviceStatusChanged`);

  // Epoch milliseconds (sub-millisecond), comparable with the outbox rows' times written by this process.
  const now = () => performance.timeOrigin + performance.now();
  const atInstance = new Map<string, number>();
  const atClient = new Map<string, number>();
  const waiting = new Map<string, () => void>();
  // When this instance's PubSub has the event back from PostgreSQL, before the subscription's filter and GraphQL.
  const off = runtime.pubsub.on(DOMAIN_EVENT_TOPIC, (payload) => {
    const event = payload as { type: string; data: { deviceId?: string } };
    if (event.type === 'device.online' && event.data.deviceId && !atInstance.has(event.data.deviceId)) atInstance.set(event.data.deviceId, now());
  });
  const client = createClient({ url: `ws://127.0.0.1:${port}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${token}` }, retryAttempts: 0, lazy: false });
  const failed: unknown[] = [];
  let unsubscribe: (() => void) | null = null;
  try {
    unsubscribe = client.subscribe<{ deviceStatusChanged: DeviceStatusChange }>(
      { query: DEVICE_STATUS_SUBSCRIPTION, variables: { orgId } },
      {
        next: (message) => {
          const at = now();
          const change = message.data?.deviceStatusChanged;
          if (message.errors?.length) failed.push(message.errors);
          if (change?.status !== 'online' || atClient.has(change.deviceId)) return;
          atClient.set(change.deviceId, at);
          waiting.get(change.deviceId)?.();
        },
        error: (error) => void failed.push(error),
        complete: () => {},
      },
    );

    /** Offline in the database (no event), then the heartbeat that brings it back; resolves when the subscriber has the event. */
    const transition = async (agent: SeededAgent, timeoutMs: number) => {
      await pool.query(`update device set status = 'offline', status_changed_at = now() where id = $1`, [agent.deviceId]);
      const arrived = new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), timeoutMs);
        waiting.set(agent.deviceId, () => {
          clearTimeout(timer);
          resolve(true);
        });
      });
      const sentAt = now();
      const answer = await request(port, heartbeatRequest(agent));
      const answeredAt = now();
      if (answer.status !== 200) throw new Error(`heartbeat: ${answer.status} ${JSON.stringify(answer.body)}`);
      const ok = await arrived;
      waiting.delete(agent.deviceId);
      return ok ? { sentAt, answeredAt } : null;
    };

    // graphql-ws acknowledges no subscribe: until a message arrives the subscription may not be live yet. Warm-up transitions, not counted.
    let live = false;
    for (const agent of agents.slice(0, WARMUP)) if (!live) live = (await transition(agent, 2000)) !== null;
    if (!live) throw new Error(`no subscription message after ${WARMUP} transitions (${failed.map((f) => JSON.stringify(f)).join('; ')})`);
    const measured = agents.slice(WARMUP, WARMUP + TRANSITIONS);
    const sent = new Map<string, { sentAt: number; answeredAt: number }>();
    let missed = 0;
    for (const agent of measured) {
      const times = await transition(agent, 5000);
      if (times) sent.set(agent.deviceId, times);
      else missed++;
    }
    // The statements of a transition: the heartbeat, the dispatcher's pass, the subscription's access check.
    const { queries } = await captureQueries(async () => {
      for (const agent of agents.slice(WARMUP + TRANSITIONS)) await transition(agent, 5000);
    }, pool);
    const shapes = statementShapes(queries, CAPTURED);

    const { rows } = await pool.query(`select data->>'deviceId' as device_id, created_at, dispatched_at from outbox_event where org_id = $1 and type = 'device.online'`, [orgId]);
    const outbox = new Map((rows as { device_id: string; created_at: Date; dispatched_at: Date | null }[]).map((r) => [r.device_id, r]));
    const stages = { fromAnswer: [] as number[], fromRequest: [] as number[], heartbeat: [] as number[], requestToOutboxRow: [] as number[], outboxRowToDispatched: [] as number[], dispatchedToInstance: [] as number[], instanceToClient: [] as number[] };
    for (const [deviceId, { sentAt, answeredAt }] of sent) {
      const client = atClient.get(deviceId)!;
      stages.fromAnswer.push(client - answeredAt);
      stages.fromRequest.push(client - sentAt);
      stages.heartbeat.push(answeredAt - sentAt);
      const row = outbox.get(deviceId);
      const instance = atInstance.get(deviceId);
      if (!row?.dispatched_at || instance === undefined) continue;
      stages.requestToOutboxRow.push(row.created_at.getTime() - sentAt);
      stages.outboxRowToDispatched.push(row.dispatched_at.getTime() - row.created_at.getTime());
      stages.dispatchedToInstance.push(instance - row.dispatched_at.getTime());
      stages.instanceToClient.push(client - instance);
    }

    print({
      deviceStatusToSubscriber: {
        subscription: 'deviceStatusChanged(orgId)',
        transitions: sent.size,
        missed,
        fromHeartbeatAnswerMs: { ...percentiles(stages.fromAnswer), min: round(Math.min(...stages.fromAnswer)) },
        fromHeartbeatRequestMs: percentiles(stages.fromRequest),
        ceilingOneNotifyHopMs: await notifyHop(runtime.databaseUrl, 200),
        ceilingPlainGraphqlJsOverGraphqlWsMs: await plainSubscriptionLatency(200),
        // Where the time goes (ms; outbox times are written by the server's clock at millisecond precision).
        stagesMs: {
          heartbeatRequestToAnswer: percentiles(stages.heartbeat),
          requestToOutboxRowCreated: percentiles(stages.requestToOutboxRow),
          outboxRowCreatedToDispatched: percentiles(stages.outboxRowToDispatched),
          dispatchedToThisInstancePubSub: percentiles(stages.dispatchedToInstance),
          pubSubToSubscriber: percentiles(stages.instanceToClient),
        },
        statementsPerTransition: shapes.perUnit,
        statements: shapes.list,
      },
    });
    return missed === 0 && failed.length === 0;
  } finally {
    off();
    unsubscribe?.();
    await client.dispose();
  }
}

/** A graphql-js schema with one subscription over graphql-ws: from a local publish to the client's message. */
async function plainSubscriptionLatency(samples: number) {
  const schema = buildSchema('type Query { ok: Boolean } type Subscription { tick: String! }');
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => wss.once('listening', resolve));
  let push: ((value: string) => void) | null = null;
  const cleanup = useServer(
    {
      schema,
      roots: {
        subscription: {
          tick: async function* () {
            const queue: string[] = [];
            let wake: (() => void) | null = null;
            push = (value) => {
              queue.push(value);
              wake?.();
            };
            for (;;) {
              while (queue.length === 0) await new Promise<void>((resolve) => (wake = resolve));
              yield { tick: queue.shift()! };
            }
          },
        },
      },
    },
    wss,
  );
  const client: Client = createClient({ url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}`, webSocketImpl: WebSocket, retryAttempts: 0 });
  try {
    let received: ((value: string) => void) | null = null;
    const unsubscribe = client.subscribe({ query: 'subscription { tick }' }, { next: (m) => received?.((m.data as { tick: string }).tick), error: () => {}, complete: () => {} });
    while (!push) await new Promise((resolve) => setTimeout(resolve, 5));
    const latencies: number[] = [];
    for (let i = 0; i < samples + 20; i++) {
      const arrived = new Promise<void>((resolve) => (received = (value) => value === String(i) && resolve()));
      const sentAt = performance.now();
      (push as (value: string) => void)(String(i));
      await arrived;
      if (i >= 20) latencies.push(performance.now() - sentAt);
    }
    unsubscribe();
    return percentiles(latencies);
  } finally {
    await client.dispose();
    await cleanup.dispose();
    await new Promise((resolve) => wss.close(resolve));
  }
}

// ── fixtures ────────────────────────────────────────────────────────────────────────────────────

export interface SeededAgent {
  index: number;
  deviceId: string;
  agentId: string;
  token: string;
}

/**
 * `count` online devices as enrollment leaves them (linux/amd64, agent 1.0.0, auto-update on), written in
 * one statement; agent i's token is `<prefix><i>`, stored as its SHA-256 hex like the server's.
 */
export async function seedAgents(pool: pg.Pool, orgId: string, count: number): Promise<SeededAgent[]> {
  const prefix = `agt_bench${crypto.randomBytes(8).toString('base64url')}_`;
  const { rows } = await pool.query(
    `insert into device (id, created_at, updated_at, org_id, agent_id, hostname, status, os_type, os_version, architecture, agent_version,
                         machine_id, token_hash, auto_update, last_seen_at, enrolled_at, status_changed_at, tags)
     select gen_random_uuid(), t, t, $1, gen_random_uuid(), 'agent-' || lpad(i::text, 6, '0'), 'online', 'linux', 'Debian 12', 'amd64', '1.0.0',
            'bench-machine-' || i, encode(sha256(convert_to($2 || i, 'UTF8')), 'hex'), true, t, t, t, '[]'::jsonb
       from generate_series(1, $3::int) as i, date_trunc('milliseconds', now()) as t
     returning id, agent_id, machine_id`,
    [orgId, prefix, count],
  );
  return (rows as { id: string; agent_id: string; machine_id: string }[])
    .map((row) => {
      const index = Number(row.machine_id.slice('bench-machine-'.length));
      return { index, deviceId: row.id, agentId: row.agent_id, token: `${prefix}${index}` };
    })
    .sort((a, b) => a.index - b.index);
}

/**
 * A fleet of `count` devices in one organization: hostnames in a few naming schemes (DESKTOP-XXXXXXX,
 * site-role-number, mac names), 60 % seen in the last two minutes (online), the rest over 30 days
 * (offline), 1 % decommissioned; times at millisecond precision, as the server writes them.
 */
async function seedFleet(pool: pg.Pool, orgId: string, count: number): Promise<void> {
  await pool.query(
    `insert into device (id, created_at, updated_at, org_id, agent_id, hostname, status, os_type, os_version, architecture, agent_version,
                         machine_id, token_hash, auto_update, last_seen_at, enrolled_at, status_changed_at, decommissioned_at, tags)
     select gen_random_uuid(), enrolled, enrolled, $1::uuid, gen_random_uuid(), hostname,
            case when i % 100 = 99 then 'decommissioned' when seen > now() - interval '2 minutes' then 'online' else 'offline' end,
            os, case os when 'windows' then 'Windows 11 23H2' when 'macos' then 'macOS 14.5' else 'Ubuntu 22.04' end,
            case when i % 5 = 0 then 'arm64' else 'amd64' end, '1.' || (i % 4) || '.0', 'fleet-machine-' || i,
            case when i % 100 = 99 then null else encode(sha256(convert_to('fleet-' || i || '-' || $1::text, 'UTF8')), 'hex') end,
            true, seen, enrolled, seen, case when i % 100 = 99 then seen end, '[]'::jsonb
       from (
         select i, h,
                case i % 3 when 0 then 'windows' when 1 then 'linux' else 'macos' end as os,
                case i % 3
                  when 0 then 'DESKTOP-' || upper(substr(h, 1, 7))
                  when 1 then (array['ams', 'ber', 'lon', 'nyc', 'par', 'sfo', 'syd', 'tok'])[1 + (i / 3) % 8] || '-'
                              || (array['web', 'db', 'app', 'cache', 'build', 'file', 'print', 'vpn'])[1 + (i / 24) % 8] || '-' || lpad(((i * 7919) % 10000)::text, 4, '0')
                  else (array['Annas', 'Bobs', 'Chens', 'Dianas', 'Emils', 'Faridas'])[1 + (i / 3) % 6] || '-MacBook-Pro-' || (i % 97)
                end as hostname,
                date_trunc('milliseconds', now() - case when i % 10 < 6 then random() * interval '2 minutes' else random() * interval '30 days' end) as seen,
                date_trunc('milliseconds', now() - interval '30 days' - random() * interval '700 days') as enrolled
           from generate_series(1, $2::int) as i, md5(i::text) as h
       ) as fleet`,
    [orgId, count],
  );
  await pool.query('analyze device');
}
