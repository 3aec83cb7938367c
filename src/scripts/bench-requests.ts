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
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { GraphQLObjectType, GraphQLSchema, GraphQLString, execute, parse, validate, type DocumentNode } from 'graphql';
import { Membership, User } from '../../entities/user.js';
import { systemRoles } from '../auth/permissions.js';
import type { Runtime } from '../runtime.js';
import type { RunningServer } from '../server.js';
import { runLoad, type LoadRequest, type LoadResult } from './bench-load.js';
import { benchOrg, bounded, captureQueries, combined, failures, loadFigures, meanUsage, metered, portOf, print, request, signedInUser, statementShapes, withPlainServer, withPool, type CpuUsage } from './bench-support.js';

const CONNECTIONS = bounded('BENCH_REQUEST_CONNECTIONS', 50, 1000);
const SECONDS = bounded('BENCH_REQUEST_SECONDS', 3, 300);
const ROUNDS = bounded('BENCH_REQUEST_ROUNDS', 3, 20);
const USERS = bounded('BENCH_REQUEST_USERS', 60, 10_000);
const orgViewerRole = () => systemRoles().find((r) => r.name === 'Organization Viewer')!.id;

export function runRequestSection(server: RunningServer): Promise<boolean> {
  return withPool(server.runtime, (pool) => requestSection(server, pool));
}

async function requestSection(server: RunningServer, pool: pg.Pool): Promise<boolean> {
  const { runtime } = server;
  const port = portOf(server);
  const token = await seed(runtime, port);
  const auth = { authorization: `Bearer ${token}` };
  const gql = (query: string, headers: Record<string, string> = {}): LoadRequest => ({ method: 'POST', path: '/graphql', headers, body: JSON.stringify({ query }) });
  const routes: { name: string; ceiling: 'http' | 'graphql'; request: LoadRequest; goal?: string }[] = [
    { name: 'GET /health', ceiling: 'http', request: { method: 'GET', path: '/health' }, goal: '≥ 25 %' },
    { name: 'GET /api/v1/users/me (Bearer)', ceiling: 'http', request: { method: 'GET', path: '/api/v1/users/me', headers: auth }, goal: '≥ 10 %, p99 < 50 ms' },
    { name: 'GET /api/v1/users?limit=50 (Bearer)', ceiling: 'http', request: { method: 'GET', path: '/api/v1/users?limit=50', headers: auth }, goal: '≥ 3 %' },
    { name: 'GraphQL { serviceInfo { version } }', ceiling: 'graphql', request: gql('{ serviceInfo { version } }') },
    { name: 'GraphQL { me { email } } (Bearer)', ceiling: 'graphql', request: gql('{ me { email } }', auth), goal: '≥ 8 %' },
  ];
  console.log(`bench: requests — ${CONNECTIONS} connections; per route ${ROUNDS} rounds of its ceiling then itself, ${SECONDS} s each after a 1 s warm-up; ${USERS} users in the organization`);

  const load = { connections: CONNECTIONS, warmupMs: 1000, durationMs: SECONDS * 1000 };
  const ceilingOf = (kind: 'http' | 'graphql') =>
    kind === 'http'
      ? withPlainServer(plainHealth, (plainPort) => runLoad({ ...load, port: plainPort, requests: [{ method: 'GET', path: '/health' }] }))
      : withPlainServer(plainGraphql(), (plainPort) => runLoad({ ...load, port: plainPort, requests: [gql('{ me { email } }', auth)] }));
  let ok = true;
  const ceilings = { http: [] as LoadResult[], graphql: [] as LoadResult[] };
  const figures: Record<string, unknown> = {};
  for (const route of routes) {
    const statements = await statementsPerRequest(port, route.request);
    // Rounds of the ceiling and the route back to back: a load that comes and goes on the machine
    // (other processes) weighs on both sides of the ratio.
    const pairs: { ceiling: LoadResult; result: LoadResult; usage: CpuUsage }[] = [];
    for (let i = 0; i < ROUNDS; i++) {
      const ceiling = await ceilingOf(route.ceiling);
      const { result, usage } = await metered(pool, (onWindow) => runLoad({ ...load, port, requests: [route.request] }, onWindow));
      pairs.push({ ceiling, result, usage });
    }
    ceilings[route.ceiling].push(...pairs.map((p) => p.ceiling));
    const result = combined(pairs.map((p) => p.result));
    const ceiling = combined(pairs.map((p) => p.ceiling));
    figures[route.name] = {
      ...loadFigures(result),
      ...meanUsage(pairs.map((p) => p.usage)),
      ofCeiling: `${((result.perSecond / ceiling.perSecond) * 100).toFixed(1)} %`,
      ceilingPerSecond: ceiling.perSecond,
      ...(route.goal ? { goal: route.goal } : {}),
      statementsPerRequest: statements,
    };
    ok = ok && failures(result) === 0 && failures(ceiling) === 0;
  }
  print({
    requests: {
      connections: CONNECTIONS,
      ceilingPlainNodeHttp: loadFigures(combined(ceilings.http)),
      ceilingPlainGraphqlJsExecute: loadFigures(combined(ceilings.graphql)),
      routes: figures,
    },
  });
  return ok;
}

/**
 * An organization of USERS users (one Organization Admin, signed in, the rest viewers); answers the
 * admin's access token, checked against the two REST routes measured.
 */
async function seed(runtime: Runtime, port: number): Promise<string> {
  const orgId = await benchOrg(runtime, 'Bench requests org');
  const em = runtime.orm.em.fork();
  const suffix = crypto.randomBytes(4).toString('hex');
  for (let i = 1; i < USERS; i++) {
    const user = em.create(User, { email: `bench-user-${suffix}-${i}@example.test`, name: `Bench User ${String(i).padStart(5, '0')}`, status: 'active' });
    em.create(Membership, { userId: user.id, scope: 'organization', orgId, partnerId: null, roleId: orgViewerRole(), orgAccess: 'all', orgIds: [] });
  }
  await em.flush();
  const token = await signedInUser(runtime, port, orgId, 'Organization Admin');
  for (const path of ['/api/v1/users/me', '/api/v1/users?limit=50']) {
    const answer = await request(port, { method: 'GET', path, headers: { authorization: `Bearer ${token}` } });
    if (answer.status !== 200) throw new Error(`bench: ${path} answered ${answer.status} ${JSON.stringify(answer.body)}`);
  }
  return token;
}

/** The SQL statements one request sends, over 20 requests one at a time. */
async function statementsPerRequest(port: number, req: LoadRequest): Promise<number> {
  const samples = 20;
  const { queries } = await captureQueries(async () => {
    for (let i = 0; i < samples; i++) await request(port, req);
  });
  return statementShapes(queries, samples).perUnit;
}

/** The HTTP ceiling's answer: a small JSON body, as `/health` answers. */
const plainHealth = () => JSON.stringify({ status: 'ok', version: '0.0.0', uptime: Math.round(performance.now() / 1000) });

/**
 * The GraphQL ceiling's answer: graphql-js with the document looked up by its text (parsed and
 * validated on first sight), `execute` on a schema with `me { email }` and `serviceInfo { version }`
 * resolved in memory, the result serialized.
 */
function plainGraphql(): (body: string) => Promise<string> {
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
  return async (body) => {
    const { query } = JSON.parse(body) as { query: string };
    let document = documents.get(query);
    if (!document) {
      document = parse(query);
      if (validate(schema, document).length > 0) throw new Error('invalid');
      documents.set(query, document);
    }
    return JSON.stringify(await execute({ schema, document }));
  };
}
