import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MikroORM } from '@mikro-orm/postgresql';
import { ormConfig } from '../mikro-orm.config.js';
import { RequestContext } from '../src/auth/context.js';
import { withTransaction } from '../src/db/transaction.js';
import { emit } from '../src/events/outbox.js';
import { createLogger } from '../src/logger.js';
import type { Runtime } from '../src/runtime.js';
import { ADMIN_EMAIL, ADMIN_PASSWORD, createTestApp } from './support/app.js';
import { rest } from './support/clients.js';
import { useTestDatabase } from './support/db.js';
import { eventually } from './support/eventually.js';
import { buildOrg, buildUser } from './support/factories.js';
import { useHttpsReceiver } from './support/https-receiver.js';
import { domainEntities } from '../src/domains.js';

const EVENTS = 2000;
const PER_TRANSACTION = 20;
const PATHS = ['/reliable-0', '/reliable-1'];
// Short enough that the killed instance's claims run out quickly, long enough that a busy machine answers in time.
const START_OPTIONS = {
  outboxPollMs: 500,
  jobsProcessEveryMs: 500,
  tunables: { webhooks: { deliveryTimeoutMs: 5000, leaseMarginMs: 1000, recoverEveryMs: 500 } },
};

interface Instance {
  name: string;
  child: ChildProcess;
  exited: Promise<void>;
  output: string[];
}

/** Every instance started, from the moment it is spawned: none outlives the test file, whatever fails. */
const instances: Instance[] = [];

/** One server instance in a process of its own (test/support/instance.mjs, from the build), on `databaseUrl`. */
async function startInstance(name: string, databaseUrl: string): Promise<Instance> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), `rmm-${name}-`));
  const child = spawn(process.execPath, [fileURLToPath(new URL('./support/instance.mjs', import.meta.url))], {
    env: {
      ...process.env,
      NODE_OPTIONS: '',
      NODE_ENV: 'test',
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl,
      DATA_DIR: dataDir,
      SECRET_ENCRYPTION_KEY: 'test-encryption-key-0123456789abcdef',
      JWT_SECRET: 'test-jwt-secret-0123456789abcdefghij',
      ADMIN_EMAIL,
      ADMIN_PASSWORD,
      ALLOW_PRIVATE_NETWORK_TARGETS: 'true',
      LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'error',
      // Every connection of the instance carries its name, so the test can see when PostgreSQL has let go of them.
      PGAPPNAME: name,
      TEST_START_OPTIONS: JSON.stringify(START_OPTIONS),
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const output: string[] = [];
  child.stderr!.on('data', (chunk: Buffer) => output.push(chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => fs.rmSync(dataDir, { recursive: true, force: true }));
  const instance = { name, child, exited, output };
  instances.push(instance);
  await new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => {
      output.push(chunk.toString());
      if (chunk.toString().includes('READY ')) resolve();
    });
    void exited.then(() => reject(new Error(`instance ${name} exited during start-up:\n${output.join('')}`)));
  });
  return instance;
}

const running = (instance: Instance) => instance.child.exitCode === null && instance.child.signalCode === null;

/** SIGTERM (a graceful stop), then SIGKILL for an instance still running after `graceMs`. */
async function stopAll(graceMs: number): Promise<void> {
  for (const instance of instances) if (running(instance)) instance.child.kill('SIGTERM');
  const timer = setTimeout(() => {
    for (const instance of instances) if (running(instance)) instance.child.kill('SIGKILL');
  }, graceMs);
  await Promise.all(instances.map((instance) => instance.exited));
  clearTimeout(timer);
}

// Declared before the receiver's and the database's hooks, so it runs before they close them (afterAll hooks
// run in the order declared), also when the test timed out before its own clean-up ran.
afterAll(() => stopAll(0), 10_000);
const receiver = useHttpsReceiver();
const db = useTestDatabase();

test('two instances, 2,000 events, one instance killed (SIGKILL) mid-stream and restarted: every delivery arrives, none twice but for the requests the killed one had under way, no dead letters', async () => {
  // The organization and its two webhooks, made through the API of an instance that then stops.
  const seed = await createTestApp({ databaseUrl: db.url, env: { ALLOW_PRIVATE_NETWORK_TARGETS: 'true' } });
  const orgId = (await buildOrg(seed)).id;
  const webhookIds: string[] = [];
  try {
    const editor = await buildUser(seed, { orgId, can: ['organizations:read', 'organizations:write'] });
    for (const p of PATHS) {
      const created = await rest(seed, editor.as).post('/webhooks', { name: p, url: receiver.url(p), events: ['alert.triggered'] });
      expect(created.status).toBe(201);
      webhookIds.push(created.body.id);
    }
  } finally {
    await seed.stop();
  }

  // Events are committed straight into the outbox, as a third process would.
  const orm = await MikroORM.init(ormConfig(db.url, { entities: domainEntities }));
  const writer = { orm, log: createLogger('silent') } as unknown as Runtime;
  const sql = async <T>(query: string, params: unknown[] = []) => (await orm.em.fork().getConnection().execute(query, params)) as T[];
  let committed = 0;
  let streaming = true;
  let stream: Promise<void> = Promise.resolve();
  try {
    const [a] = await Promise.all([startInstance('reliability-a', db.url), startInstance('reliability-b', db.url)]);

    stream = (async () => {
      while (streaming && committed < EVENTS) {
        await withTransaction(RequestContext.system(writer, 'test'), async (tx) => {
          for (let i = 0; i < PER_TRANSACTION; i++) await emit(tx, { type: 'alert.triggered', orgId, data: { n: committed + i } as never });
        });
        committed += PER_TRANSACTION;
        await new Promise((resolve) => setTimeout(resolve, 40));
      }
    })();
    const arrivals = () => PATHS.reduce((n, p) => n + receiver.to(p).length, 0);

    // Mid-stream: a third of the events committed and deliveries flowing.
    await eventually(() => committed >= EVENTS / 3 && arrivals() >= 300, 30_000, 'the stream to be under way');
    a.child.kill('SIGKILL');
    await a.exited;
    const killedAt = Date.now();
    const committedAtKill = committed;
    // Once PostgreSQL has dropped the dead instance's sessions (rolling back what it had not committed), what it
    // held is visible: claims it made but never recorded. Those requests may have reached the receiver.
    await eventually(async () => (await sql(`select 1 from pg_stat_activity where application_name = 'reliability-a'`)).length === 0, 10_000, 'the sessions to close');
    const unrecorded = new Set(
      (await sql<{ id: string }>(`select id from webhook_delivery where status in ('pending', 'retrying') and locked_until is not null`)).map((r) => r.id),
    );
    await startInstance('reliability-a2', db.url);
    await stream;
    expect(committedAtKill).toBeLessThan(EVENTS);

    const total = EVENTS * PATHS.length;
    const rows = await eventually(
      async () => {
        const all = await sql<{ id: string; webhook_id: string; event_id: string; status: string; attempt: number; dead_lettered_at: Date | null }>(
          `select id, webhook_id, event_id, status, attempt, dead_lettered_at from webhook_delivery`,
        );
        return all.length === total && all.every((r) => r.status === 'delivered') && all;
      },
      45_000,
      `all ${total} deliveries to be delivered`,
    );

    // Every event reached both webhooks, through one delivery each.
    const received = PATHS.flatMap((p) => receiver.to(p));
    for (const [i, webhookId] of webhookIds.entries()) {
      expect(new Set(rows.filter((r) => r.webhook_id === webhookId).map((r) => r.event_id)).size).toBe(EVENTS);
      expect(new Set(receiver.to(PATHS[i]!).map((r) => r.headers['x-service-event-id'])).size).toBe(EVENTS);
    }
    // Every delivery arrived; none was sent more often than it was attempted, except that a request the killed
    // instance had under way (claimed, never recorded) may have arrived before the kill and again afterwards.
    const times = new Map<string, number[]>();
    for (const r of received) {
      const id = String(r.headers['x-service-delivery-id']);
      times.set(id, [...(times.get(id) ?? []), r.at]);
    }
    expect(new Set(times.keys())).toEqual(new Set(rows.map((r) => r.id)));
    for (const row of rows) {
      const at = times.get(row.id)!;
      if (at.length <= row.attempt) continue;
      // (The receiver notes a request when its event loop has read it: allow for that delay.)
      expect({ id: row.id, arrivals: at.length, unrecordedAtKill: unrecorded.has(row.id), firstBeforeKill: at[0]! <= killedAt + 1000 }).toEqual({
        id: row.id,
        arrivals: row.attempt + 1,
        unrecordedAtKill: true,
        firstBeforeKill: true,
      });
    }
    // The dead-letter queue stays empty.
    expect(rows.filter((r) => r.dead_lettered_at !== null)).toEqual([]);
  } catch (error) {
    for (const instance of instances) console.log(`${instance.name}:\n${instance.output.join('').slice(-4000)}`);
    throw error;
  } finally {
    streaming = false;
    await stream.catch(() => {});
    await stopAll(15_000);
    await orm.close(true);
  }
}, 90_000);
