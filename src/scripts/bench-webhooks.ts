/**
 * The webhook figures of `npm run bench` (section `webhooks`), each printed beside a ceiling measured
 * in the same run: BENCH_WEBHOOKS (default 10) webhooks of one organization, all subscribed to the
 * bench's event type, pointing at an HTTPS receiver on its own thread (the test certificate; TLS
 * verification on) that answers 200 at once and notes when each request arrived.
 *
 * - ceilings: a bare keep-alive `https` client loop (signed-delivery-sized bodies) against the same
 *   receiver, BENCH_CEILING_REQUESTS requests as many at a time as the delivery worker sends (the
 *   rate beside burst and sustained), and up to 500 one at a time (the latency beside the unloaded
 *   and sustained ones, with one NOTIFY → LISTEN hop between bare `pg` clients: a delivery takes two,
 *   outbox → dispatcher and fan-out → worker).
 * - unloaded: BENCH_UNLOADED_EVENTS events, one at a time (the next once every delivery of the last has
 *   arrived): commit → first attempt arriving at the receiver, p50/p99.
 * - burst: BENCH_EVENTS (default 2,000) events committed by 4 writers, BENCH_EVENTS_PER_TRANSACTION
 *   (default 500) per transaction, so the backlog lands faster than it can be fanned out (a site
 *   losing power): events fanned out per second (commit of the first → every one dispatched, its
 *   deliveries inserted), deliveries completed per second (→ every delivery recorded delivered), and
 *   commit → first attempt under that backlog (informational: the backlog drains at the completed rate).
 * - sustained: BENCH_SUSTAIN_RATE (default 500) deliveries per second offered for BENCH_SUSTAIN_S
 *   (default 10) seconds, as events paced evenly: commit → first attempt p50/p99 and the rate completed.
 * - cross-instance: a second server instance on the same database; a graphql-ws client of it,
 *   subscribed to `domainEvents` as an Organization Viewer, receives BENCH_SUBSCRIPTION_EVENTS events
 *   committed through the first instance at 20 per second (each also fanned out to every webhook):
 *   commit → subscription message, p50/p99. Ceiling: one NOTIFY → LISTEN hop between bare `pg`
 *   clients (the path has two: outbox → dispatcher, dispatcher → the other instance).
 *
 * Events are BENCH_EVENT_TYPE (default `alert.triggered`, which only the webhook fan-out consumes, with
 * a device-event-shaped payload); with `device.offline` (a random device id) the other subscribers of
 * device events run in the same dispatcher transactions too.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { RequestContext } from '../auth/context.js';
import { withTransaction } from '../db/transaction.js';
import { emit } from '../events/outbox.js';
import type { DomainEventType } from '../events/types.js';
import { projectRoot } from '../paths.js';
import type { Runtime } from '../runtime.js';
import { startServer, type RunningServer } from '../server.js';
import { createWebhook, type CreateWebhookInput } from '../services/webhooks/webhooks.js';
import { percentiles, type Percentiles } from './bench-load.js';
import { benchOrg, bounded, notifyHop, portOf, print, signedInUser, sleep } from './bench-support.js';

const WEBHOOKS = bounded('BENCH_WEBHOOKS', 10, 200);
const EVENTS = bounded('BENCH_EVENTS', 2000, 20_000);
const UNLOADED_EVENTS = bounded('BENCH_UNLOADED_EVENTS', 100, 5000);
const SUSTAIN_RATE = bounded('BENCH_SUSTAIN_RATE', 500, 10_000);
const SUSTAIN_S = bounded('BENCH_SUSTAIN_S', 10, 300);
const SUBSCRIPTION_EVENTS = bounded('BENCH_SUBSCRIPTION_EVENTS', 200, 5000);
const CEILING_REQUESTS = bounded('BENCH_CEILING_REQUESTS', 5000, 100_000);
const TIMEOUT_MS = bounded('BENCH_TIMEOUT_S', 120, 600) * 1000;
const BURST_WRITERS = 4;
const PER_TRANSACTION = bounded('BENCH_EVENTS_PER_TRANSACTION', 500, 5000);
const EVENT_TYPE = (process.env.BENCH_EVENT_TYPE ?? 'alert.triggered') as DomainEventType;

const tls = (name: string) => path.join(projectRoot, 'test', 'fixtures', 'tls', name);
const perSecond = (count: number, ms: number | null) => (ms === null ? null : Math.round((count / ms) * 10_000) / 10);

/** What the receiver saw: one entry per request, noted on its own thread. */
interface Arrival {
  path: string;
  eventId: string;
  deliveryId: string;
  at: number;
}

/** An HTTPS receiver on its own thread (its TLS work must not share the server's event loop); arrivals come back in batches. */
async function startReceiver(): Promise<{ port: number; arrivals: Arrival[]; onArrival(fn: (a: Arrival) => void): void; close(): Promise<void> }> {
  const worker = new Worker(
    `const https = require('node:https'); const fs = require('node:fs'); const { parentPort, workerData } = require('node:worker_threads');
     let batch = [];
     setInterval(() => { if (batch.length) { parentPort.postMessage(batch); batch = []; } }, 5).unref();
     const server = https.createServer({ cert: fs.readFileSync(workerData.cert), key: fs.readFileSync(workerData.key) }, (req, res) => {
       req.resume();
       req.on('end', () => {
         batch.push([req.url, req.headers['x-service-event-id'] || '', req.headers['x-service-delivery-id'] || '', Date.now()]);
         res.writeHead(200).end('ok');
       });
     });
     server.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: server.address().port }));`,
    { eval: true, workerData: { cert: tls('server.pem'), key: tls('server.key') } },
  );
  const arrivals: Arrival[] = [];
  const listeners: ((a: Arrival) => void)[] = [];
  const port = await new Promise<number>((resolve) => {
    worker.on('message', (message: { port: number } | [string, string, string, number][]) => {
      if (!Array.isArray(message)) return resolve(message.port);
      for (const [p, eventId, deliveryId, at] of message) {
        const arrival = { path: p, eventId, deliveryId, at };
        arrivals.push(arrival);
        for (const fn of listeners) fn(arrival);
      }
    });
  });
  return { port, arrivals, onArrival: (fn) => void listeners.push(fn), close: async () => void (await worker.terminate()) };
}

/** The ceiling: `concurrency` keep-alive client loops POSTing `total` requests to the receiver. */
async function ceiling(port: number, concurrency: number, total: number): Promise<{ perSecond: number; latencyMs: Percentiles; concurrency: number; requests: number }> {
  const agent = new https.Agent({ keepAlive: true });
  const body = JSON.stringify({ id: crypto.randomUUID(), type: EVENT_TYPE, timestamp: new Date().toISOString(), orgId: crypto.randomUUID(), data: benchEventData() });
  const latencies: number[] = [];
  let sent = 0;
  const post = () =>
    new Promise<void>((resolve, reject) => {
      const started = performance.now();
      const request = https.request(
        { host: '127.0.0.1', port, path: '/ceiling', method: 'POST', agent, headers: { 'content-type': 'application/json', 'x-service-event-id': 'ceiling' } },
        (response) => {
          response.resume();
          response.on('end', () => {
            latencies.push(performance.now() - started);
            resolve();
          });
        },
      );
      request.on('error', reject);
      request.end(body);
    });
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (sent < total) {
        sent++;
        await post();
      }
    }),
  );
  const ms = performance.now() - started;
  agent.destroy();
  return { perSecond: perSecond(total, ms)!, latencyMs: percentiles(latencies), concurrency, requests: total };
}

function benchEventData() {
  const lastSeen = new Date().toISOString();
  const deviceId = crypto.randomUUID();
  return { deviceId, orgId: '', siteId: null, hostname: `host-${deviceId.slice(0, 8)}`, status: 'offline', previousStatus: 'online', lastSeenAt: lastSeen, lastSeen };
}

/** Commits `perTransaction` events in one transaction; answers each event's id and the commit time. */
async function commitEvents(runtime: Runtime, orgId: string, perTransaction = 1): Promise<{ ids: string[]; at: number }> {
  const ids = await withTransaction(RequestContext.system(runtime, 'bench'), async (tx) => {
    const made: string[] = [];
    for (let i = 0; i < perTransaction; i++) {
      const event = await emit(tx, { type: EVENT_TYPE, orgId, data: { ...benchEventData(), orgId } } as Parameters<typeof emit>[1]);
      made.push(event.id);
    }
    return made;
  });
  return { ids, at: Date.now() };
}

async function waitFor(what: string, probe: () => Promise<boolean> | boolean, deadline: number, everyMs = 20): Promise<boolean> {
  for (;;) {
    if (await probe()) return true;
    if (Date.now() > deadline) {
      console.log(`bench: gave up waiting for ${what}`);
      return false;
    }
    await sleep(everyMs);
  }
}

export async function runWebhookSection(server: RunningServer): Promise<boolean> {
  const { runtime } = server;
  const sql = async <T>(query: string, params: unknown[] = []) => (await runtime.orm.em.fork().getConnection().execute(query, params)) as T[];
  const undispatched = async () => (await sql<{ n: number }>(`select count(*)::int as n from outbox_event where dispatched_at is null`))[0]!.n;
  const unfinished = async () => (await sql<{ n: number }>(`select count(*)::int as n from webhook_delivery where status in ('pending', 'retrying')`))[0]!.n;
  const receiver = await startReceiver();
  const secondDir = fs.mkdtempSync(path.join(runtime.config.dataDir, 'second-'));
  let second: RunningServer | null = null;
  let ok = true;
  try {
    const orgId = await benchOrg(runtime, 'Webhook bench org');
    for (let i = 0; i < WEBHOOKS; i++) {
      await createWebhook(RequestContext.system(runtime, 'bench'), {
        orgId,
        name: `bench ${i}`,
        url: `https://127.0.0.1:${receiver.port}/hook/${i}`,
        secret: crypto.randomBytes(16).toString('hex'),
        events: [EVENT_TYPE as CreateWebhookInput['events'][number]],
      });
    }
    const { concurrency, perWebhookConcurrency } = runtime.tunables.webhooks;
    console.log(
      `bench: webhooks: ${WEBHOOKS} webhooks subscribed to ${EVENT_TYPE}, loopback HTTPS receiver answering 200 at once; ` +
        `delivery worker: ${concurrency} requests in flight, ${perWebhookConcurrency} per webhook`,
    );

    // ── ceilings: the same receiver from a bare keep-alive https client loop, one request at a time and
    // as many at once as the worker sends; one NOTIFY hop (a delivery takes two: outbox → dispatcher,
    // fan-out → worker; a cross-instance subscription message two as well) ──
    const bareOne = await ceiling(receiver.port, 1, Math.min(CEILING_REQUESTS, 500));
    const bare = await ceiling(receiver.port, concurrency, CEILING_REQUESTS);
    const hop = await notifyHop(runtime.databaseUrl, 200);

    /** commit time of each event, and the first arrival of each (event, webhook) */
    const committedAt = new Map<string, number>();
    const firstArrival = new Map<string, number>();
    let webhookArrivals = 0;
    receiver.onArrival((a) => {
      if (!a.path.startsWith('/hook/')) return;
      webhookArrivals++;
      const key = `${a.eventId} ${a.path}`;
      if (!firstArrival.has(key)) firstArrival.set(key, a.at);
    });
    const latencyOf = (ids: Iterable<string>) => {
      const values: number[] = [];
      for (const id of ids) {
        const committed = committedAt.get(id)!;
        for (let w = 0; w < WEBHOOKS; w++) {
          const at = firstArrival.get(`${id} /hook/${w}`);
          if (at !== undefined) values.push(at - committed);
        }
      }
      return percentiles(values);
    };

    // ── unloaded ──
    const unloadedIds: string[] = [];
    const unloadedDeadline = Date.now() + TIMEOUT_MS;
    for (let i = 0; i < UNLOADED_EVENTS && ok; i++) {
      const before = webhookArrivals;
      const { ids, at } = await commitEvents(runtime, orgId);
      committedAt.set(ids[0]!, at);
      unloadedIds.push(ids[0]!);
      ok = await waitFor('the unloaded deliveries', () => webhookArrivals >= before + WEBHOOKS, unloadedDeadline, 2);
      await sleep(10);
    }
    ok = (await waitFor('the unloaded deliveries to be recorded', async () => (await unfinished()) === 0, Date.now() + TIMEOUT_MS)) && ok;
    print({
      unloaded: {
        events: UNLOADED_EVENTS,
        deliveries: UNLOADED_EVENTS * WEBHOOKS,
        commitToFirstAttemptMs: latencyOf(unloadedIds),
        ceilingBareHttpsRequestMs: bareOne.latencyMs,
        ceilingOneNotifyHopMs: hop,
      },
    });

    // ── burst ──
    const burstIds: string[] = [];
    const burstStarted = Date.now();
    const deadline = burstStarted + TIMEOUT_MS;
    let next = 0;
    await Promise.all(
      Array.from({ length: BURST_WRITERS }, async () => {
        while (next < EVENTS) {
          const n = Math.min(PER_TRANSACTION, EVENTS - next);
          next += n;
          const { ids, at } = await commitEvents(runtime, orgId, n);
          for (const id of ids) {
            committedAt.set(id, at);
            burstIds.push(id);
          }
        }
      }),
    );
    const committedMs = Date.now() - burstStarted;
    let fannedOutMs: number | null = null;
    let completedMs: number | null = null;
    if (await waitFor('the burst to be fanned out', async () => (await undispatched()) === 0, deadline)) fannedOutMs = Date.now() - burstStarted;
    if (await waitFor('the burst to be delivered', async () => (await unfinished()) === 0, deadline, 50)) completedMs = Date.now() - burstStarted;
    ok = ok && completedMs !== null;
    print({
      burst: {
        events: EVENTS,
        deliveries: EVENTS * WEBHOOKS,
        eventsCommittedPerSecond: perSecond(EVENTS, committedMs),
        eventsFannedOutPerSecond: perSecond(EVENTS, fannedOutMs),
        deliveryRowsPerSecond: perSecond(EVENTS * WEBHOOKS, fannedOutMs),
        deliveriesCompletedPerSecond: perSecond(EVENTS * WEBHOOKS, completedMs),
        ceilingBareHttps: { perSecond: bare.perSecond, concurrency },
        commitToFirstAttemptMs: latencyOf(burstIds),
      },
    });

    // ── sustained ──
    const eventsPerSecond = SUSTAIN_RATE / WEBHOOKS;
    const sustainedEvents = Math.round(eventsPerSecond * SUSTAIN_S);
    const sustainedIds: string[] = [];
    const sustainStarted = Date.now();
    const pending: Promise<void>[] = [];
    for (let i = 0; i < sustainedEvents; i++) {
      const due = sustainStarted + (i * 1000) / eventsPerSecond;
      if (due > Date.now()) await sleep(due - Date.now());
      pending.push(
        commitEvents(runtime, orgId).then(({ ids, at }) => {
          committedAt.set(ids[0]!, at);
          sustainedIds.push(ids[0]!);
        }),
      );
    }
    await Promise.all(pending);
    const offeredMs = Date.now() - sustainStarted;
    let sustainedMs: number | null = null;
    if (await waitFor('the sustained deliveries', async () => (await undispatched()) === 0 && (await unfinished()) === 0, Date.now() + TIMEOUT_MS, 50)) {
      sustainedMs = Date.now() - sustainStarted;
    }
    ok = ok && sustainedMs !== null;
    print({
      sustained: {
        offeredDeliveriesPerSecond: perSecond(sustainedEvents * WEBHOOKS, offeredMs),
        deliveriesCompletedPerSecond: perSecond(sustainedEvents * WEBHOOKS, sustainedMs),
        ceilingBareHttps: { perSecond: bare.perSecond, concurrency },
        seconds: SUSTAIN_S,
        commitToFirstAttemptMs: latencyOf(sustainedIds),
        ceilingBareHttpsRequestMs: bareOne.latencyMs,
        ceilingOneNotifyHopMs: hop,
      },
    });

    // ── cross-instance subscription ──
    second = await startServer({ ...runtime.config, port: 0, databaseUrl: runtime.databaseUrl, dataDir: secondDir });
    const token = await signedInUser(runtime, portOf(server), orgId, 'Organization Viewer');
    const received = new Map<string, number>();
    const client = createClient({ url: `${second.url.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${token}` } });
    try {
      client.subscribe(
        { query: `subscription { domainEvents(types: ["${EVENT_TYPE}"]) { id } }` },
        {
          next: (message) => {
            const id = (message.data as { domainEvents: { id: string } } | undefined)?.domainEvents.id;
            if (id && !received.has(id)) received.set(id, Date.now());
          },
          error: (error) => console.log('bench: subscription error', error),
          complete: () => {},
        },
      );
      // graphql-ws does not acknowledge a subscription: events are committed until one arrives.
      ok = (await waitFor('the subscription to be live', async () => (await commitEvents(runtime, orgId), received.size > 0), Date.now() + 30_000, 200)) && ok;
      const subscriptionIds: string[] = [];
      const started = Date.now();
      for (let i = 0; i < SUBSCRIPTION_EVENTS; i++) {
        const due = started + i * 50;
        if (due > Date.now()) await sleep(due - Date.now());
        const { ids, at } = await commitEvents(runtime, orgId);
        committedAt.set(ids[0]!, at);
        subscriptionIds.push(ids[0]!);
      }
      ok = (await waitFor('the subscription messages', () => subscriptionIds.every((id) => received.has(id)), Date.now() + 30_000)) && ok;
      const latencies = subscriptionIds.filter((id) => received.has(id)).map((id) => received.get(id)! - committedAt.get(id)!);
      print({
        crossInstanceSubscription: {
          events: SUBSCRIPTION_EVENTS,
          eventsPerSecond: 20,
          commitToSubscriberMs: percentiles(latencies),
          ceilingOneNotifyHopMs: hop,
        },
      });
      await waitFor('the last deliveries', async () => (await undispatched()) === 0 && (await unfinished()) === 0, Date.now() + TIMEOUT_MS, 50);
    } finally {
      await client.dispose();
    }

    const [counts] = await sql<{ delivered: number; failed: number; total: number }>(
      `select count(*) filter (where status = 'delivered')::int as delivered, count(*) filter (where status = 'failed')::int as failed, count(*)::int as total from webhook_delivery`,
    );
    const perDelivery = new Map<string, number>();
    for (const a of receiver.arrivals) if (a.path.startsWith('/hook/')) perDelivery.set(a.deliveryId, (perDelivery.get(a.deliveryId) ?? 0) + 1);
    const twice = [...perDelivery.values()].filter((n) => n > 1).length;
    print({ check: { deliveryRows: counts!.total, delivered: counts!.delivered, deadLettered: counts!.failed, requestsReceived: webhookArrivals, deliveriesReceivedTwice: twice } });
    if (counts!.delivered !== counts!.total || twice > 0) ok = false;
  } finally {
    await second?.stop();
    await receiver.close();
    fs.rmSync(secondDir, { recursive: true, force: true });
  }
  return ok;
}
