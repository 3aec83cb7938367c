/**
 * The device figures of `npm run bench` (sections `heartbeats`, `device-list`, `device-events`;
 * `devices` runs the three), each printed beside a ceiling measured in the same run:
 *
 * - heartbeats: BENCH_AGENTS (default 2,000) devices written straight into one organization with
 *   known agent tokens, then BENCH_HEARTBEAT_CONNECTIONS (default 50) keep-alive connections send
 *   `POST /api/v1/agents/:agentId/heartbeat` with the real Bearer tokens, spread over every device,
 *   for BENCH_HEARTBEAT_SECONDS (default 10) after a 2 s warm-up. Ceilings: the same generator
 *   against a plain `node:http` JSON server, and the heartbeat's own SQL statements sent by a bare
 *   `pg` pool (no HTTP, no ORM). Also the statements one heartbeat sends to PostgreSQL, and the CPU
 *   each heartbeat costs the server process and PostgreSQL's backends.
 * - device-list: BENCH_LIST_DEVICES (default 100,000) devices in one organization (generate_series),
 *   `GET /api/v1/devices?limit=50` as an Organization Technician, sorted by hostname (asc) and by
 *   lastSeen (desc), first page and the page after row 50,000 (its cursor built from that row, as
 *   the server builds it), one request at a time. Ceiling: the SQL the server ran, sent by a bare
 *   `pg` client. Plus `EXPLAIN ANALYZE` of the deep page's query.
 * - device-events: a graphql-ws client subscribed as the technician; a device set offline in the
 *   database (no event) is brought back by its heartbeat, and the `device.online` event is timed from
 *   the heartbeat's answer to the subscription message, BENCH_TRANSITIONS (default 200) times.
 *   Ceilings: one PostgreSQL NOTIFY → LISTEN hop between bare `pg` clients (the path has two), and
 *   a plain graphql-js schema's subscription over graphql-ws (publish → client message).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { buildSchema } from 'graphql';
import { createClient, type Client } from 'graphql-ws';
import { useServer } from 'graphql-ws/use/ws';
import pg from 'pg';
import WebSocket, { WebSocketServer } from 'ws';
import { Organization } from '../../entities/organization.js';
import { Partner } from '../../entities/partner.js';
import { Membership, User } from '../../entities/user.js';
import { SYSTEM_ROLES } from '../auth/permissions.js';
import { signAccessToken } from '../auth/tokens.js';
import { encodeCursor } from '../pagination.js';
import { DOMAIN_EVENT_TOPIC } from '../events/dispatcher.js';
import type { Runtime } from '../runtime.js';
import { sha256Hex } from '../secrets.js';
import type { RunningServer } from '../server.js';
import { percentiles, runLoad, type LoadRequest, type LoadResult } from './bench-load.js';

export const DEVICE_SECTIONS = ['heartbeats', 'device-list', 'device-events'] as const;
export type DeviceSection = (typeof DEVICE_SECTIONS)[number];

const bounded = (name: string, fallback: number, max: number) => Math.min(Math.max(1, Number(process.env[name] ?? fallback) || fallback), max);
const AGENTS = bounded('BENCH_AGENTS', 2000, 100_000);
const HEARTBEAT_CONNECTIONS = bounded('BENCH_HEARTBEAT_CONNECTIONS', 50, 1000);
const HEARTBEAT_SECONDS = bounded('BENCH_HEARTBEAT_SECONDS', 10, 300);
const LIST_DEVICES = bounded('BENCH_LIST_DEVICES', 100_000, 1_000_000);
const LIST_SAMPLES = bounded('BENCH_LIST_SAMPLES', 200, 10_000);
const TRANSITIONS = bounded('BENCH_TRANSITIONS', 200, 5000);
const DEEP_ROW = Math.min(50_000, Math.floor(LIST_DEVICES / 2));
const PAGE = 50;
const TECHNICIAN_ROLE = SYSTEM_ROLES.find((r) => r.name === 'Organization Technician')!.id;

const print = (figures: unknown) => console.log(JSON.stringify(figures, null, 2));

export async function runDeviceSections(server: RunningServer, sections: DeviceSection[]): Promise<boolean> {
  const { runtime } = server;
  const port = (server.httpServer.address() as AddressInfo).port;
  const pool = new pg.Pool({ connectionString: runtime.databaseUrl, max: 20 });
  let ok = true;
  try {
    // The figures assume the machine is otherwise idle: say so when it is not.
    const before = machineCpu();
    await new Promise((resolve) => setTimeout(resolve, 1000));
    const after = machineCpu();
    if (before && after) {
      const busy = (after.busy - before.busy) / (after.total - before.total);
      console.log(`bench: machine ${Math.round(busy * 100)} % busy over 1 s before the device sections${busy > 0.1 ? ' — other processes are running; rates will be low' : ''}`);
    }
    for (const section of sections) {
      const started = performance.now();
      if (section === 'heartbeats') ok = (await heartbeats(runtime, port, pool)) && ok;
      if (section === 'device-list') ok = (await deviceList(runtime, port, pool)) && ok;
      if (section === 'device-events') ok = (await deviceEvents(runtime, port, pool)) && ok;
      console.log(`bench: ${section} took ${((performance.now() - started) / 1000).toFixed(1)} s`);
    }
  } finally {
    await pool.end();
  }
  return ok;
}

// ── heartbeats ──────────────────────────────────────────────────────────────────────────────────

async function heartbeats(runtime: Runtime, port: number, pool: pg.Pool): Promise<boolean> {
  const orgId = await benchOrg(runtime, 'Bench heartbeats');
  const seedStarted = performance.now();
  const agents = await seedAgents(pool, orgId, AGENTS);
  console.log(
    `bench: heartbeats — ${AGENTS} devices seeded in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s; ${HEARTBEAT_CONNECTIONS} connections, ${HEARTBEAT_SECONDS} s after a 2 s warm-up`,
  );
  const requests = agents.map(heartbeatRequest);
  const load = { requests, connections: HEARTBEAT_CONNECTIONS, warmupMs: 2000, durationMs: HEARTBEAT_SECONDS * 1000 };

  const ceiling = await withPlainServer((plainPort) => metered(pool, (onWindow) => runLoad({ ...load, port: plainPort, warmupMs: 1000, durationMs: 5000 }, onWindow)));
  // The statements of 50 heartbeats, one at a time, each captured on its own; anything else running
  // meanwhile (the outbox poll, a job) shows up as a shape seen less than once per heartbeat.
  const sample = agents.slice(0, 50);
  const captured: Statement[][] = [];
  for (const agent of sample) captured.push((await captureQueries(pool, () => postJson(port, heartbeatRequest(agent)))).queries);
  const shapes = statementShapes(captured.flat(), sample.length);
  const sqlFloor = await replayHeartbeats(pool, typicalHeartbeat(sample, captured), agents, HEARTBEAT_CONNECTIONS, 5000);
  const measured = await metered(pool, (onWindow) => runLoad({ ...load, port }, onWindow));

  print({
    heartbeats: {
      devices: AGENTS,
      connections: HEARTBEAT_CONNECTIONS,
      route: { ...loadFigures(measured.result), ...measured.usage },
      ceilingPlainNodeHttp: { ...loadFigures(ceiling.result), ...ceiling.usage },
      ceilingBarePgStatements: sqlFloor,
      statementsPerHeartbeat: shapes.perUnit,
      statements: shapes.list,
    },
  });
  return measured.result.statuses['200'] !== undefined && failures(measured.result) === 0;
}

/** A heartbeat as an agent sends it: its version and a few metrics (the same for a device every time). */
function heartbeatRequest(agent: SeededAgent): LoadRequest {
  const metrics = { cpuPercent: (agent.index * 7) % 100, ramPercent: (agent.index * 13) % 100, diskPercent: (agent.index * 29) % 100 };
  return {
    method: 'POST',
    path: `/api/v1/agents/${agent.agentId}/heartbeat`,
    headers: { authorization: `Bearer ${agent.token}` },
    body: JSON.stringify({ agentVersion: '1.0.0', metrics }),
  };
}

/** The statements the most heartbeats of the sample sent (the same shapes in the same order), with the agent they were sent for. */
function typicalHeartbeat(sample: SeededAgent[], captured: Statement[][]): { agent: SeededAgent; statements: Statement[] } {
  const counts = new Map<string, number>();
  const keys = captured.map((statements) => statements.map((q) => shapeOf(q.text)).join('\n'));
  for (const key of keys) counts.set(key, (counts.get(key) ?? 0) + 1);
  const best = keys.indexOf([...counts.entries()].sort((a, b) => b[1] - a[1])[0]![0]);
  return { agent: sample[best]!, statements: captured[best]! };
}

/**
 * What PostgreSQL alone costs per heartbeat: the statements the route sent for one heartbeat
 * (captured above), sent again by a bare `pg` pool as large as the ORM's from `connections` closed
 * loops, each time with another device's agent id, device id and token hash in place of the
 * captured ones. No HTTP, no ORM; prepared statements keep their names.
 */
async function replayHeartbeats(pool: pg.Pool, template: { agent: SeededAgent; statements: Statement[] }, agents: SeededAgent[], connections: number, durationMs: number) {
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

async function deviceList(runtime: Runtime, port: number, pool: pg.Pool): Promise<boolean> {
  const orgId = await benchOrg(runtime, 'Bench fleet');
  const token = await technicianToken(runtime, orgId);
  const seedStarted = performance.now();
  await seedFleet(pool, orgId, LIST_DEVICES);
  console.log(`bench: device-list — ${LIST_DEVICES} devices seeded and analyzed in ${((performance.now() - seedStarted) / 1000).toFixed(1)} s; ${LIST_SAMPLES} requests per figure, one at a time`);
  const headers = { authorization: `Bearer ${token}` };
  const figures: Record<string, unknown> = {};
  let ok = true;
  const plans: unknown[] = [];

  for (const sort of LIST_SORTS) {
    const base = `/api/v1/devices?limit=${PAGE}&sort=${sort.name}&sortDir=${sort.dir}`;
    // Row DEEP_ROW of this order (the same ORDER BY as the server's), and the cursor the server
    // would have handed out with the page that ends on it.
    const { rows } = await pool.query(
      `select id, ${sort.column} as value from device where org_id = $1 and status <> 'decommissioned' order by ${sort.column} ${sort.dir}, id ${sort.dir} offset $2 limit 2`,
      [orgId, DEEP_ROW - 1],
    );
    const [last, next] = rows as { id: string; value: string | Date }[];
    const value = last!.value instanceof Date ? last!.value.toISOString() : last!.value;
    const cursor = `${Buffer.from(`${sort.name}.${sort.dir}`).toString('base64url')}.${encodeCursor({ value, id: last!.id })}`;
    const deep = `${base}&cursor=${encodeURIComponent(cursor)}`;

    const check = await getJson(port, deep, headers);
    const continues = check.status === 200 && (check.body as { devices: { id: string }[] }).devices[0]?.id === next!.id;
    if (!continues) {
      console.error(`bench: the page after row ${DEEP_ROW} (${sort.name}) does not start at row ${DEEP_ROW + 1}: ${check.status} ${JSON.stringify(check.body).slice(0, 300)}`);
      ok = false;
    }

    // The SQL the server runs for each page, to time it bare and to explain the deep one.
    const firstSql = await serverQuery(pool, port, base, headers);
    const deepSql = await serverQuery(pool, port, deep, headers);
    const one = { port, connections: 1, warmupMs: 300, durationMs: 60_000, maxCount: LIST_SAMPLES };
    const first = await runLoad({ ...one, requests: [{ method: 'GET', path: base, headers }] });
    const deepPage = await runLoad({ ...one, requests: [{ method: 'GET', path: deep, headers }] });
    ok = ok && failures(first) === 0 && failures(deepPage) === 0;
    figures[`${sort.name} ${sort.dir}`] = {
      firstPage: { ...loadFigures(first, false), ceilingBareSql: await timeSql(pool, firstSql) },
      [`pageAfterRow${DEEP_ROW}`]: { ...loadFigures(deepPage, false), ceilingBareSql: await timeSql(pool, deepSql) },
    };
    plans.push({ sort: `${sort.name} ${sort.dir}`, ...(await explain(pool, deepSql)) });
  }
  // What one list request sends to PostgreSQL (the first page by hostname, 20 times).
  const { queries } = await captureQueries(pool, async () => {
    for (let i = 0; i < 20; i++) await getJson(port, `/api/v1/devices?limit=${PAGE}&sort=hostname`, headers);
  });
  const shapes = statementShapes(queries, 20);
  figures.statementsPerRequest = shapes.perUnit;
  figures.statements = shapes.list;
  print({ deviceList: { devices: LIST_DEVICES, limit: PAGE, ...figures, explainPageAfterRow: { row: DEEP_ROW, plans } } });
  return ok;
}

/** The device-list SELECT the server sent for `path`. */
async function serverQuery(pool: pg.Pool, port: number, path: string, headers: Record<string, string>): Promise<Statement> {
  const { result, queries } = await captureQueries(pool, () => getJson(port, path, headers));
  if (result.status !== 200) throw new Error(`GET ${path}: ${result.status} ${JSON.stringify(result.body)}`);
  const query = queries.find((q) => /^\s*select\b[\s\S]*\bfrom "?device"? as "?d0"?/i.test(q.text));
  if (!query) throw new Error(`no device select among ${queries.length} statements of GET ${path}`);
  return query;
}

async function timeSql(pool: pg.Pool, query: Statement) {
  const client = await pool.connect();
  try {
    const latencies: number[] = [];
    for (let i = 0; i < 10 + Math.min(LIST_SAMPLES, 100); i++) {
      const sentAt = performance.now();
      await client.query(query.text, query.values);
      if (i >= 10) latencies.push(performance.now() - sentAt);
    }
    const { p50, p99 } = percentiles(latencies);
    return { p50Ms: p50, p99Ms: p99 };
  } finally {
    client.release();
  }
}

/** The plan's top node and the node that reads the table, and the execution time. */
async function explain(pool: pg.Pool, query: Statement) {
  const { rows } = await pool.query(`explain (analyze, buffers, format json) ${query.text}`, query.values);
  const [plan] = rows[0]['QUERY PLAN'] as { Plan: PlanNode; 'Execution Time': number; 'Planning Time': number }[];
  const nodes: string[] = [];
  for (let node: PlanNode | undefined = plan!.Plan; node; node = node.Plans?.[0]) {
    nodes.push(
      [
        node['Node Type'],
        node['Index Name'] ? `using ${node['Index Name']}` : node['Relation Name'] ? `on ${node['Relation Name']}` : '',
        `(rows ${node['Actual Rows']}${node['Rows Removed by Filter'] ? `, removed by filter ${node['Rows Removed by Filter']}` : ''}, shared buffers hit ${node['Shared Hit Blocks'] ?? 0} read ${node['Shared Read Blocks'] ?? 0})`,
        node['Index Cond'] ? `index cond ${node['Index Cond']}` : '',
        node.Filter ? `filter ${node.Filter}` : '',
      ]
        .filter(Boolean)
        .join(' '),
    );
  }
  return { plan: nodes, executionTimeMs: plan!['Execution Time'], planningTimeMs: plan!['Planning Time'] };
}

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  'Index Cond'?: string;
  Filter?: string;
  'Actual Rows': number;
  'Rows Removed by Filter'?: number;
  'Shared Hit Blocks'?: number;
  'Shared Read Blocks'?: number;
  Plans?: PlanNode[];
}

// ── device status events ────────────────────────────────────────────────────────────────────────

async function deviceEvents(runtime: Runtime, port: number, pool: pg.Pool): Promise<boolean> {
  const orgId = await benchOrg(runtime, 'Bench events');
  const token = await technicianToken(runtime, orgId);
  const CAPTURED = 20;
  const WARMUP = 10;
  const agents = await seedAgents(pool, orgId, WARMUP + TRANSITIONS + CAPTURED);
  const subscription = await statusSubscription(port);
  console.log(`bench: device-events — ${TRANSITIONS} offline → online transitions one after another, subscribed with ${subscription.name}`);

  // Epoch milliseconds (sub-millisecond), comparable with the outbox rows' times written by this process.
  const now = () => performance.timeOrigin + performance.now();
  const byDevice = new Map(agents.map((a) => [a.deviceId, a]));
  const deviceOf = (payload: unknown) => {
    const text = JSON.stringify(payload);
    return [...text.matchAll(/[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g)].map((m) => m[0]).find((id) => byDevice.has(id));
  };
  const atInstance = new Map<string, number>();
  const atClient = new Map<string, number>();
  const waiting = new Map<string, () => void>();
  // When this instance's PubSub has the event back from PostgreSQL, before the subscription's filter and GraphQL.
  const off = runtime.pubsub.on(DOMAIN_EVENT_TOPIC, (event) => {
    const deviceId = deviceOf((event as { data: unknown }).data);
    if (deviceId && !atInstance.has(deviceId)) atInstance.set(deviceId, now());
  });
  const client = createClient({ url: `ws://127.0.0.1:${port}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${token}` }, retryAttempts: 0, lazy: false });
  const failed: unknown[] = [];
  let unsubscribe: (() => void) | null = null;
  try {
    unsubscribe = client.subscribe(
      { query: subscription.query },
      {
        next: (message) => {
          const at = now();
          const deviceId = deviceOf(message.data);
          if (!deviceId || atClient.has(deviceId)) return;
          atClient.set(deviceId, at);
          waiting.get(deviceId)?.();
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
      const answer = await postJson(port, heartbeatRequest(agent));
      const answeredAt = now();
      if (answer.status !== 200) throw new Error(`heartbeat: ${answer.status} ${JSON.stringify(answer.body)}`);
      const ok = await arrived;
      waiting.delete(agent.deviceId);
      return ok ? { sentAt, answeredAt } : null;
    };

    // Until one arrives, the subscription may not be live yet on the server: warm-up transitions, not counted.
    let live = false;
    for (const agent of agents.slice(0, WARMUP)) if (!live) live = (await transition(agent, 2000)) !== null;
    if (!live) throw new Error(`no subscription message after ${WARMUP} transitions (${failed.map(String).join('; ')})`);
    const measured = agents.slice(WARMUP, WARMUP + TRANSITIONS);
    const sent = new Map<string, { sentAt: number; answeredAt: number }>();
    let missed = 0;
    for (const agent of measured) {
      const times = await transition(agent, 5000);
      if (times) sent.set(agent.deviceId, times);
      else missed++;
    }
    // The statements of a transition: the heartbeat, the dispatcher's pass, the subscription's access check.
    const { queries } = await captureQueries(pool, async () => {
      for (const agent of agents.slice(WARMUP + TRANSITIONS)) await transition(agent, 5000);
    });
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

    const notifyHop = await notifyRoundTrip(runtime.databaseUrl, 200);
    const plainGraphqlWs = await plainSubscriptionLatency(200);
    const pp = (values: number[]) => {
      const { p50, p99, max } = percentiles(values);
      return { p50, p99, max };
    };
    print({
      deviceStatusToSubscriber: {
        subscription: subscription.name,
        transitions: sent.size,
        missed,
        fromHeartbeatAnswerMs: { ...pp(stages.fromAnswer), min: round(Math.min(...stages.fromAnswer)) },
        fromHeartbeatRequestMs: pp(stages.fromRequest),
        ceilingOneNotifyHopMs: notifyHop,
        ceilingPlainGraphqlJsOverGraphqlWsMs: plainGraphqlWs,
        // Where the time goes (ms; outbox times are written by the server's clock at millisecond precision).
        stagesMs: {
          heartbeatRequestToAnswer: pp(stages.heartbeat),
          requestToOutboxRowCreated: pp(stages.requestToOutboxRow),
          outboxRowCreatedToDispatched: pp(stages.outboxRowToDispatched),
          dispatchedToThisInstancePubSub: pp(stages.dispatchedToInstance),
          pubSubToSubscriber: pp(stages.instanceToClient),
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

/** `deviceStatusChanged` when the schema has it (and it needs no argument), else `domainEvents` filtered to the two status events. */
async function statusSubscription(port: number): Promise<{ name: string; query: string }> {
  const introspection = await postJson(port, {
    method: 'POST',
    path: '/graphql',
    body: JSON.stringify({
      query: `{ __type(name: "Subscription") { fields { name args { name type { kind } } type { kind name ofType { kind name ofType { name } } } } } }`,
    }),
  });
  type Field = { name: string; args: { name: string; type: { kind: string } }[]; type: { kind: string; name: string | null; ofType: { kind: string; name: string | null; ofType: { name: string } | null } | null } };
  const fields = ((introspection.body as { data?: { __type?: { fields: Field[] } } }).data?.__type?.fields ?? []) as Field[];
  const field = fields.find((f) => f.name === 'deviceStatusChanged');
  if (field && field.args.every((a) => a.type.kind !== 'NON_NULL')) {
    const typeName = field.type.name ?? field.type.ofType?.name ?? field.type.ofType?.ofType?.name;
    const selection = typeName ? await leafSelection(port, typeName, 2) : '';
    if (selection) return { name: 'deviceStatusChanged', query: `subscription { deviceStatusChanged ${selection} }` };
  }
  return { name: 'domainEvents(types: ["device.offline", "device.online"])', query: 'subscription { domainEvents(types: ["device.offline", "device.online"]) { id type orgId timestamp data } }' };
}

/** `{ a b c { d e } }`: the type's scalar fields, and those of its object fields down to `depth`. */
async function leafSelection(port: number, typeName: string, depth: number): Promise<string> {
  const res = await postJson(port, {
    method: 'POST',
    path: '/graphql',
    body: JSON.stringify({ query: `{ __type(name: ${JSON.stringify(typeName)}) { kind fields { name args { name } type { kind name ofType { kind name ofType { kind name ofType { kind name } } } } } } }` }),
  });
  type TypeRef = { kind: string; name: string | null; ofType: TypeRef | null };
  const type = (res.body as { data?: { __type?: { kind: string; fields: { name: string; args: unknown[]; type: TypeRef }[] | null } } }).data?.__type;
  if (!type?.fields) return '';
  const parts: string[] = [];
  for (const f of type.fields) {
    if (f.args.length > 0) continue;
    let t: TypeRef | null = f.type;
    while (t && (t.kind === 'NON_NULL' || t.kind === 'LIST')) t = t.ofType;
    if (!t) continue;
    if (t.kind === 'SCALAR' || t.kind === 'ENUM') parts.push(f.name);
    else if (t.kind === 'OBJECT' && depth > 1 && t.name) {
      const inner = await leafSelection(port, t.name, depth - 1);
      if (inner) parts.push(`${f.name} ${inner}`);
    }
  }
  return parts.length > 0 ? `{ ${parts.join(' ')} }` : '';
}

/** NOTIFY from one bare `pg` client until the LISTENing one has it. */
async function notifyRoundTrip(databaseUrl: string, samples: number) {
  const listener = new pg.Client({ connectionString: databaseUrl });
  const notifier = new pg.Client({ connectionString: databaseUrl });
  await Promise.all([listener.connect(), notifier.connect()]);
  try {
    await listener.query('listen bench_ceiling');
    let wake: (() => void) | null = null;
    listener.on('notification', () => wake?.());
    const latencies: number[] = [];
    for (let i = 0; i < samples; i++) {
      const arrived = new Promise<void>((resolve) => (wake = resolve));
      const sentAt = performance.now();
      await notifier.query(`select pg_notify('bench_ceiling', $1)`, [String(i)]);
      await arrived;
      latencies.push(performance.now() - sentAt);
    }
    const { p50, p99 } = percentiles(latencies);
    return { p50, p99 };
  } finally {
    await Promise.all([listener.end(), notifier.end()]);
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
    const { p50, p99 } = percentiles(latencies);
    return { p50, p99 };
  } finally {
    await client.dispose();
    await cleanup.dispose();
    await new Promise((resolve) => wss.close(resolve));
  }
}

// ── fixtures ────────────────────────────────────────────────────────────────────────────────────

async function benchOrg(runtime: Runtime, name: string): Promise<string> {
  const em = runtime.orm.em.fork();
  const partner = em.create(Partner, { name: `${name} partner` });
  const org = em.create(Organization, { name, partnerId: partner.id });
  await em.flush();
  return org.id;
}

/** An Organization Technician of `orgId` and an access token for them. */
async function technicianToken(runtime: Runtime, orgId: string): Promise<string> {
  const em = runtime.orm.em.fork();
  const user = em.create(User, { email: `bench-${crypto.randomBytes(4).toString('hex')}@example.test`, name: 'Bench Technician', status: 'active' });
  const membership = em.create(Membership, { userId: user.id, scope: 'organization', orgId, partnerId: null, roleId: TECHNICIAN_ROLE, orgAccess: 'all', orgIds: [] });
  await em.flush();
  return signAccessToken(runtime.config, {
    sub: user.id,
    mid: membership.id,
    scope: 'organization',
    partnerId: null,
    orgId,
    roleId: TECHNICIAN_ROLE,
    mfa: true,
    ver: user.tokenVersion,
  });
}

interface SeededAgent {
  index: number;
  deviceId: string;
  agentId: string;
  token: string;
}

/**
 * `count` online devices as enrollment leaves them (linux/amd64, agent 1.0.0, auto-update on), written in
 * one statement; agent i's token is `<prefix><i>`, stored as its SHA-256 hex like the server's.
 */
async function seedAgents(pool: pg.Pool, orgId: string, count: number): Promise<SeededAgent[]> {
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

// ── plumbing ────────────────────────────────────────────────────────────────────────────────────

/** A plain `node:http` server answering what a heartbeat answers, after reading and parsing the body: the HTTP ceiling. */
async function withPlainServer<T>(fn: (port: number) => Promise<T>): Promise<T> {
  const answer = JSON.stringify({ commands: [], configUpdate: null, upgradeTo: null });
  const plain = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      JSON.parse(body || '{}');
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(answer) }).end(answer);
    });
  });
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve));
  try {
    return await fn((plain.address() as AddressInfo).port);
  } finally {
    plain.closeAllConnections();
    await new Promise((resolve) => plain.close(resolve));
  }
}

/**
 * CPU used over a measured window: this process (the server; the load generator runs in its own
 * process), the PostgreSQL backends of the bench's database (read from /proc, when the database
 * server runs on this machine), and how busy the machine was (all its CPUs, whatever runs on them).
 * CPU per request does not depend on what else shares the machine; the rate does.
 */
class Meter {
  private start: { cpu: NodeJS.CpuUsage; loop: ReturnType<typeof performance.eventLoopUtilization>; machine: ReturnType<typeof machineCpu>; postgres: Map<number, number> | null } | null = null;
  private totals: { processCpuMs: number; postgresCpuMs: number | null; eventLoopBusy: number; machineCpuBusy: number | null } | null = null;

  constructor(private readonly pool: pg.Pool) {}

  async open(): Promise<void> {
    const postgres = await postgresTicks(this.pool);
    this.start = { cpu: process.cpuUsage(), loop: performance.eventLoopUtilization(), machine: machineCpu(), postgres };
  }

  async close(): Promise<void> {
    const cpu = process.cpuUsage(this.start!.cpu);
    const loop = performance.eventLoopUtilization(this.start!.loop);
    const machine = machineCpu();
    const postgres = await postgresTicks(this.pool);
    const before = this.start!.postgres;
    this.totals = {
      processCpuMs: (cpu.user + cpu.system) / 1000,
      postgresCpuMs: postgres && before ? [...postgres].reduce((sum, [pid, ticks]) => sum + ticks - (before.get(pid) ?? 0), 0) * (1000 / CLOCK_TICKS) : null,
      eventLoopBusy: round(loop.utilization),
      machineCpuBusy: machine && this.start!.machine ? round((machine.busy - this.start!.machine.busy) / (machine.total - this.start!.machine.total)) : null,
    };
  }

  perRequest(requests: number): Usage {
    const { processCpuMs, postgresCpuMs, eventLoopBusy, machineCpuBusy } = this.totals!;
    const per = (ms: number) => round(ms / Math.max(1, requests));
    return { processCpuMsPerRequest: per(processCpuMs), postgresCpuMsPerRequest: postgresCpuMs === null ? null : per(postgresCpuMs), eventLoopBusy, machineCpuBusy };
  }
}

interface Usage {
  /** this process: the server (or the bare client loop) */
  processCpuMsPerRequest: number;
  postgresCpuMsPerRequest: number | null;
  /** this process's event loop */
  eventLoopBusy: number;
  machineCpuBusy: number | null;
}

/** Linux's USER_HZ: /proc times are in these ticks per second. */
const CLOCK_TICKS = 100;

/** A load's result and the CPU used (see Meter) over its measured window. */
async function metered(pool: pg.Pool, load: (onWindow: (edge: 'open' | 'close') => void) => Promise<LoadResult>) {
  const meter = new Meter(pool);
  let opened: Promise<void> = Promise.resolve();
  let closed: Promise<void> | null = null;
  const result = await load((edge) => {
    if (edge === 'open') opened = meter.open();
    else closed = opened.then(() => meter.close());
  });
  await (closed ?? opened.then(() => meter.close()));
  return { result, usage: { ...meter.perRequest(result.latencyMs.samples), loadGeneratorCpuMsPerRequest: result.clientCpuMs } };
}

/** CPU ticks so far of each backend of the current database, or null when they are not processes of this machine. */
async function postgresTicks(pool: pg.Pool): Promise<Map<number, number> | null> {
  const { rows } = await pool.query('select pid from pg_stat_activity where datname = current_database()');
  const ticks = new Map<number, number>();
  for (const { pid } of rows as { pid: number }[]) {
    try {
      if (!fs.readFileSync(`/proc/${pid}/cmdline`, 'utf8').startsWith('postgres')) return null;
      const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      ticks.set(pid, Number(fields[11]) + Number(fields[12]));
    } catch {
      // gone meanwhile, or not on this machine
      if (!fs.existsSync('/proc/self/stat')) return null;
    }
  }
  return ticks;
}

/** Busy and total jiffies of all CPUs (Linux /proc/stat), or null elsewhere. */
function machineCpu(): { busy: number; total: number } | null {
  try {
    const [, ...fields] = fs.readFileSync('/proc/stat', 'utf8').split('\n', 1)[0]!.trim().split(/\s+/);
    const values = fields.map(Number);
    const total = values.reduce((a, b) => a + b, 0);
    const idle = (values[3] ?? 0) + (values[4] ?? 0);
    return { busy: total - idle, total };
  } catch {
    return null;
  }
}

/** A statement as the server sent it: the text, and the values of its `$n` placeholders if it has any. */
interface Statement {
  text: string;
  values?: unknown[];
  /** a prepared statement's name */
  name?: string;
}

/**
 * Every statement this process sent to PostgreSQL while `fn` ran, through any `pg` client (the ORM's
 * pool, prepared statements, the job queue, the outbox dispatcher), except the bench's own `pool`.
 */
async function captureQueries<T>(pool: pg.Pool, fn: () => Promise<T>): Promise<{ result: T; queries: Statement[] }> {
  const ours = new WeakSet<object>();
  // The pool's idle clients, and any it opens meanwhile.
  for (const client of (pool as unknown as { _clients?: object[] })._clients ?? []) ours.add(client);
  const mark = (client: object) => void ours.add(client);
  pool.on('connect', mark);
  const queries: Statement[] = [];
  const prototype = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const query = prototype.query;
  prototype.query = function (this: object, config: unknown, values?: unknown, ...rest: unknown[]) {
    if (!ours.has(this)) {
      if (typeof config === 'string') queries.push({ text: config, values: Array.isArray(values) && values.length > 0 ? values : undefined });
      else if (config && typeof (config as { text?: unknown }).text === 'string') {
        const { text, values: bound, name } = config as { text: string; values?: unknown[]; name?: string };
        const all = bound ?? (Array.isArray(values) ? values : undefined);
        queries.push({ text, values: all && all.length > 0 ? all : undefined, ...(name ? { name } : {}) });
      }
    }
    return query.call(this, config, values, ...rest);
  };
  try {
    return { result: await fn(), queries };
  } finally {
    prototype.query = query;
    pool.off('connect', mark);
  }
}

/** A statement with its literals replaced by `?` and its whitespace collapsed. */
function shapeOf(text: string): string {
  return text
    .replace(/(savepoint\s+)"?\w+"?/gi, '$1?')
    .replace(/'(?:[^']|'')*'/g, '?')
    .replace(/\b\d+(\.\d+)?\b/g, '?')
    .replace(/\s+/g, ' ')
    .trim();
}

/** Statements grouped by shape (literals replaced), with how many times each ran per unit of work. */
function statementShapes(queries: Statement[], units: number): { perUnit: number; list: string[] } {
  const counts = new Map<string, number>();
  for (const { text } of queries) {
    const shape = shapeOf(text);
    counts.set(shape, (counts.get(shape) ?? 0) + 1);
  }
  return {
    perUnit: round(queries.length / units),
    list: [...counts.entries()].sort((a, b) => b[1] - a[1]).map(([shape, n]) => `${round(n / units)}× ${shape.length > 300 ? `${shape.slice(0, 300)}…` : shape}`),
  };
}

function loadFigures(result: LoadResult, withRate = true) {
  return {
    ...(withRate ? { perSecond: result.perSecond } : {}),
    p50Ms: result.latencyMs.p50,
    p99Ms: result.latencyMs.p99,
    maxMs: result.latencyMs.max,
    requests: result.latencyMs.samples,
    ...(failures(result) > 0 ? { failures: failures(result), firstFailure: result.firstFailure } : {}),
  };
}

function failures(result: LoadResult): number {
  return Object.entries(result.statuses).reduce((n, [status, count]) => (status.startsWith('2') ? n : n + count), 0);
}

async function getJson(port: number, path: string, headers: Record<string, string>) {
  return postJson(port, { method: 'GET', path, headers });
}

function postJson(port: number, request: LoadRequest): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...request.headers };
    if (request.body !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(request.body) });
    const req = http.request({ host: '127.0.0.1', port, method: request.method, path: request.path, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => {
        try {
          resolve({ status: res.statusCode ?? 0, body: body ? JSON.parse(body) : null });
        } catch {
          resolve({ status: res.statusCode ?? 0, body });
        }
      });
    });
    req.on('error', reject);
    req.end(request.body);
  });
}

const round = (n: number) => Math.round(n * 100) / 100;
