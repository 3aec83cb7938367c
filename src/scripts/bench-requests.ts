/**
 * The request-path figures of `npm run bench` (section `requests`), each beside a ceiling measured
 * in the same run by the same load generator (bench-load.ts: BENCH_REQUEST_CONNECTIONS keep-alive
 * connections, default 50, closed loops), in BENCH_REQUEST_ROUNDS rounds (default 3) of the ceiling
 * then the route, BENCH_REQUEST_SECONDS each (default 3) after a 1 s warm-up, so a load that comes and
 * goes on the machine weighs on both sides of each ratio:
 *
 * - `GET /health`, `GET /api/v1/users/me` and `GET /api/v1/users?limit=50` (an Organization Admin
 *   signed in through `POST /auth/login`, so the token names a real session, in an organization of
 *   BENCH_REQUEST_USERS users, default 60), against a plain `node:http` server answering a small
 *   JSON body;
 * - GraphQL `{ serviceInfo { version } }` (no credentials) and `{ me { email } }` (the same Bearer
 *   token), against a plain `node:http` server running graphql-js `execute` on a schema with the
 *   same two fields (document parsed and validated once, as a server caching documents would).
 *
 * Each route's share of its ceiling is printed as `ofCeiling`, and the SQL statements one request
 * sends (counted at the driver, so statements outside the ORM's query log count too). The server logs
 * at the bench's LOG_LEVEL (default warn): run with LOG_LEVEL=info to include the per-request log line.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { GraphQLObjectType, GraphQLSchema, GraphQLString, execute, parse, validate, type DocumentNode } from 'graphql';
import pg from 'pg';
import { Organization } from '../../entities/organization.js';
import { Partner } from '../../entities/partner.js';
import { Membership, User } from '../../entities/user.js';
import { hashPassword } from '../auth/passwords.js';
import { SYSTEM_ROLES } from '../auth/permissions.js';
import type { Runtime } from '../runtime.js';
import type { RunningServer } from '../server.js';
import { runLoad, type LoadRequest, type LoadResult } from './bench-load.js';

export const REQUEST_SECTIONS = ['requests'] as const;
export type RequestSection = (typeof REQUEST_SECTIONS)[number];

const bounded = (name: string, fallback: number, max: number) => Math.min(Math.max(1, Number(process.env[name] ?? fallback) || fallback), max);
const CONNECTIONS = bounded('BENCH_REQUEST_CONNECTIONS', 50, 1000);
const SECONDS = bounded('BENCH_REQUEST_SECONDS', 3, 300);
const ROUNDS = bounded('BENCH_REQUEST_ROUNDS', 3, 20);
const USERS = bounded('BENCH_REQUEST_USERS', 60, 10_000);
const ORG_ADMIN_ROLE = SYSTEM_ROLES.find((r) => r.name === 'Organization Admin')!.id;
const ORG_VIEWER_ROLE = SYSTEM_ROLES.find((r) => r.name === 'Organization Viewer')!.id;

const round = (n: number) => Math.round(n * 1000) / 1000;

export async function runRequestSections(server: RunningServer): Promise<boolean> {
  const { runtime } = server;
  const port = (server.httpServer.address() as AddressInfo).port;
  const started = performance.now();
  const { token } = await seed(runtime, port);
  const auth = { authorization: `Bearer ${token}` };
  const gql = (query: string, headers: Record<string, string> = {}): LoadRequest => ({ method: 'POST', path: '/graphql', headers, body: JSON.stringify({ query }) });
  const routes: { name: string; ceiling: 'http' | 'graphql'; request: LoadRequest; goal: number }[] = [
    { name: 'GET /health', ceiling: 'http', request: { method: 'GET', path: '/health' }, goal: 0.25 },
    { name: 'GET /api/v1/users/me (Bearer)', ceiling: 'http', request: { method: 'GET', path: '/api/v1/users/me', headers: auth }, goal: 0.1 },
    { name: 'GET /api/v1/users?limit=50 (Bearer)', ceiling: 'http', request: { method: 'GET', path: '/api/v1/users?limit=50', headers: auth }, goal: 0.03 },
    { name: 'GraphQL { serviceInfo { version } }', ceiling: 'graphql', request: gql('{ serviceInfo { version } }'), goal: 0 },
    { name: 'GraphQL { me { email } } (Bearer)', ceiling: 'graphql', request: gql('{ me { email } }', auth), goal: 0.08 },
  ];
  console.log(`bench: requests — ${CONNECTIONS} connections; per route ${ROUNDS} rounds of its ceiling then itself, ${SECONDS} s each after a 1 s warm-up; ${USERS} users in the organization`);

  const load = { connections: CONNECTIONS, warmupMs: 1000, durationMs: SECONDS * 1000 };
  const ceilingOf = (kind: 'http' | 'graphql') =>
    kind === 'http'
      ? withPlainHttp((plainPort) => runLoad({ ...load, port: plainPort, requests: [{ method: 'GET', path: '/health' }] }))
      : withPlainGraphql((plainPort) => runLoad({ ...load, port: plainPort, requests: [gql('{ me { email } }', auth)] }));
  let ok = true;
  const ceilings = { http: [] as LoadResult[], graphql: [] as LoadResult[] };
  const figures: Record<string, unknown> = {};
  for (const route of routes) {
    const statements = await statementsPerRequest(runtime, port, route.request);
    // Rounds of the ceiling and the route back to back: a load that comes and goes on the machine
    // (other processes) weighs on both sides of the ratio.
    const pairs: { ceiling: LoadResult; result: LoadResult }[] = [];
    for (let i = 0; i < ROUNDS; i++) pairs.push({ ceiling: await ceilingOf(route.ceiling), result: await runLoad({ ...load, port, requests: [route.request] }) });
    ceilings[route.ceiling].push(...pairs.map((p) => p.ceiling));
    const result = combined(pairs.map((p) => p.result));
    const ceiling = combined(pairs.map((p) => p.ceiling));
    figures[route.name] = {
      ...loadFigures(result),
      ofCeiling: `${((result.perSecond / ceiling.perSecond) * 100).toFixed(1)} %`,
      ceilingPerSecond: ceiling.perSecond,
      ...(route.goal ? { goal: `≥ ${route.goal * 100} %${route.ceiling === 'http' && route.goal === 0.1 ? ', p99 < 50 ms' : ''}` } : {}),
      statementsPerRequest: statements,
    };
    ok = ok && failures(result) === 0 && failures(ceiling) === 0;
  }
  console.log(
    JSON.stringify(
      {
        requests: {
          connections: CONNECTIONS,
          ceilingPlainNodeHttp: loadFigures(combined(ceilings.http)),
          ceilingPlainGraphqlJsExecute: loadFigures(combined(ceilings.graphql)),
          routes: figures,
        },
      },
      null,
      2,
    ),
  );
  console.log(`bench: requests took ${((performance.now() - started) / 1000).toFixed(1)} s`);
  return ok;
}

/**
 * An organization of USERS users (one Organization Admin, the rest viewers) and a session of the
 * admin, signed in through the API so the access token names a refresh-token family.
 */
async function seed(runtime: Runtime, port: number): Promise<{ token: string }> {
  const em = runtime.orm.em.fork();
  const partner = em.create(Partner, { name: 'Bench requests partner' });
  const org = em.create(Organization, { name: 'Bench requests org', partnerId: partner.id });
  const password = crypto.randomBytes(12).toString('hex');
  const suffix = crypto.randomBytes(4).toString('hex');
  const admin = em.create(User, { email: `bench-admin-${suffix}@example.test`, name: 'Bench Admin', status: 'active', passwordHash: await hashPassword(password) });
  em.create(Membership, { userId: admin.id, scope: 'organization', orgId: org.id, partnerId: null, roleId: ORG_ADMIN_ROLE, orgAccess: 'all', orgIds: [] });
  for (let i = 1; i < USERS; i++) {
    const user = em.create(User, { email: `bench-user-${suffix}-${i}@example.test`, name: `Bench User ${String(i).padStart(5, '0')}`, status: 'active' });
    em.create(Membership, { userId: user.id, scope: 'organization', orgId: org.id, partnerId: null, roleId: ORG_VIEWER_ROLE, orgAccess: 'all', orgIds: [] });
  }
  await em.flush();
  const login = await request(port, { method: 'POST', path: '/api/v1/auth/login', body: JSON.stringify({ email: admin.email, password }) });
  const token = (login.body as { accessToken?: string } | null)?.accessToken;
  if (login.status !== 200 || !token) throw new Error(`bench: login failed: ${login.status} ${JSON.stringify(login.body)}`);
  for (const path of ['/api/v1/users/me', '/api/v1/users?limit=50']) {
    const answer = await request(port, { method: 'GET', path, headers: { authorization: `Bearer ${token}` } });
    if (answer.status !== 200) throw new Error(`bench: ${path} answered ${answer.status} ${JSON.stringify(answer.body)}`);
  }
  return { token };
}

/**
 * The SQL statements one request sends, counted where every statement of the process passes (the
 * `pg` client's `query`), over 20 requests one at a time: anything else running meanwhile (the
 * outbox poll, a job) shows up as a fraction.
 */
async function statementsPerRequest(runtime: Runtime, port: number, req: LoadRequest): Promise<number> {
  void runtime;
  const proto = pg.Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
  const original = proto.query;
  let count = 0;
  proto.query = function (this: unknown, ...args: unknown[]) {
    count++;
    return original.apply(this, args);
  };
  const samples = 20;
  try {
    for (let i = 0; i < samples; i++) await request(port, req);
  } finally {
    proto.query = original;
  }
  return round(count / samples);
}

/** A plain `node:http` server answering a small JSON body: the HTTP ceiling. */
async function withPlainHttp<T>(fn: (port: number) => Promise<T>): Promise<T> {
  return withServer((_req, body, res) => {
    void body;
    const answer = JSON.stringify({ status: 'ok', version: '0.0.0', uptime: Math.round(performance.now() / 1000) });
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(answer) }).end(answer);
  }, fn);
}

/**
 * A plain `node:http` server running graphql-js: the body parsed, the document looked up by its text
 * (parsed and validated on first sight), `execute` on a schema with `me { email }` and
 * `serviceInfo { version }` resolved in memory, the result serialized.
 */
async function withPlainGraphql<T>(fn: (port: number) => Promise<T>): Promise<T> {
  const schema = new GraphQLSchema({
    query: new GraphQLObjectType({
      name: 'Query',
      fields: {
        me: { type: new GraphQLObjectType({ name: 'Me', fields: { email: { type: GraphQLString } } }), resolve: () => ({ email: 'bench@example.test' }) },
        serviceInfo: { type: new GraphQLObjectType({ name: 'ServiceInfo', fields: { version: { type: GraphQLString } } }), resolve: () => ({ version: '0.0.0' }) },
      },
    }),
  });
  const documents = new Map<string, DocumentNode>();
  return withServer(async (_req, body, res) => {
    const { query } = JSON.parse(body) as { query: string };
    let document = documents.get(query);
    if (!document) {
      document = parse(query);
      if (validate(schema, document).length > 0) throw new Error('invalid');
      documents.set(query, document);
    }
    const answer = JSON.stringify(await execute({ schema, document }));
    res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(answer) }).end(answer);
  }, fn);
}

async function withServer<T>(handle: (req: http.IncomingMessage, body: string, res: http.ServerResponse) => unknown, fn: (port: number) => Promise<T>): Promise<T> {
  const plain = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => void handle(req, body, res));
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
 * Equal-length runs as one: the mean rate, the median run's p50, the worst run's p99 and max (the
 * generator reports percentiles, not samples), every request and status counted (other figures: the first run's).
 */
function combined(runs: LoadResult[]): LoadResult {
  const by = (pick: (r: LoadResult) => number) => [...runs].sort((x, y) => pick(x) - pick(y));
  const statuses: Record<string, number> = {};
  for (const run of runs) for (const [status, n] of Object.entries(run.statuses)) statuses[status] = (statuses[status] ?? 0) + n;
  return {
    ...runs[0]!,
    perSecond: Math.round(runs.reduce((sum, r) => sum + r.perSecond, 0) / runs.length),
    latencyMs: {
      p50: by((r) => r.latencyMs.p50)[Math.floor(runs.length / 2)]!.latencyMs.p50,
      p99: Math.max(...runs.map((r) => r.latencyMs.p99)),
      max: Math.max(...runs.map((r) => r.latencyMs.max)),
      samples: runs.reduce((sum, r) => sum + r.latencyMs.samples, 0),
    },
    statuses,
    firstFailure: runs.find((r) => r.firstFailure)?.firstFailure ?? null,
  };
}

function loadFigures(result: LoadResult) {
  return {
    perSecond: result.perSecond,
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

function request(port: number, req: LoadRequest): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string | number> = { ...req.headers };
    if (req.body !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(req.body) });
    const outgoing = http.request({ host: '127.0.0.1', port, method: req.method, path: req.path, headers }, (res) => {
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
    outgoing.on('error', reject);
    outgoing.end(req.body);
  });
}
