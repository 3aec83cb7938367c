/**
 * `npm run bench`: audited writes in one organization versus two in parallel, then the webhook
 * pipeline (fan-out, delivery, latency, cross-instance subscriptions; see bench-webhooks.ts).
 * Boots a server (embedded PostgreSQL, or a scratch database on DATABASE_URL's server). Re-executes
 * itself once with NODE_EXTRA_CA_CERTS set to the test CA so the webhook receiver's certificate is
 * trusted (TLS verification stays on).
 * The audit figure: AUDIT_WRITERS concurrent writers commit BENCH_AUDIT_WRITES transactions, each appending
 * an audit entry and then holding its transaction BENCH_AUDIT_HOLD_MS (standing for the rest of a
 * request's work), first all in one organization, then split over two. Appends to one chain queue
 * on its lock until commit; two organizations' chains proceed side by side, so the second rate
 * should be about twice the first.
 * Env: BENCH_AUDIT_WRITES (default 200, max 5000), BENCH_AUDIT_HOLD_MS (default 5, max 100); the webhook ones in bench-webhooks.ts.
 * Device figures (heartbeats, the device list, status events to a subscriber): see bench-devices.ts.
 * Request-path figures (`/health`, authenticated REST reads and GraphQL beside plain `node:http` and graphql-js): see bench-requests.ts.
 *
 * Sections: `npm run bench -- <section>…` (or BENCH_SECTIONS=a,b) runs only those; none named runs all.
 * `requests`, `audit`, `webhooks`, `heartbeats`, `device-list`, `device-events`; `devices` stands for the last three.
 */
import 'reflect-metadata';
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { Organization } from '../../entities/organization.js';
import { Partner } from '../../entities/partner.js';
import { RequestContext } from '../auth/context.js';
import { loadConfig } from '../config.js';
import { withTransaction } from '../db/transaction.js';
import { projectRoot } from '../paths.js';
import { startServer } from '../server.js';
import { recordAudit } from '../services/audit.js';
import { DEVICE_SECTIONS, runDeviceSections, type DeviceSection } from './bench-devices.js';
import { REQUEST_SECTIONS, runRequestSections } from './bench-requests.js';
import { runWebhookSection } from './bench-webhooks.js';

const tls = (name: string) => path.join(projectRoot, 'test', 'fixtures', 'tls', name);

const SECTIONS = [...REQUEST_SECTIONS, 'audit', 'webhooks', ...DEVICE_SECTIONS] as const;
type Section = (typeof SECTIONS)[number];
const named = (process.argv.length > 2 ? process.argv.slice(2) : (process.env.BENCH_SECTIONS ?? '').split(',')).map((s) => s.trim()).filter(Boolean);
const unknown = named.filter((name) => name !== 'devices' && name !== 'all' && !SECTIONS.includes(name as Section));
if (unknown.length > 0) {
  console.error(`bench: unknown section ${unknown.join(', ')}; sections: ${SECTIONS.join(', ')}, devices (the device ones), all`);
  process.exit(2);
}
const selected = new Set<Section>(
  named.length === 0 || named.includes('all') ? SECTIONS : named.flatMap((name) => (name === 'devices' ? DEVICE_SECTIONS : [name as Section])),
);

// Node reads NODE_EXTRA_CA_CERTS only at start-up; the receiver is the only peer, so the test CA replaces any other value.
// The child gets the same arguments and Node flags (e.g. --cpu-prof).
if (process.env.NODE_EXTRA_CA_CERTS !== tls('ca.pem')) {
  const child = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url), ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, NODE_EXTRA_CA_CERTS: tls('ca.pem') },
  });
  process.exit(child.status ?? 1);
}

const bounded = (name: string, fallback: number, max: number) => Math.min(Math.max(1, Number(process.env[name] ?? fallback) || fallback), max);
const AUDIT_WRITES = bounded('BENCH_AUDIT_WRITES', 200, 5000);
const AUDIT_HOLD_MS = bounded('BENCH_AUDIT_HOLD_MS', 5, 100);
const AUDIT_WRITERS = 8;

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

try {
  const em = runtime.orm.em.fork();
  const partner = em.create(Partner, { name: 'Bench partner' });
  const org = em.create(Organization, { name: 'Bench org', partnerId: partner.id });
  const otherOrg = em.create(Organization, { name: 'Bench org 2', partnerId: partner.id });
  await em.flush();

  if (selected.has('requests') && !(await runRequestSections(server))) process.exitCode = 1;

  if (selected.has('audit')) {
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
  }

  if (selected.has('webhooks') && !(await runWebhookSection(server))) process.exitCode = 1;

  const devices = DEVICE_SECTIONS.filter((section: DeviceSection) => selected.has(section));
  if (devices.length > 0 && !(await runDeviceSections(server, devices))) process.exitCode = 1;
} finally {
  await server.stop();
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
