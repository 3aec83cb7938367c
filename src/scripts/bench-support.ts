/**
 * What the sections of `npm run bench` share (bench.ts runs them; each section's file holds only what
 * is particular to it): the environment knobs, the organization and the signed-in user a section
 * measures as, one-off HTTP requests, the plain `node:http` server and the NOTIFY hop that serve as
 * ceilings, the CPU meter, the capture of the statements a request sends, and the figures' format.
 * The load generator itself is bench-load.ts (a child process, so it loads none of this).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { Organization } from '../../entities/organization.js';
import { Partner } from '../../entities/partner.js';
import { Membership, User } from '../../entities/user.js';
import { hashPassword } from '../auth/passwords.js';
import { systemRoles } from '../auth/permissions.js';
import type { Runtime } from '../runtime.js';
import type { RunningServer } from '../server.js';
import { percentiles, type LoadRequest, type LoadResult, type Percentiles } from './bench-load.js';

/** A section: runs against the bench's server, prints its figures, answers false when something failed. */
export type BenchSection = (server: RunningServer) => Promise<boolean>;

/** An integer knob from the environment, from 1 to `max`. */
export const bounded = (name: string, fallback: number, max: number) => Math.min(Math.max(1, Number(process.env[name] ?? fallback) || fallback), max);
export const print = (figures: unknown) => console.log(JSON.stringify(figures, null, 2));
export const round = (n: number) => Math.round(n * 100) / 100;
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
export const portOf = (server: RunningServer) => (server.httpServer.address() as AddressInfo).port;

// ── fixtures ────────────────────────────────────────────────────────────────────────────────────

/** A partner and an organization in it, named `name`; answers the organization's id. */
export async function benchOrg(runtime: Runtime, name: string): Promise<string> {
  const em = runtime.orm.em.fork();
  const partner = em.create(Partner, { name: `${name} partner` });
  const org = em.create(Organization, { name, partnerId: partner.id });
  await em.flush();
  return org.id;
}

/**
 * A user of `orgId` with the seeded role `role`, signed in through `POST /auth/login`, so the access
 * token names a session as a real client's does; answers the access token.
 */
export async function signedInUser(runtime: Runtime, port: number, orgId: string, role: string): Promise<string> {
  const roleId = systemRoles().find((r) => r.name === role)?.id;
  if (!roleId) throw new Error(`bench: no seeded role ${role}`);
  const em = runtime.orm.em.fork();
  const password = crypto.randomBytes(12).toString('hex');
  const user = em.create(User, { email: `bench-${crypto.randomBytes(4).toString('hex')}@example.test`, name: `Bench ${role}`, status: 'active', passwordHash: await hashPassword(password) });
  em.create(Membership, { userId: user.id, scope: 'organization', orgId, partnerId: null, roleId, orgAccess: 'all', orgIds: [] });
  await em.flush();
  const login = await request(port, { method: 'POST', path: '/api/v1/auth/login', body: JSON.stringify({ email: user.email, password }) });
  const token = (login.body as { accessToken?: string } | null)?.accessToken;
  if (login.status !== 200 || !token) throw new Error(`bench: login failed: ${login.status} ${JSON.stringify(login.body)}`);
  return token;
}

// ── HTTP ────────────────────────────────────────────────────────────────────────────────────────

/** One request to the server on `port` (127.0.0.1), outside any load; the body parsed when it is JSON. */
export function request(port: number, req: LoadRequest): Promise<{ status: number; body: unknown }> {
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

/**
 * A user of `orgId` with the seeded role `role`, signed in (`signedInUser`): their Bearer header, and
 * GETs with it on the server on `port`, each of which must answer 200 (answers the body).
 */
export async function signedInGetter(runtime: Runtime, port: number, orgId: string, role: string) {
  const headers = { authorization: `Bearer ${await signedInUser(runtime, port, orgId, role)}` };
  const get = async <T>(path: string): Promise<T> => {
    const answer = await request(port, { method: 'GET', path, headers });
    if (answer.status !== 200) throw new Error(`bench: GET ${path}: ${answer.status} ${JSON.stringify(answer.body).slice(0, 300)}`);
    return answer.body as T;
  };
  return { headers, get };
}

/**
 * The cursor the server hands out with the page that ends on row `row` of the cursor list at `path`
 * (with its filters and order, without limit and cursor), reached by walking it `step` rows at a time;
 * `items` picks a page's rows out of its body.
 */
export async function cursorAfterRow<P extends { nextCursor: string | null }>(get: (path: string) => Promise<P>, path: string, row: number, step: number, items: (page: P) => unknown[]): Promise<string> {
  let cursor: string | null = null;
  for (let seen = 0; seen < row; ) {
    const page: P = await get(`${path}${path.includes('?') ? '&' : '?'}limit=${Math.min(step, row - seen)}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`);
    seen += items(page).length;
    cursor = page.nextCursor;
    if (!cursor) throw new Error(`bench: ${path} ends after ${seen} rows, before row ${row}`);
  }
  return cursor!;
}

/**
 * A plain `node:http` server, the HTTP ceiling: each request's body is read whole, `answer` turns it
 * (and the request's headers, for a ceiling that authenticates) into a JSON text, sent with 200 (500
 * if `answer` throws). Runs `fn` with its port, then closes.
 */
export async function withPlainServer<T>(answer: (body: string, req: http.IncomingMessage) => string | Promise<string>, fn: (port: number) => Promise<T>): Promise<T> {
  const plain = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', async () => {
      try {
        const text = await answer(body, req);
        res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text) }).end(text);
      } catch (error) {
        res.writeHead(500).end((error as Error).message);
      }
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

// ── PostgreSQL ──────────────────────────────────────────────────────────────────────────────────

/** The NOTIFY ceiling: NOTIFY from one bare `pg` client until the LISTENing one has it, `samples` times. */
export async function notifyHop(databaseUrl: string, samples: number): Promise<Percentiles> {
  const listener = new pg.Client({ connectionString: databaseUrl });
  const notifier = new pg.Client({ connectionString: databaseUrl });
  await Promise.all([listener.connect(), notifier.connect()]);
  try {
    await listener.query('listen bench_hop');
    const hops: number[] = [];
    for (let i = 0; i < samples; i++) {
      const heard = new Promise<void>((resolve) => listener.once('notification', () => resolve()));
      const sentAt = performance.now();
      await notifier.query(`select pg_notify('bench_hop', '')`);
      await heard;
      hops.push(performance.now() - sentAt);
    }
    return percentiles(hops);
  } finally {
    await Promise.all([listener.end(), notifier.end()]);
  }
}

/** A statement as the server sent it: the text, and the values of its `$n` placeholders if it has any. */
export interface Statement {
  text: string;
  values?: unknown[];
  /** a prepared statement's name */
  name?: string;
}

/**
 * Every statement this process sent to PostgreSQL while `fn` ran, through any `pg` client (the ORM's
 * pool, prepared statements, the job queue, the outbox dispatcher), except those of `ignore` (the
 * bench's own pool).
 */
export async function captureQueries<T>(fn: () => Promise<T>, ignore?: pg.Pool): Promise<{ result: T; queries: Statement[] }> {
  const ours = new WeakSet<object>();
  // The pool's idle clients, and any it opens meanwhile.
  for (const client of (ignore as unknown as { _clients?: object[] } | undefined)?._clients ?? []) ours.add(client);
  const mark = (client: object) => void ours.add(client);
  ignore?.on('connect', mark);
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
    ignore?.off('connect', mark);
  }
}

/** A statement with its literals replaced by `?` and its whitespace collapsed. */
export function shapeOf(text: string): string {
  return text
    .replace(/(savepoint\s+)"?\w+"?/gi, '$1?')
    .replace(/'(?:[^']|'')*'/g, '?')
    .replace(/\b\d+(\.\d+)?\b/g, '?')
    .replace(/\s+/g, ' ')
    .trim();
}

/** Statements grouped by shape, with how many times each ran per unit of work (anything that ran meanwhile, the outbox poll or a job, shows as a fraction). */
export function statementShapes(queries: Statement[], units: number): { perUnit: number; list: string[] } {
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

/** The statements the server sent for `GET path` that `pick` matches (a list's own SQL, without authentication's); at least one. */
export async function serverQueries(pool: pg.Pool, port: number, path: string, headers: Record<string, string>, pick: RegExp): Promise<Statement[]> {
  const { result, queries } = await captureQueries(() => request(port, { method: 'GET', path, headers }), pool);
  if (result.status !== 200) throw new Error(`GET ${path}: ${result.status} ${JSON.stringify(result.body)}`);
  const picked = queries.filter((q) => pick.test(q.text));
  if (picked.length === 0) throw new Error(`no statement matching ${pick} among ${queries.length} statements of GET ${path}`);
  return picked;
}

/** `statements` sent one after another by a bare `pg` client (the ceiling of a read), up to 100 times after 10 unmeasured: p50 and p99 of the whole. */
export async function timeSql(pool: pg.Pool, statements: Statement[], samples: number) {
  const client = await pool.connect();
  try {
    const latencies: number[] = [];
    for (let i = 0; i < 10 + Math.min(samples, 100); i++) {
      const sentAt = performance.now();
      for (const query of statements) await client.query(query.text, query.values);
      if (i >= 10) latencies.push(performance.now() - sentAt);
    }
    const { p50, p99 } = percentiles(latencies);
    return { statements: statements.length, p50Ms: p50, p99Ms: p99 };
  } finally {
    client.release();
  }
}

/** A condition as printed, cut short (a page's ids in `= any(...)` would fill the screen). */
const clipped = (text: string) => (text.length > 300 ? `${text.slice(0, 300)}…` : text);

/** The plan's top node and the node that reads the table, and the execution time. */
export async function explain(pool: pg.Pool, query: Statement) {
  const { rows } = await pool.query(`explain (analyze, buffers, format json) ${query.text}`, query.values);
  const [plan] = rows[0]['QUERY PLAN'] as { Plan: PlanNode; 'Execution Time': number; 'Planning Time': number }[];
  const nodes: string[] = [];
  for (let node: PlanNode | undefined = plan!.Plan; node; node = node.Plans?.[0]) {
    nodes.push(
      [
        node['Node Type'],
        node['Index Name'] ? `using ${node['Index Name']}` : node['Relation Name'] ? `on ${node['Relation Name']}` : '',
        `(rows ${node['Actual Rows']}${node['Rows Removed by Filter'] ? `, removed by filter ${node['Rows Removed by Filter']}` : ''}, shared buffers hit ${node['Shared Hit Blocks'] ?? 0} read ${node['Shared Read Blocks'] ?? 0})`,
        node['Index Cond'] ? `index cond ${clipped(node['Index Cond'])}` : '',
        node.Filter ? `filter ${clipped(node.Filter)}` : '',
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

// ── CPU ─────────────────────────────────────────────────────────────────────────────────────────

/**
 * CPU used over a measured window: this process (the server, or a bare client loop; the load
 * generator runs in its own process), the PostgreSQL backends of the bench's database (read from
 * /proc, when the database server runs on this machine), and how busy the machine was (all its CPUs,
 * whatever runs on them). CPU per request does not depend on what else shares the machine; the rate does.
 */
export class Meter {
  private start: { cpu: NodeJS.CpuUsage; loop: ReturnType<typeof performance.eventLoopUtilization>; machine: ReturnType<typeof machineCpu>; postgres: Map<number, number> | null } | null = null;
  private totals: { processCpuMs: number; postgresCpuMs: number | null; eventLoopBusy: number; machineCpuBusy: number | null } | null = null;

  constructor(private readonly pool: pg.Pool) {}

  async open(): Promise<void> {
    const postgres = await postgresTicks(this.pool);
    this.start = { cpu: process.cpuUsage(), loop: performance.eventLoopUtilization(), machine: machineCpu(), postgres };
  }

  async close(): Promise<void> {
    const start = this.start!;
    const cpu = process.cpuUsage(start.cpu);
    const loop = performance.eventLoopUtilization(start.loop);
    const machine = machineCpu();
    const postgres = await postgresTicks(this.pool);
    this.totals = {
      processCpuMs: (cpu.user + cpu.system) / 1000,
      postgresCpuMs: postgres && start.postgres ? [...postgres].reduce((sum, [pid, ticks]) => sum + ticks - (start.postgres!.get(pid) ?? 0), 0) * (1000 / CLOCK_TICKS) : null,
      eventLoopBusy: round(loop.utilization),
      machineCpuBusy: machine && start.machine ? round((machine.busy - start.machine.busy) / (machine.total - start.machine.total)) : null,
    };
  }

  perRequest(requests: number) {
    const { processCpuMs, postgresCpuMs, eventLoopBusy, machineCpuBusy } = this.totals!;
    const per = (ms: number) => round(ms / Math.max(1, requests));
    return {
      /** this process: the server (or the bare client loop) */
      processCpuMsPerRequest: per(processCpuMs),
      postgresCpuMsPerRequest: postgresCpuMs === null ? null : per(postgresCpuMs),
      /** this process's event loop */
      eventLoopBusy,
      machineCpuBusy,
    };
  }
}

/** A load's result and the CPU used (see Meter) over its measured window. */
/** The bench's own `pg` pool on the server's database (its statements are not the server's). */
export async function withPool<T>(runtime: Runtime, fn: (pool: pg.Pool) => Promise<T>): Promise<T> {
  const pool = new pg.Pool({ connectionString: runtime.databaseUrl, max: 20 });
  try {
    return await fn(pool);
  } finally {
    await pool.end();
  }
}

export async function metered(pool: pg.Pool, load: (onWindow: (edge: 'open' | 'close') => void) => Promise<LoadResult>) {
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

/** Linux's USER_HZ: /proc times are in these ticks per second. */
const CLOCK_TICKS = 100;

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
export function machineCpu(): { busy: number; total: number } | null {
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

// ── figures ─────────────────────────────────────────────────────────────────────────────────────

/** Answers that were not 2xx. */
export function failures(result: LoadResult): number {
  return Object.entries(result.statuses).reduce((n, [status, count]) => (status.startsWith('2') ? n : n + count), 0);
}

/** A load's rate (unless `withRate` is false: one request at a time), latencies, and failures if any. */
export function loadFigures(result: LoadResult, withRate = true) {
  return {
    ...(withRate ? { perSecond: result.perSecond } : {}),
    p50Ms: result.latencyMs.p50,
    p99Ms: result.latencyMs.p99,
    maxMs: result.latencyMs.max,
    requests: result.latencyMs.samples,
    ...(failures(result) > 0 ? { failures: failures(result), firstFailure: result.firstFailure } : {}),
  };
}

export type CpuUsage = Awaited<ReturnType<typeof metered>>['usage'];

/** The rounds' CPU per request, averaged: where a route's time goes (server, PostgreSQL, the load generator). */
export function meanUsage(usages: CpuUsage[]) {
  const mean = (pick: (usage: CpuUsage) => number | null) => round(usages.reduce((sum, usage) => sum + (pick(usage) ?? 0), 0) / usages.length);
  return {
    serverCpuMsPerRequest: mean((u) => u.processCpuMsPerRequest),
    postgresCpuMsPerRequest: mean((u) => u.postgresCpuMsPerRequest),
    loadGeneratorCpuMsPerRequest: mean((u) => u.loadGeneratorCpuMsPerRequest),
  };
}

/**
 * Equal-length runs as one: the mean rate, the median run's p50, the worst run's p99 and max (the
 * generator reports percentiles, not samples), every request and status counted (other figures: the first run's).
 */
export function combined(runs: LoadResult[]): LoadResult {
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
