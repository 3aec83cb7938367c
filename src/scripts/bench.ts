/**
 * `npm run bench`: audited writes in one organization versus two in parallel, then webhook fan-out
 * and delivery throughput on one server over loopback.
 * Boots a server (embedded PostgreSQL, or a scratch database on DATABASE_URL's server), starts an
 * HTTPS receiver with the test certificate, creates BENCH_WEBHOOKS webhooks in one organization,
 * commits BENCH_EVENTS events, and prints fan-out and delivery rates and the latency from an event's
 * commit to its first attempt arriving. Re-executes itself once with NODE_EXTRA_CA_CERTS set to the
 * test CA so the receiver's certificate is trusted (TLS verification stays on).
 * The audit figure: AUDIT_WRITERS concurrent writers commit BENCH_AUDIT_WRITES transactions, each appending
 * an audit entry and then holding its transaction BENCH_AUDIT_HOLD_MS (standing for the rest of a
 * request's work), first all in one organization, then split over two. Appends to one chain queue
 * on its lock until commit; two organizations' chains proceed side by side, so the second rate
 * should be about twice the first.
 * Env: BENCH_WEBHOOKS (default 10, max 200), BENCH_EVENTS (default 100, max 5000), BENCH_TIMEOUT_S (default 120, max 600),
 * BENCH_AUDIT_WRITES (default 200, max 5000), BENCH_AUDIT_HOLD_MS (default 5, max 100).
 */
import 'reflect-metadata';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import pg from 'pg';
import { Organization } from '../../entities/organization.js';
import { Partner } from '../../entities/partner.js';
import { RequestContext } from '../auth/context.js';
import { loadConfig } from '../config.js';
import { withTransaction } from '../db/transaction.js';
import { emit } from '../events/outbox.js';
import { projectRoot } from '../paths.js';
import { startServer } from '../server.js';
import { recordAudit } from '../services/audit.js';
import { createWebhook } from '../services/webhooks.js';

const tls = (name: string) => path.join(projectRoot, 'test', 'fixtures', 'tls', name);

// Node reads NODE_EXTRA_CA_CERTS only at start-up; the receiver is the only peer, so the test CA replaces any other value.
if (process.env.NODE_EXTRA_CA_CERTS !== tls('ca.pem')) {
  const child = spawnSync(process.execPath, [fileURLToPath(import.meta.url)], { stdio: 'inherit', env: { ...process.env, NODE_EXTRA_CA_CERTS: tls('ca.pem') } });
  process.exit(child.status ?? 1);
}

const bounded = (name: string, fallback: number, max: number) => Math.min(Math.max(1, Number(process.env[name] ?? fallback) || fallback), max);
const WEBHOOKS = bounded('BENCH_WEBHOOKS', 10, 200);
const EVENTS = bounded('BENCH_EVENTS', 100, 5000);
const TIMEOUT_MS = bounded('BENCH_TIMEOUT_S', 120, 600) * 1000;
const AUDIT_WRITES = bounded('BENCH_AUDIT_WRITES', 200, 5000);
const AUDIT_HOLD_MS = bounded('BENCH_AUDIT_HOLD_MS', 5, 100);
const AUDIT_WRITERS = 8;

/** first arrival per (webhook path, event id) */
const arrivals = new Map<string, number>();
let requests = 0;
// The receiver runs on its own thread so its TLS work does not share the server's event loop.
const receiver = new Worker(
  `const https = require('node:https'); const fs = require('node:fs'); const { parentPort, workerData } = require('node:worker_threads');
   const server = https.createServer({ cert: fs.readFileSync(workerData.cert), key: fs.readFileSync(workerData.key) }, (req, res) => {
     req.resume();
     req.on('end', () => { parentPort.postMessage(req.url + ' ' + req.headers['x-service-event-id'] + ' ' + Date.now()); res.writeHead(200).end('ok'); });
   });
   server.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: server.address().port }));`,
  { eval: true, workerData: { cert: tls('server.pem'), key: tls('server.key') } },
);
const receiverPort = await new Promise<number>((resolve) => {
  receiver.on('message', (message: { port: number } | string) => {
    if (typeof message !== 'string') return resolve(message.port);
    requests++;
    const at = message.lastIndexOf(' ');
    const key = message.slice(0, at);
    if (!arrivals.has(key)) arrivals.set(key, Number(message.slice(at + 1)));
  });
});

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
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
});
const server = await startServer(config);
const { runtime } = server;
const sql = (query: string, params: unknown[] = []) => runtime.orm.em.fork().getConnection().execute(query, params);

try {
  const em = runtime.orm.em.fork();
  const partner = em.create(Partner, { name: 'Bench partner' });
  const org = em.create(Organization, { name: 'Bench org', partnerId: partner.id });
  const otherOrg = em.create(Organization, { name: 'Bench org 2', partnerId: partner.id });
  await em.flush();

  console.log(`bench: ${AUDIT_WRITES} audited writes by ${AUDIT_WRITERS} writers, each holding its transaction ${AUDIT_HOLD_MS} ms after the append`);
  const auditedWrites = async (orgIds: string[]) => {
    let n = 0;
    const started = Date.now();
    await Promise.all(
      Array.from({ length: AUDIT_WRITERS }, async (_, writer) => {
        while (n < AUDIT_WRITES) {
          const i = n++;
          await withTransaction(RequestContext.system(runtime, 'bench'), async (tx) => {
            await recordAudit(tx, { action: 'bench.write', resourceType: 'bench', resourceId: String(i), orgId: orgIds[writer % orgIds.length]! });
            await tx.em.execute(`select pg_sleep(?)`, [AUDIT_HOLD_MS / 1000]);
          });
        }
      }),
    );
    return Date.now() - started;
  };
  const oneOrgMs = await auditedWrites([org.id]);
  const twoOrgsMs = await auditedWrites([org.id, otherOrg.id]);
  console.log(
    JSON.stringify(
      {
        auditedWrites: AUDIT_WRITES,
        oneOrganizationPerSecond: ((AUDIT_WRITES / oneOrgMs) * 1000).toFixed(1),
        twoOrganizationsPerSecond: ((AUDIT_WRITES / twoOrgsMs) * 1000).toFixed(1),
        speedup: (oneOrgMs / twoOrgsMs).toFixed(2),
      },
      null,
      2,
    ),
  );

  for (let i = 0; i < WEBHOOKS; i++) {
    await createWebhook(RequestContext.system(runtime, 'bench'), {
      orgId: org.id,
      name: `bench ${i}`,
      url: `https://127.0.0.1:${receiverPort}/hook/${i}`,
      secret: crypto.randomBytes(16).toString('hex'),
      events: ['device.offline'],
    });
  }

  console.log(`bench: ${WEBHOOKS} webhooks × ${EVENTS} events = ${WEBHOOKS * EVENTS} deliveries (loopback HTTPS)`);
  const committedAt = new Map<string, number>();
  const started = Date.now();
  // Eight writers commit events concurrently, as request handlers would.
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < EVENTS) {
        const n = next++;
        const event = await withTransaction(RequestContext.system(runtime, 'bench'), (tx) =>
          emit(tx, { type: 'device.offline', orgId: org.id, data: benchDeviceEvent(org.id, n) }),
        );
        committedAt.set(event.id, Date.now());
      }
    }),
  );
  const emittedMs = Date.now() - started;

  const total = WEBHOOKS * EVENTS;
  let fannedOutMs: number | null = null;
  let deliveredMs: number | null = null;
  while (Date.now() - started < TIMEOUT_MS) {
    const [row] = await sql(`select count(*)::int as created, count(*) filter (where status = 'delivered')::int as delivered from webhook_delivery`);
    if (fannedOutMs === null && row.created >= total) fannedOutMs = Date.now() - started;
    if (row.delivered >= total) {
      deliveredMs = Date.now() - started;
      break;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }

  const latencies = [...arrivals.entries()]
    .map(([key, at]) => at - (committedAt.get(key.split(' ')[1]!) ?? at))
    .sort((a, b) => a - b);
  const pct = (p: number) => latencies[Math.min(latencies.length - 1, Math.floor((p / 100) * latencies.length))] ?? NaN;
  const rate = (count: number, ms: number | null) => (ms ? ((count / ms) * 1000).toFixed(1) : `incomplete after ${TIMEOUT_MS / 1000} s`);
  console.log(
    JSON.stringify(
      {
        webhooks: WEBHOOKS,
        events: EVENTS,
        deliveries: total,
        eventsCommittedPerSecond: rate(EVENTS, emittedMs),
        eventsFannedOutPerSecond: rate(EVENTS, fannedOutMs),
        deliveriesCompletedPerSecond: rate(total, deliveredMs),
        commitToFirstAttemptMs: { p50: pct(50), p99: pct(99), max: latencies.at(-1) ?? NaN, samples: latencies.length },
        requestsReceived: requests,
      },
      null,
      2,
    ),
  );
  if (deliveredMs === null || requests !== total) process.exitCode = 1;
} finally {
  await server.stop();
  await receiver.terminate();
  await scratch?.drop();
  fs.rmSync(dataDir, { recursive: true, force: true });
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

function benchDeviceEvent(orgId: string, n: number) {
  const lastSeen = new Date().toISOString();
  return { deviceId: `d-${n}`, orgId, siteId: null, hostname: `host-${n}`, status: 'offline', previousStatus: 'online', lastSeenAt: lastSeen, lastSeen };
}
