/**
 * `npm run bench`: each section prints its figures beside a ceiling measured in the same run.
 * Boots a server (embedded PostgreSQL, or a scratch database on DATABASE_URL's server). Re-executes
 * itself once with NODE_EXTRA_CA_CERTS set to the test CA so the webhook receiver's certificate is
 * trusted (TLS verification stays on).
 *
 * Sections: `npm run bench -- <section>…` (or BENCH_SECTIONS=a,b) runs only those; none named runs all.
 * - `requests`: `/health`, authenticated REST reads and GraphQL beside plain `node:http` and graphql-js (bench-requests.ts);
 * - `audit`: AUDIT_WRITERS concurrent writers commit BENCH_AUDIT_WRITES (default 200, max 5000)
 *   transactions, each appending an audit entry and then holding its transaction BENCH_AUDIT_HOLD_MS
 *   (default 5, max 100; standing for the rest of a request's work), first all in one organization,
 *   then split over two. Appends to one chain queue on its lock until commit; two organizations'
 *   chains proceed side by side, so the second rate should be about twice the first. Ceiling: the
 *   same transactions without the append (nothing queues);
 * - `webhooks`: fan-out, delivery, latency, cross-instance subscriptions (bench-webhooks.ts);
 * - `heartbeats`, `device-list`, `device-events` (`devices` stands for the three): bench-devices.ts;
 * - `patches`: agents' patch reports (first and steady) beside their statements replayed bare, and the
 *   patch list's first and deep pages beside its SQL (bench-patches.ts);
 * - `graphql`: queries through Apollo beside graphql-js `execute` on the same schema, and thousands of
 *   graphql-ws subscribers held and reached (bench-graphql.ts).
 * Shared plumbing (ceiling servers, CPU meter, statement capture, fixtures): bench-support.ts.
 */
import 'reflect-metadata';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { RequestContext } from '../auth/context.js';
import { loadConfig } from '../config.js';
import { withTransaction } from '../db/transaction.js';
import { projectRoot } from '../paths.js';
import { startServer, type RunningServer } from '../server.js';
import { recordAudit } from '../services/audit/record.js';
import { DEVICE_SECTIONS } from './bench-devices.js';
import { runGraphqlSection } from './bench-graphql.js';
import { runPatchSection } from './bench-patches.js';
import { runRequestSection } from './bench-requests.js';
import { benchOrg, bounded, machineCpu, print, sleep, type BenchSection } from './bench-support.js';
import { runWebhookSection } from './bench-webhooks.js';

const tls = (name: string) => path.join(projectRoot, 'test', 'fixtures', 'tls', name);

const AUDIT_WRITES = bounded('BENCH_AUDIT_WRITES', 200, 5000);
const AUDIT_HOLD_MS = bounded('BENCH_AUDIT_HOLD_MS', 5, 100);
const AUDIT_WRITERS = 8;

const SECTIONS: Record<string, BenchSection> = { requests: runRequestSection, audit: auditedWrites, webhooks: runWebhookSection, ...DEVICE_SECTIONS, patches: runPatchSection, graphql: runGraphqlSection };
const GROUPS: Record<string, string[]> = { devices: Object.keys(DEVICE_SECTIONS), all: Object.keys(SECTIONS) };

const named = (process.argv.length > 2 ? process.argv.slice(2) : (process.env.BENCH_SECTIONS ?? '').split(',')).map((s) => s.trim()).filter(Boolean);
const unknown = named.filter((name) => !(name in SECTIONS) && !(name in GROUPS));
if (unknown.length > 0) {
  console.error(`bench: unknown section ${unknown.join(', ')}; sections: ${Object.keys(SECTIONS).join(', ')}, ${Object.keys(GROUPS).join(', ')}`);
  process.exit(2);
}
const wanted = new Set((named.length === 0 ? ['all'] : named).flatMap((name) => GROUPS[name] ?? [name]));
const selected = Object.keys(SECTIONS).filter((name) => wanted.has(name));

// Node reads NODE_EXTRA_CA_CERTS only at start-up; the receiver is the only peer, so the test CA replaces any other value.
// The child gets the same arguments and Node flags (e.g. --cpu-prof), and as many open files as the
// hard limit allows (Node cannot raise its own): the graphql section holds a socket per subscriber.
if (process.env.NODE_EXTRA_CA_CERTS !== tls('ca.pem')) {
  const raised = 'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$0" "$@"';
  const child = spawnSync('/bin/sh', ['-c', raised, process.execPath, ...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, NODE_EXTRA_CA_CERTS: tls('ca.pem') },
  });
  process.exit(child.status ?? 1);
}

const scratch = await scratchDatabase();
const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rmm-bench-'));
const config = loadConfig({
  ...process.env,
  NODE_ENV: 'development',
  PORT: '0',
  HOST: '127.0.0.1',
  DATA_DIR: dataDir,
  DATABASE_URL: scratch?.url ?? '',
  ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
  // The load generator is one caller at thousands of requests a minute: the per-caller budget is
  // counted as in production, and set out of reach.
  API_RATE_LIMIT_PER_MINUTE: process.env.API_RATE_LIMIT_PER_MINUTE ?? '1000000000',
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
});
const server = await startServer(config);

try {
  // The figures assume the machine is otherwise idle: say so when it is not.
  const before = machineCpu();
  await sleep(1000);
  const after = machineCpu();
  if (before && after) {
    const busy = (after.busy - before.busy) / (after.total - before.total);
    console.log(`bench: machine ${Math.round(busy * 100)} % busy over 1 s before the sections${busy > 0.1 ? ' — other processes are running; rates will be low' : ''}`);
  }
  const failed: string[] = [];
  // signal-exit (loaded by a dependency) rewrites process.exitCode on the way out: a failed section's
  // code is set again in the last 'exit' listener.
  process.on('exit', () => {
    if (failed.length > 0) process.exitCode = 1;
  });
  for (const name of selected) {
    const started = performance.now();
    if (!(await SECTIONS[name]!(server))) failed.push(name);
    console.log(`bench: ${name} took ${((performance.now() - started) / 1000).toFixed(1)} s`);
  }
} finally {
  await server.stop();
  await scratch?.drop();
  fs.rmSync(dataDir, { recursive: true, force: true });
}

/** The audit section (see the top of this file). */
async function auditedWrites({ runtime }: RunningServer): Promise<boolean> {
  const [org, otherOrg] = [await benchOrg(runtime, 'Bench audit'), await benchOrg(runtime, 'Bench audit 2')];
  console.log(`bench: ${AUDIT_WRITES} audited writes by ${AUDIT_WRITERS} writers, each holding its transaction ${AUDIT_HOLD_MS} ms after the append`);
  /** Milliseconds for AUDIT_WRITES transactions, writer w appending to orgIds[w % orgIds.length] (none: no append). */
  const writes = async (orgIds: string[]) => {
    let n = 0;
    const started = Date.now();
    await Promise.all(
      Array.from({ length: AUDIT_WRITERS }, async (_, writer) => {
        while (n < AUDIT_WRITES) {
          const i = n++;
          await withTransaction(RequestContext.system(runtime, 'bench'), async (tx) => {
            if (orgIds.length > 0) await recordAudit(tx, { action: 'bench.write', resourceType: 'bench', resourceId: String(i), orgId: orgIds[writer % orgIds.length]! });
            await tx.em.execute(`select pg_sleep(?)`, [AUDIT_HOLD_MS / 1000]);
          });
        }
      }),
    );
    return Date.now() - started;
  };
  const rate = (ms: number) => Math.round((AUDIT_WRITES / ms) * 10_000) / 10;
  const oneOrgMs = await writes([org]);
  const twoOrgsMs = await writes([org, otherOrg]);
  const bareMs = await writes([]);
  print({
    audit: {
      auditedWrites: AUDIT_WRITES,
      oneOrganizationPerSecond: rate(oneOrgMs),
      twoOrganizationsPerSecond: rate(twoOrgsMs),
      speedup: Math.round((oneOrgMs / twoOrgsMs) * 100) / 100,
      ceilingWithoutAuditPerSecond: rate(bareMs),
    },
  });
  return true;
}

/** A throwaway database on DATABASE_URL's server, or null to let the server start an embedded PostgreSQL. */
async function scratchDatabase(): Promise<{ url: string; drop(): Promise<void> } | null> {
  const adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) return null;
  const name = `rmm_bench_${crypto.randomBytes(4).toString('hex')}`;
  const admin = async (query: string) => {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      await client.query(query);
    } finally {
      await client.end();
    }
  };
  await admin(`create database ${name}`);
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => admin(`drop database if exists ${name} with (force)`) };
}
