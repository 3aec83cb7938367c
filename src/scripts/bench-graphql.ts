/**
 * The GraphQL figures of `npm run bench` (section `graphql`), each beside a ceiling measured in the
 * same run:
 *
 * - queries: `{ me { id email } }` and a dashboard's page, `devices(first: 50)` with each device's
 *   organization, site, groups, status, last contact, tags and the total (an Organization Technician
 *   signed in through `POST /auth/login`, in an organization of BENCH_GRAPHQL_DEVICES devices, default
 *   500, over 4 sites, each device in 2 of 4 static groups), through Apollo on this server, against
 *   graphql-js `execute` over a plain `node:http` server on the server's own schema object (its
 *   resolvers and middleware), the same database, the same context building (`contextFor` on the raw
 *   request) and caller budget, each document parsed and validated once as Apollo's document cache
 *   does. What is left between the two is Apollo, Express and the GraphQL HTTP handling. Same load
 *   generator and alternating rounds as the `requests` section (BENCH_GRAPHQL_CONNECTIONS, default 50,
 *   for `me`, BENCH_GRAPHQL_DASHBOARD_CONNECTIONS, default 10, for the page; BENCH_GRAPHQL_ROUNDS of
 *   BENCH_GRAPHQL_SECONDS, defaults 3 and 5, after a 1 s warm-up).
 * - subscribers: BENCH_SUBSCRIBERS (default 5,000) graphql-ws clients in a child process
 *   (bench-subscribers.ts), each on its own socket, subscribed to `deviceStatusChanged(orgId)` as one
 *   of BENCH_SUBSCRIBER_USERS signed-in technicians (default 10); the server's memory per subscriber
 *   (heap and the buffers outside it, after a full GC); then BENCH_FANOUT_TRANSITIONS (default 30)
 *   devices set offline in the database, each brought back by its heartbeat: the time from the
 *   heartbeat request to the last subscriber's `online` message (and to each message). Ceiling: a
 *   plain graphql-js schema with the same subscription field over graphql-ws (`useServer`), the same
 *   fleet, each change published in memory: memory per subscriber and publish → last subscriber's message.
 *
 * The process needs a file descriptor per subscriber (the fleet's process as many): bench.ts raises
 * the soft limit to the hard one (`ulimit -Hn`), which must exceed BENCH_SUBSCRIBERS by some
 * hundreds, else the fleet is cut down to fit and the section fails.
 */
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import v8 from 'node:v8';
import vm from 'node:vm';
import { buildSchema, execute, parse, validate, type DocumentNode, type GraphQLSchema } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import pg from 'pg';
import { WebSocketServer } from 'ws';
import { DeviceGroup } from '../../entities/device-group.js';
import { Site } from '../../entities/site.js';
import { consumeCallerBudget } from '../http/rate-limit.js';
import { contextFor } from '../http/request-context.js';
import type { Runtime } from '../runtime.js';
import type { RunningServer } from '../server.js';
import { percentiles, runLoad, type LoadRequest, type LoadResult } from './bench-load.js';
import { heartbeatRequest, seedAgents, type SeededAgent } from './bench-devices.js';
import { subscriberFleet, type FleetReport } from './bench-subscribers.js';
import {
  benchOrg,
  bounded,
  captureQueries,
  combined,
  failures,
  loadFigures,
  meanUsage,
  metered,
  portOf,
  print,
  request,
  round,
  signedInUser,
  statementShapes,
  withPlainServer,
  withPool,
  type BenchSection,
  type CpuUsage,
} from './bench-support.js';
import { DEVICE_STATUS_SUBSCRIPTION } from './simulator.js';

const CONNECTIONS = bounded('BENCH_GRAPHQL_CONNECTIONS', 50, 1000);
const DASHBOARD_CONNECTIONS = bounded('BENCH_GRAPHQL_DASHBOARD_CONNECTIONS', 10, 1000);
const SECONDS = bounded('BENCH_GRAPHQL_SECONDS', 5, 300);
const ROUNDS = bounded('BENCH_GRAPHQL_ROUNDS', 3, 20);
const DEVICES = bounded('BENCH_GRAPHQL_DEVICES', 500, 100_000);
const SUBSCRIBERS = bounded('BENCH_SUBSCRIBERS', 5000, 100_000);
const SUBSCRIBER_USERS = bounded('BENCH_SUBSCRIBER_USERS', 10, 1000);
const FANOUT_TRANSITIONS = bounded('BENCH_FANOUT_TRANSITIONS', 30, 1000);
const SITES = 4;
const GROUPS = 4;
/** descriptors the server process needs besides its subscribers' sockets (database pools, load connections, files) */
const SPARE_DESCRIPTORS = 500;
/** how long every subscriber may take to have one change */
const FANOUT_TIMEOUT_MS = 60_000;

/** each query, and the connections that load it (a page costs tens of times what `me` does: fewer, so the window holds enough answers) */
const QUERIES = {
  'me { id email }': { connections: CONNECTIONS, query: 'query Me { me { id email } }' },
  'dashboard: devices(first: 50)': {
    connections: DASHBOARD_CONNECTIONS,
    query:
      'query Dashboard { devices(first: 50) { totalCount edges { cursor node { id hostname status osType agentVersion lastSeenAt tags organization { id name } site { id name } groups(first: 10) { edges { node { id name } } } } } pageInfo { hasNextPage endCursor } } }',
  },
};

export const runGraphqlSection: BenchSection = (server) => withPool(server.runtime, (pool) => graphqlSection(server, pool));

async function graphqlSection(server: RunningServer, pool: pg.Pool): Promise<boolean> {
  const { runtime } = server;
  const port = portOf(server);
  const orgId = await benchOrg(runtime, 'Bench GraphQL');
  const agents = await seedDashboard(runtime, pool, orgId);
  const token = await signedInUser(runtime, port, orgId, 'Organization Technician');
  console.log(
    `bench: graphql — ${DEVICES} devices over ${SITES} sites; queries: ${CONNECTIONS} connections (dashboard ${DASHBOARD_CONNECTIONS}), ${ROUNDS} rounds of plain execute then Apollo, ${SECONDS} s each after a 1 s warm-up; then ${SUBSCRIBERS} subscribers`,
  );
  const queries = await queryFigures(server, pool, token);
  const subscribers = await subscriberFigures(server, pool, orgId, agents.slice(0, FANOUT_TRANSITIONS + 10));
  print({ graphql: { queries: queries.figures, subscribers: subscribers.figures } });
  return queries.ok && subscribers.ok;
}

// ── queries ─────────────────────────────────────────────────────────────────────────────────────

async function queryFigures(server: RunningServer, pool: pg.Pool, token: string) {
  const { runtime } = server;
  const port = portOf(server);
  const headers = { authorization: `Bearer ${token}` };
  const plain = plainExecute(runtime, server.schema);
  let ok = true;
  const figures: Record<string, unknown> = {};
  await withPlainServer(plain, async (plainPort) => {
    for (const [name, { connections, query }] of Object.entries(QUERIES)) {
      const load = { connections, warmupMs: 1000, durationMs: SECONDS * 1000 };
      const req: LoadRequest = { method: 'POST', path: '/graphql', headers, body: JSON.stringify({ query }) };
      // Both must answer the same data without errors, or the comparison means nothing.
      const [apolloAnswer, plainAnswer] = [await request(port, req), await request(plainPort, req)];
      const data = (answer: { status: number; body: unknown }) => {
        const body = answer.body as { data?: unknown; errors?: unknown[] } | null;
        if (answer.status !== 200 || !body?.data || body.errors) throw new Error(`bench: ${name} answered ${answer.status} ${JSON.stringify(answer.body).slice(0, 500)}`);
        return JSON.stringify(body.data);
      };
      if (data(apolloAnswer) !== data(plainAnswer)) throw new Error(`bench: ${name}: Apollo and plain execute answer different data`);

      const statementsOf = async (to: number) => {
        const { queries } = await captureQueries(async () => {
          for (let i = 0; i < 20; i++) await request(to, req);
        }, pool);
        return statementShapes(queries, 20).perUnit;
      };
      const pairs: { baseline: { result: LoadResult; usage: CpuUsage }; apollo: { result: LoadResult; usage: CpuUsage } }[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        const baseline = await metered(pool, (onWindow) => runLoad({ ...load, port: plainPort, requests: [req] }, onWindow));
        const apollo = await metered(pool, (onWindow) => runLoad({ ...load, port, requests: [req] }, onWindow));
        pairs.push({ baseline, apollo });
      }
      const apollo = combined(pairs.map((p) => p.apollo.result));
      const baseline = combined(pairs.map((p) => p.baseline.result));
      figures[name] = {
        connections,
        apollo: { ...loadFigures(apollo), ...meanUsage(pairs.map((p) => p.apollo.usage)) },
        ceilingPlainGraphqlJsExecute: { ...loadFigures(baseline), ...meanUsage(pairs.map((p) => p.baseline.usage)) },
        ofCeiling: `${((apollo.perSecond / baseline.perSecond) * 100).toFixed(1)} %`,
        p99OverCeilingP99: round(apollo.latencyMs.p99 / baseline.latencyMs.p99),
        statementsPerRequest: { apollo: await statementsOf(port), ceiling: await statementsOf(plainPort) },
      };
      ok = ok && failures(apollo) === 0 && failures(baseline) === 0;
    }
  });
  return { ok, figures };
}

/**
 * graphql-js over the plain server: the document looked up by its text (parsed and validated against
 * the schema's rules on first sight), executed with the context the server builds for a request,
 * after counting the request against its caller's budget as the server does.
 */
function plainExecute(runtime: Runtime, schema: GraphQLSchema) {
  const documents = new Map<string, DocumentNode>();
  return async (body: string, req: Parameters<typeof contextFor>[1]) => {
    const { query, variables } = JSON.parse(body) as { query: string; variables?: Record<string, unknown> };
    let document = documents.get(query);
    if (!document) {
      document = parse(query);
      const errors = validate(schema, document);
      if (errors.length > 0) throw new Error(errors.map((e) => e.message).join('; '));
      documents.set(query, document);
    }
    const ctx = await contextFor(runtime, req);
    await consumeCallerBudget(runtime, ctx.principal);
    return JSON.stringify(await execute({ schema, document, variableValues: variables, contextValue: { ctx } }));
  };
}

// ── subscribers ─────────────────────────────────────────────────────────────────────────────────

/** epoch milliseconds, sub-millisecond, comparable with the fleet process's */
const now = () => performance.timeOrigin + performance.now();

async function subscriberFigures(server: RunningServer, pool: pg.Pool, orgId: string, agents: SeededAgent[]) {
  const { runtime } = server;
  const port = portOf(server);
  const limit = openFileLimit();
  const count = limit === null ? SUBSCRIBERS : Math.min(SUBSCRIBERS, limit - SPARE_DESCRIPTORS);
  if (count < SUBSCRIBERS) console.log(`bench: graphql — open file limit ${limit}: ${count} subscribers instead of ${SUBSCRIBERS} (the bench raised it to the hard limit: raise that, \`ulimit -Hn ${SUBSCRIBERS + SPARE_DESCRIPTORS * 2}\` as root)`);
  const tokens: string[] = [];
  for (let i = 0; i < SUBSCRIBER_USERS; i++) tokens.push(await signedInUser(runtime, port, orgId, 'Organization Technician'));
  const fleetOptions = { count, concurrency: 50, query: DEVICE_STATUS_SUBSCRIPTION, variables: { orgId } };

  // The server: a device goes offline in the database (no event), its heartbeat brings it back online.
  const server_ = await held(`ws://127.0.0.1:${port}/graphql`, { ...fleetOptions, connectionParams: tokens.map((t) => ({ authorization: `Bearer ${t}` })) }, async (agent: SeededAgent) => {
    await pool.query(`update device set status = 'offline', status_changed_at = now() where id = $1`, [agent.deviceId]);
    const sentAt = now();
    const answer = await request(port, heartbeatRequest(agent));
    if (answer.status !== 200) throw new Error(`heartbeat: ${answer.status} ${JSON.stringify(answer.body)}`);
    return { key: `${agent.deviceId}:online`, sentAt };
  }, agents);

  // The ceiling: the same fleet on a plain graphql-js schema, the change published in memory.
  const ceiling = await withPlainSubscriptionServer(async (url, publish) => {
    let i = 0;
    return held(url, { ...fleetOptions, connectionParams: [{}] }, async () => {
      const deviceId = `plain-${i++}`;
      const sentAt = now();
      publish({ deviceId, orgId, hostname: deviceId, previousStatus: 'offline', status: 'online', lastSeenAt: new Date().toISOString() });
      return { key: `${deviceId}:online`, sentAt };
    }, agents);
  });

  const figures = {
    subscription: 'deviceStatusChanged(orgId)',
    users: SUBSCRIBER_USERS,
    server: server_.figures,
    ceilingPlainGraphqlJsOverGraphqlWs: ceiling.figures,
  };
  return { ok: server_.ok && ceiling.ok && count === SUBSCRIBERS, figures };
}

/**
 * Connects the fleet to `url`, measures this process's memory per subscriber, warms up until one
 * change reaches every subscriber, then times `change` over the agents after the warm-up ones: from
 * its `sentAt` to the last subscriber's message with its `key`, and to every message.
 */
async function held(
  url: string,
  options: Omit<Parameters<typeof subscriberFleet>[0], 'url'>,
  change: (agent: SeededAgent) => Promise<{ key: string; sentAt: number }>,
  agents: SeededAgent[],
) {
  const gc = exposedGc();
  const sockets = tcpSockets();
  gc();
  const before = process.memoryUsage();
  const fleet = await subscriberFleet({ url, ...options });
  let report: FleetReport = fleet.report;
  try {
    const warmup = 10;
    let everyone = false;
    for (const agent of agents.slice(0, warmup)) {
      if (everyone) break;
      const { key } = await change(agent);
      everyone = 'times' in (await fleet.arrivals(key, FANOUT_TIMEOUT_MS));
    }
    if (!everyone) throw new Error(`bench: graphql — no change reached all ${options.count} subscribers in ${warmup} tries (${JSON.stringify(fleet.report)})`);
    gc();
    const after = process.memoryUsage();
    const toLast: number[] = [];
    const toEach: number[] = [];
    let missed = 0;
    const started = now();
    for (const agent of agents.slice(warmup)) {
      const { key, sentAt } = await change(agent);
      const arrivals = await fleet.arrivals(key, FANOUT_TIMEOUT_MS);
      if (!('times' in arrivals)) {
        missed++;
        continue;
      }
      let last = 0;
      for (const t of arrivals.times) {
        toEach.push(t - sentAt);
        last = Math.max(last, t);
      }
      toLast.push(last - sentAt);
    }
    const messagesPerSecond = Math.round(toEach.length / ((now() - started) / 1000));
    report = await fleet.close();
    await socketsClosed(sockets);
    // Heap and buffers outside it (sockets'); RSS moves by whole arenas and pages, too coarse to divide.
    const perSubscriber = (field: 'heapUsed' | 'external') => Math.round((after[field] - before[field]) / report.connected / 102.4) / 10;
    return {
      ok: missed === 0 && report.errors === 0 && report.connected === options.count,
      figures: {
        subscribers: report.connected,
        connectedPerSecond: Math.round(report.connected / (report.connectMs / 1000)),
        heapKiBPerSubscriber: perSubscriber('heapUsed'),
        externalKiBPerSubscriber: perSubscriber('external'),
        changes: toLast.length,
        ...(missed > 0 ? { missed } : {}),
        changeToLastSubscriberMs: percentiles(toLast),
        changeToEachSubscriberMs: percentiles(toEach),
        messagesPerSecond,
        ...(report.errors > 0 ? { errors: report.errors, firstError: report.firstError } : {}),
      },
    };
  } catch (error) {
    await fleet.close();
    await socketsClosed(sockets);
    throw error;
  }
}

/** TCP sockets open in this process (listening ones and the database's included). */
const tcpSockets = () => process.getActiveResourcesInfo().filter((resource) => resource === 'TCPSocketWrap').length;

/** Until the server side of a closed fleet has let its sockets go (its memory then goes with them), 30 s at most. */
async function socketsClosed(before: number): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (tcpSockets() > before + 10 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
}

/**
 * A plain graphql-js schema with `deviceStatusChanged` (the fields the bench selects, as plain
 * values) over graphql-ws: every subscription has every published change. Runs `fn` with its URL.
 */
async function withPlainSubscriptionServer<T>(fn: (url: string, publish: (change: Record<string, string>) => void) => Promise<T>): Promise<T> {
  const schema = buildSchema(`
    type Query { ok: Boolean }
    type Change { deviceId: ID! orgId: ID! hostname: String! previousStatus: String status: String! lastSeenAt: String }
    type Subscription { deviceStatusChanged(orgId: ID): Change! }`);
  const listeners = new Set<(change: Record<string, string>) => void>();
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise<void>((resolve) => wss.once('listening', resolve));
  const cleanup = useServer(
    {
      schema,
      roots: {
        subscription: {
          deviceStatusChanged: async function* () {
            const queue: Record<string, string>[] = [];
            let wake: (() => void) | null = null;
            const listener = (change: Record<string, string>) => {
              queue.push(change);
              wake?.();
            };
            listeners.add(listener);
            try {
              for (;;) {
                while (queue.length === 0) await new Promise<void>((resolve) => (wake = resolve));
                yield { deviceStatusChanged: queue.shift()! };
              }
            } finally {
              listeners.delete(listener);
            }
          },
        },
      },
    },
    wss,
  );
  try {
    return await fn(`ws://127.0.0.1:${(wss.address() as AddressInfo).port}`, (change) => listeners.forEach((listener) => listener(change)));
  } finally {
    await cleanup.dispose();
    await new Promise((resolve) => wss.close(resolve));
  }
}

/** The soft limit on open files (Linux), or null when it cannot be read. */
function openFileLimit(): number | null {
  try {
    const line = fs.readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
    const soft = line?.split(/\s+/)[3];
    return soft === undefined || soft === 'unlimited' ? null : Number(soft);
  } catch {
    return null;
  }
}

/** A full garbage collection, so memory figures count what is held rather than what awaits collection. */
function exposedGc(): () => void {
  v8.setFlagsFromString('--expose-gc');
  return vm.runInNewContext('gc') as () => void;
}

// ── fixtures ────────────────────────────────────────────────────────────────────────────────────

/**
 * DEVICES online devices (they heartbeat) spread over SITES sites, each with a couple of tags and in
 * two of GROUPS static groups, as a dashboard page shows them; answers the agents.
 */
async function seedDashboard(runtime: Runtime, pool: pg.Pool, orgId: string): Promise<SeededAgent[]> {
  const em = runtime.orm.em.fork();
  const sites = Array.from({ length: SITES }, (_, i) => em.create(Site, { orgId, name: `Bench site ${i + 1}` }));
  const groups = Array.from({ length: GROUPS }, (_, i) => em.create(DeviceGroup, { orgId, name: `Bench group ${i + 1}`, type: 'static' }));
  await em.flush();
  const agents = await seedAgents(pool, orgId, DEVICES);
  await pool.query(
    `update device d set site_id = (($2::uuid[]))[1 + (abs(hashtext(d.id::text)) % $3)],
                         tags = jsonb_build_array('fleet', case when abs(hashtext(d.hostname)) % 2 = 0 then 'servers' else 'laptops' end)
      where org_id = $1`,
    [orgId, sites.map((s) => s.id), SITES],
  );
  await pool.query(
    `insert into device_group_member (id, created_at, updated_at, group_id, device_id, source, joined_at)
     select gen_random_uuid(), now(), now(), ($2::uuid[])[1 + (d.n + k) % $3], d.id, 'manual', now()
       from (select id, row_number() over (order by id) as n from device where org_id = $1) d, generate_series(0, 1) as k`,
    [orgId, groups.map((g) => g.id), GROUPS],
  );
  return agents;
}
