import { WebhookDelivery } from '../entities/webhook.js';
import { RequestContext } from '../src/auth/context.js';
import { withTransaction } from '../src/db/transaction.js';
import { emit } from '../src/events/outbox.js';
import type { Runtime } from '../src/runtime.js';
import { DELIVER_JOB, SWEEP_JOB, sweepDeliveries } from '../src/services/webhooks/delivery-pipeline.js';
import { createTestApp, type TestApp } from './support/app.js';
import { rest } from './support/clients.js';
import { jobsFinished, sql, useTestDatabase } from './support/db.js';
import { eventually } from './support/eventually.js';
import { buildOrg, buildUser } from './support/factories.js';
import { useHttpsReceiver } from './support/https-receiver.js';

const ENV = { ALLOW_PRIVATE_NETWORK_TARGETS: 'true' };

const receiver = useHttpsReceiver();
const db = useTestDatabase();

/** Creating and reading webhooks takes organizations:write and organizations:read. */
async function setup(app: TestApp, path: string, extra: Record<string, unknown> = {}) {
  const orgId = (await buildOrg(app)).id;
  const editor = await buildUser(app, { orgId, can: ['organizations:read', 'organizations:write'] });
  const api = rest(app, editor.as);
  const created = await api.post('/webhooks', { name: path, url: receiver.url(path), events: ['alert.triggered'], ...extra });
  expect(created.status).toBe(201);
  return { orgId, editor, api, webhookId: created.body.id as string };
}

const rows = (runtime: Runtime, webhookId: string) => runtime.orm.em.fork().find(WebhookDelivery, { webhookId }, { orderBy: { createdAt: 'asc' } });

test('a delivery waiting for its retry when the server stops is completed by the next server on the same database', async () => {
  receiver.script('/restart', [{ status: 503 }, { status: 200 }]);
  const first = await createTestApp({ databaseUrl: db.url, env: ENV });
  let second: TestApp | null = null;
  try {
    const { api, webhookId } = await setup(first, '/restart', { retryPolicy: { maxRetries: 3, initialDelayMs: 2500, maxDelayMs: 2500 } });
    const test = await api.post(`/webhooks/${webhookId}/test`, {});
    expect(test.status).toBe(202);
    await eventually(async () => (await rows(first.server.runtime, webhookId))[0]?.status === 'retrying', 10_000, 'retrying');
    await first.stop();
    expect(receiver.to('/restart')).toHaveLength(1);

    second = await createTestApp({ databaseUrl: db.url, env: ENV });
    const runtime = second.server.runtime;
    const done = await eventually(async () => (await rows(runtime, webhookId)).find((d) => d.status === 'delivered'), 15_000, 'delivered after restart');
    expect(done).toMatchObject({ id: test.body.delivery.id, attempt: 2, responseStatus: 200 });
    expect(receiver.to('/restart')).toHaveLength(2);
  } finally {
    await first.stop();
    await second?.stop();
  }
});

test('two instances never send one event to one webhook twice, even with duplicate jobs and sweeps', async () => {
  // The sweep re-queues every unclaimed delivery that is due, at once.
  const start = { tunables: { webhooks: { sweepGraceMs: 0 } } };
  const first = await createTestApp({ databaseUrl: db.url, env: ENV, start });
  const second = await createTestApp({ databaseUrl: db.url, env: ENV, start });
  try {
    const { orgId, api } = await setup(first, '/pair-0');
    const hooks = [(await api.get('/webhooks')).body.data[0].id as string];
    for (let i = 1; i < 4; i++) hooks.push((await api.post('/webhooks', { name: `h${i}`, url: receiver.url(`/pair-${i}`), events: ['alert.triggered'] })).body.id);

    const events = await Promise.all(
      Array.from({ length: 15 }, (_, i) => {
        const runtime = (i % 2 ? first : second).server.runtime;
        return withTransaction(RequestContext.system(runtime, 'test'), (tx) => emit(tx, { type: 'alert.triggered', orgId, data: { n: i } as never }));
      }),
    );
    // Extra jobs for the same deliveries from both instances: the claim lets one send.
    const all = async () => (await Promise.all(hooks.map((id) => rows(first.server.runtime, id)))).flat();
    await eventually(async () => (await all()).length === 60, 15_000, '60 deliveries');
    for (const delivery of (await all()).slice(0, 20)) {
      for (const runtime of [first.server.runtime, second.server.runtime]) await runtime.jobs.schedule(DELIVER_JOB, { deliveryId: delivery.id });
    }
    await Promise.all([sweepDeliveries(RequestContext.system(first.server.runtime, 'test')), sweepDeliveries(RequestContext.system(second.server.runtime, 'test'))]);

    await eventually(async () => (await all()).every((d) => d.status === 'delivered'), 20_000, 'all delivered');
    // A duplicate send would come from a job still holding or about to run for a delivery: wait for every one to end.
    await jobsFinished(first, DELIVER_JOB);
    const received = hooks.flatMap((_, i) => receiver.to(`/pair-${i}`));
    expect(received).toHaveLength(60);
    const pairs = new Set(received.map((r) => `${r.path} ${r.headers['x-service-event-id']}`));
    expect(pairs.size).toBe(60);
    expect(new Set(received.map((r) => r.headers['x-service-event-id']))).toEqual(new Set(events.map((e) => e.id)));
    expect((await all()).every((d) => d.attempt === 1)).toBe(true);
  } finally {
    await second.stop();
    await first.stop();
  }
});

/** A delivery of `webhookId` whose first attempt failed and whose retry came due `dueAgoMs` ago, written straight to the table. */
async function waitingRetry(app: TestApp, webhookId: string, orgId: string, dueAgoMs: number): Promise<WebhookDelivery> {
  const em = app.server.runtime.orm.em.fork();
  const eventId = crypto.randomUUID();
  const delivery = em.create(WebhookDelivery, {
    webhookId,
    orgId,
    event: 'alert.triggered',
    eventId,
    payload: { id: eventId, type: 'alert.triggered', timestamp: new Date().toISOString(), orgId, data: {} },
    status: 'retrying',
    attempt: 1,
    nextAttemptAt: new Date(Date.now() - dueAgoMs),
    createdAt: new Date(Date.now() - dueAgoMs - 1000),
  });
  await em.flush();
  return delivery;
}

const deliverJobsFor = (app: TestApp, deliveryId: string) => sql(app, `select id from agenda_jobs where name = ? and data->>'deliveryId' = ?`, [DELIVER_JOB, deliveryId]);

test('a retry waiting for a free slot when the server stops goes back to the job queue, and the next server sends it at once', async () => {
  // One request per webhook, and a stop that waits for it no longer than the request timeout.
  const start = { tunables: { webhooks: { perWebhookConcurrency: 1, deliveryTimeoutMs: 4000, leaseMarginMs: 500 } } };
  receiver.script('/held', ['hang', { status: 200 }]);
  const first = await createTestApp({ databaseUrl: db.url, env: ENV, start });
  let second: TestApp | null = null;
  try {
    const { api, orgId, webhookId } = await setup(first, '/held');
    expect((await api.post(`/webhooks/${webhookId}/test`, {})).status).toBe(202);
    await eventually(() => receiver.to('/held').length === 1, 10_000, 'the first request to hold the only slot');
    // A retry comes due meanwhile: its job hands it to the worker, which has no slot for it yet.
    const retry = await waitingRetry(first, webhookId, orgId, 0);
    await first.server.runtime.jobs.schedule(DELIVER_JOB, { deliveryId: retry.id });
    await jobsFinished(first, DELIVER_JOB);
    await first.stop();
    expect(receiver.to('/held')).toHaveLength(1);
    receiver.dropHanging();

    // Its job had ended, but the stopping worker queued it again, due now: long before the sweep would
    // find it (two minutes overdue), the next server sends it.
    second = await createTestApp({ databaseUrl: db.url, env: ENV });
    const runtime = second.server.runtime;
    const done = await eventually(async () => (await rows(runtime, webhookId)).find((d) => d.id === retry.id && d.status === 'delivered'), 10_000, 'the retry delivered');
    expect(done).toMatchObject({ attempt: 2, responseStatus: 200 });
  } finally {
    receiver.dropHanging();
    await first.stop();
    await second?.stop();
  }
});

test('the sweep re-queues a retry whose job was lost; it is registered as a recurring job', async () => {
  const app = await createTestApp({ databaseUrl: db.url, env: ENV });
  try {
    const { orgId, webhookId } = await setup(app, '/lost');
    // A retry committed by a process that died before scheduling its job (the worker claims only first attempts from the table).
    const lost = await waitingRetry(app, webhookId, orgId, 10 * 60_000);
    expect(await deliverJobsFor(app, lost.id)).toEqual([]);

    expect(await sweepDeliveries(RequestContext.system(app.server.runtime, 'test'))).toBe(1);
    await eventually(async () => (await rows(app.server.runtime, webhookId))[0]?.status === 'delivered', 10_000, 'delivered');
    expect(receiver.to('/lost').map((r) => r.headers['x-service-delivery-id'])).toEqual([lost.id]);
    expect(await sweepDeliveries(RequestContext.system(app.server.runtime, 'test'))).toBe(0);

    const [job] = await sql(app, `select type, repeat_interval from agenda_jobs where name = ?`, [SWEEP_JOB]);
    expect(job).toEqual({ type: 'single', repeat_interval: '1 minute' });
  } finally {
    await app.stop();
  }
});
