import { MikroORM } from '@mikro-orm/postgresql';
import { createClient, type Client } from 'graphql-ws';
import pg from 'pg';
import WebSocket from 'ws';
import { ormConfig } from '../mikro-orm.config.js';
import { RequestContext } from '../src/auth/context.js';
import { withTransaction } from '../src/db/transaction.js';
import { DOMAIN_EVENT_TOPIC } from '../src/events/dispatcher.js';
import { emit } from '../src/events/outbox.js';
import { PUBSUB_CHANNEL } from '../src/events/pubsub.js';
import type { DomainEvent, EventSubscriber } from '../src/events/types.js';
import type { Runtime } from '../src/runtime.js';
import { createTestApp } from './support/app.js';
import { createTestDatabase } from './support/database.js';
import { dispatched, sql } from './support/db.js';
import { eventually } from './support/eventually.js';
import { rest } from './support/clients.js';
import { enroll, fleet } from './support/devices.js';
import { buildOrg, buildSite, buildUser } from './support/factories.js';
import { domainEntities } from '../src/domains.js';

function recorder(name: string, on = ['test.*']): EventSubscriber & { seen: DomainEvent[] } {
  const seen: DomainEvent[] = [];
  return { name, on, seen, handle: async (_ctx, event) => void seen.push(event) };
}

// The pipeline is tested with event types of its own, outside the product's vocabulary.
const emitAny = (tx: RequestContext, type: string, orgId: string | null, data: Record<string, unknown>) => emit(tx, { type, orgId, data } as unknown as Parameters<typeof emit>[1]);

async function emitCommitted(runtime: Runtime, type: string, orgId: string | null, data: Record<string, unknown> = {}): Promise<DomainEvent> {
  const ctx = RequestContext.system(runtime, 'test');
  return withTransaction(ctx, (tx) => emitAny(tx, type, orgId, data));
}

test('an event committed by a process that died before dispatching is delivered by the next one to start', async () => {
  const db = await createTestDatabase();
  try {
    // The "crashed" process: migrations applied, event committed, no dispatcher ever ran.
    const first = await createTestApp({ databaseUrl: db.url });
    await first.stop();
    const orm = await MikroORM.init(ormConfig(db.url, { entities: domainEntities }));
    const crashedRuntime = { orm, log: first.server.runtime.log } as unknown as Runtime;
    const event = await emitCommitted(crashedRuntime, 'test.crash', null, { n: 1 });
    await orm.close(true);

    const sub = recorder('after-crash');
    const second = await createTestApp({ databaseUrl: db.url, start: { subscribers: [sub] } });
    try {
      await eventually(() => sub.seen.length > 0, 10_000, 'the event');
      expect(sub.seen).toEqual([expect.objectContaining({ id: event.id, type: 'test.crash', data: { n: 1 } })]);
      const [row] = await sql(second, 'select dispatched_at from outbox_event where id = ?', [event.id]);
      expect(row.dispatched_at).not.toBeNull();
    } finally {
      await second.stop();
    }
  } finally {
    await db.drop();
  }
});

test('an event whose write rolls back is never delivered', async () => {
  const sub = recorder('rollback');
  const app = await createTestApp({ start: { subscribers: [sub] } });
  try {
    const ctx = RequestContext.system(app.server.runtime, 'test');
    await expect(
      withTransaction(ctx, async (tx) => {
        await emitAny(tx, 'test.rolled_back', null, {});
        throw new Error('the change failed');
      }),
    ).rejects.toThrow('the change failed');
    await emitCommitted(app.server.runtime, 'test.marker', null);
    await eventually(() => sub.seen.some((e) => (e.type as string) === 'test.marker'), 10_000, 'the marker');
    expect(sub.seen.map((e) => e.type)).toEqual(['test.marker']);
  } finally {
    await app.stop();
  }
});

test('a subscriber that fails is retried: delivery is at least once', async () => {
  let calls = 0;
  const flaky: EventSubscriber = {
    name: 'flaky',
    on: ['test.flaky'],
    handle: async () => {
      calls++;
      if (calls === 1) throw new Error('receiver down');
    },
  };
  const app = await createTestApp({ start: { subscribers: [flaky] } });
  try {
    const event = await emitCommitted(app.server.runtime, 'test.flaky', null);
    await eventually(async () => {
      const [row] = await sql(app, 'select dispatched_at, attempts, last_error from outbox_event where id = ?', [event.id]);
      return row.dispatched_at ? row : undefined;
    }, 15_000, 'dispatch after the retry');
    expect(calls).toBe(2);
    const [row] = await sql(app, 'select attempts, last_error from outbox_event where id = ?', [event.id]);
    expect(row).toEqual({ attempts: 1, last_error: 'receiver down' });
  } finally {
    await app.stop();
  }
});

test('two instances on one database hand each event to exactly one of them', async () => {
  const a = recorder('a');
  const b = recorder('b');
  const first = await createTestApp({ start: { subscribers: [a] } });
  const second = await createTestApp({ databaseUrl: first.databaseUrl, start: { subscribers: [b] } });
  try {
    const emitted = await Promise.all(Array.from({ length: 40 }, (_, i) => emitCommitted(i % 2 ? first.server.runtime : second.server.runtime, 'test.shared', null, { i })));
    // Subscribers run in the transaction that marks an event dispatched: once all 40 are, no handling is under way.
    await Promise.all(emitted.map((event) => dispatched(first, event.id)));
    const handled = [...a.seen, ...b.seen].map((e) => e.id).sort();
    expect(handled).toEqual(emitted.map((e) => e.id).sort());
  } finally {
    await second.stop();
    await first.stop();
  }
});

test('a subscription on one instance receives events committed through another', async () => {
  const first = await createTestApp();
  const second = await createTestApp({ databaseUrl: first.databaseUrl });
  const org = await buildOrg(first);
  const otherOrg = await buildOrg(first);
  const viewer = await buildUser(first, { orgId: org.id, role: 'Organization Viewer' });
  const client = createClient({ url: second.url.replace('http', 'ws') + '/graphql', webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${viewer.token}` } });
  try {
    const received: { type: string; orgId: string; data: Record<string, unknown> }[] = [];
    const failures: unknown[] = [];
    client.subscribe(
      { query: 'subscription { domainEvents(types: ["test.live"]) { type orgId data } }' },
      {
        next: (msg) => void received.push((msg.data as { domainEvents: (typeof received)[number] }).domainEvents),
        error: (error) => void failures.push(error),
        complete: () => {},
      },
    );
    await eventually(() => second.subscriptions(DOMAIN_EVENT_TOPIC) === 1, 10_000, 'the subscription to be live');
    // Another organization's event must not reach this viewer; its own must. Once the instance has
    // published the foreign event to its listeners, it sits in the subscription's queue ahead of the
    // viewer's own event, which the subscription filters in order.
    const published: string[] = [];
    second.server.runtime.pubsub.on(DOMAIN_EVENT_TOPIC, (event) => void published.push((event as DomainEvent).id));
    const foreign = await emitCommitted(first.server.runtime, 'test.live', otherOrg.id, { secret: true });
    await eventually(() => published.includes(foreign.id), 10_000, 'the foreign event on the second instance');
    await emitCommitted(first.server.runtime, 'test.live', org.id, { hello: 'world' });
    await eventually(() => received.length > 0, 10_000, 'the viewer\'s event');
    expect(received).toEqual([{ type: 'test.live', orgId: org.id, data: { hello: 'world' } }]);
    expect(failures).toEqual([]);
  } finally {
    await client.dispose();
    await second.stop();
    await first.stop();
  }
});

test('domainEvents keeps a user limited to some sites to their devices: another site’s device, alert, script, enrollment key and run events are not delivered, their own are', async () => {
  const app = await createTestApp();
  let ws: Client | undefined;
  try {
    const f = await fleet(app);
    const [siteA1, siteA2] = [await buildSite(app, f.org.id), await buildSite(app, f.org.id)];
    const keyFor = async (siteId: string) => (await f.api.post('/enrollment-keys', { name: `key ${siteId}`, siteId })).body.key as string;
    const inA1 = await enroll(app, await keyFor(siteA1.id), 'in-a1');
    const inA2 = await enroll(app, await keyFor(siteA2.id), 'in-a2');
    const limited = await buildUser(app, { orgId: f.org.id, role: 'Organization Technician' });
    await sql(app, `update membership set site_ids = ?::jsonb where id = ?`, [JSON.stringify([siteA1.id]), limited.membership.id]);
    expect((await rest(app, limited.as).get(`/devices/${inA2.deviceId}`)).status).toBe(404);
    const runner = rest(app, (await buildUser(app, { orgId: f.org.id, can: ['automations:read', 'automations:write', 'automations:run'] })).as);
    const automation = await runner.post('/automations', { name: 'Both sites', trigger: { type: 'manual' }, target: { type: 'devices', deviceIds: [inA1.deviceId, inA2.deviceId] }, steps: [{ type: 'wait', seconds: 3600 }] });
    expect(automation.status).toBe(201);

    ws = createClient({ url: app.url.replace('http', 'ws') + '/graphql', webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${limited.token}` } });
    const types = ['device.updated', 'alert.triggered', 'script.completed', 'enrollment_key.created', 'automation.started'];
    const received: { type: string; data: Record<string, unknown> }[] = [];
    ws.subscribe(
      { query: `subscription { domainEvents(types: ${JSON.stringify(types)}) { type data } }` },
      { next: (msg) => void received.push((msg.data as { domainEvents: (typeof received)[number] }).domainEvents), error: () => {}, complete: () => {} },
    );
    await eventually(() => app.subscriptions(DOMAIN_EVENT_TOPIC) === 1, 10_000, 'the subscription to be live');
    const published: DomainEvent[] = [];
    app.server.runtime.pubsub.on(DOMAIN_EVENT_TOPIC, (event) => void published.push(event as DomainEvent));

    // Each site's events, as their services emit them: a device change, an alert, a script's end.
    const eventsOf = async (device: typeof inA1) => {
      expect((await f.api.patch(`/devices/${device.deviceId}`, { tags: ['seen'] })).status).toBe(200);
      await emitCommitted(app.server.runtime, 'alert.triggered', f.org.id, { alertId: crypto.randomUUID(), orgId: f.org.id, siteId: device.siteId, deviceId: device.deviceId, ruleId: null, severity: 'high', status: 'active', title: `alert on ${device.deviceId}` });
      await emitCommitted(app.server.runtime, 'script.completed', f.org.id, { executionId: crypto.randomUUID(), scriptId: crypto.randomUUID(), deviceId: device.deviceId, orgId: f.org.id, status: 'completed', exitCode: 0 });
      expect((await f.api.post('/enrollment-keys', { name: `another key ${device.siteId}`, siteId: device.siteId })).status).toBe(201);
    };
    // The other site's first: once the instance has published them, they sit ahead of the user's own in the subscription's queue.
    await eventsOf(inA2);
    await eventually(() => types.slice(0, 3).every((type) => published.some((e) => e.type === type && (e.data as { deviceId?: string }).deviceId === inA2.deviceId)), 10_000, "site A2's events on the instance");
    await eventually(() => published.some((e) => e.type === 'enrollment_key.created' && (e.data as { siteId?: string }).siteId === siteA2.id), 10_000, "site A2's key event on the instance");
    await eventsOf(inA1);
    // An organization-wide run on both sites' devices: delivered, naming and counting the user's device only.
    expect((await runner.post(`/automations/${automation.body.id}/run`)).status).toBe(202);
    await eventually(() => received.length === 5, 10_000, "site A1's events");
    // Events of separate commits may be dispatched by parallel drains: which ones arrive is the point, not their order.
    expect(received.map((e) => [e.type, e.data.deviceId ?? e.data.siteId ?? e.data.deviceCount]).sort((a, b) => String(a[0]).localeCompare(String(b[0])))).toEqual([
      ['alert.triggered', inA1.deviceId],
      ['automation.started', 1],
      ['device.updated', inA1.deviceId],
      ['enrollment_key.created', siteA1.id],
      ['script.completed', inA1.deviceId],
    ]);
    expect(JSON.stringify(received)).not.toContain(inA2.deviceId);
    expect(JSON.stringify(received)).not.toContain(siteA2.id);
  } finally {
    await ws?.dispose();
    await app.stop();
  }
});

test('work queued with afterCommit runs once the transaction commits, and never when it rolls back', async () => {
  const app = await createTestApp();
  try {
    const ran: string[] = [];
    const ctx = RequestContext.system(app.server.runtime, 'test');
    await withTransaction(ctx, async (tx) => {
      tx.afterCommit(() => ran.push('committed'));
      expect(ran).toEqual([]);
    });
    expect(ran).toEqual(['committed']);
    await expect(
      withTransaction(ctx, async (tx) => {
        tx.afterCommit(() => ran.push('rolled back'));
        throw new Error('no');
      }),
    ).rejects.toThrow('no');
    await withTransaction(ctx, async () => {});
    expect(ran).toEqual(['committed']);
    expect(() => ctx.afterCommit(() => {})).toThrow(/outside a transaction/);
  } finally {
    await app.stop();
  }
});

test('a batch goes to handleBatch together; when it fails, each event is handed to handle alone, and only the failing one is retried', async () => {
  let failing = true;
  const batches: string[][] = [];
  const single: string[] = [];
  const committed: string[] = [];
  const isBad = (event: DomainEvent) => (event.data as { bad?: boolean }).bad === true;
  const batcher: EventSubscriber = {
    name: 'batcher',
    on: ['test.batch'],
    handleBatch: async (tx, events) => {
      batches.push(events.map((e) => e.id));
      tx.afterCommit(() => void committed.push(`batch of ${events.length}`));
      if (failing && events.some(isBad)) throw new Error('a bad event in the batch');
    },
    handle: async (tx, event) => {
      single.push(event.id);
      if (isBad(event)) {
        failing = false;
        throw new Error('bad event');
      }
      tx.afterCommit(() => void committed.push(event.id));
    },
  };
  const app = await createTestApp({ start: { subscribers: [batcher] } });
  try {
    // Committed together, so claimed as one batch.
    const events = await withTransaction(RequestContext.system(app.server.runtime, 'test'), async (tx) => {
      const emitted: DomainEvent[] = [];
      for (let i = 0; i < 5; i++) emitted.push(await emitAny(tx, 'test.batch', null, { i, bad: i === 2 }));
      return emitted;
    });
    const ids = events.map((e) => e.id);
    const bad = ids[2]!;
    await Promise.all(ids.filter((id) => id !== bad).map((id) => dispatched(app, id)));
    expect(batches[0]).toEqual(ids);
    expect(single).toEqual(ids);
    // The failed batch's after-commit work was dropped with it; each event that went through on its own kept its own.
    expect(committed).toEqual(ids.filter((id) => id !== bad));
    expect((await sql(app, 'select attempts, last_error from outbox_event where id = ?', [bad]))[0]).toEqual({ attempts: 1, last_error: 'bad event' });

    // After its backoff, the failed event comes back alone, as a batch of one, and goes through.
    await dispatched(app, bad);
    expect(batches.slice(1)).toEqual([[bad]]);
    expect(single).toEqual(ids);
    expect(committed.at(-1)).toBe('batch of 1');
  } finally {
    await app.stop();
  }
});

test('dispatched events are published to subscriptions several per NOTIFY, each under the size limit, in order; one too large for NOTIFY is left out', async () => {
  const app = await createTestApp();
  const listener = new pg.Client({ connectionString: app.databaseUrl });
  try {
    // What goes over the wire: the NOTIFYs of the domain-event topic.
    const notifications: string[] = [];
    await listener.connect();
    listener.on('notification', (message) => {
      if (message.payload?.startsWith(`{"topic":"${DOMAIN_EVENT_TOPIC}"`)) notifications.push(message.payload);
    });
    await listener.query(`listen ${PUBSUB_CHANNEL}`);
    const published: DomainEvent[] = [];
    app.server.runtime.pubsub.on(DOMAIN_EVENT_TOPIC, (event) => void published.push(event as DomainEvent));

    const events = await withTransaction(RequestContext.system(app.server.runtime, 'test'), async (tx) => {
      const emitted: DomainEvent[] = [];
      for (let i = 0; i < 60; i++) emitted.push(await emitAny(tx, 'test.many', null, { i, pad: i === 30 ? 'x'.repeat(9000) : 'x'.repeat(400) }));
      return emitted;
    });
    const small = events.filter((_, i) => i !== 30).map((e) => e.id);
    // The last event is published after the large one: once it is here, the large one has been passed over.
    await eventually(() => published.some((e) => e.id === events.at(-1)!.id), 10_000, 'the last event');
    expect(published.map((e) => e.id)).toEqual(small);
    expect(notifications.length).toBeGreaterThanOrEqual(4);
    expect(notifications.length).toBeLessThan(small.length);
    expect(notifications.every((payload) => Buffer.byteLength(payload) < 8000)).toBe(true);
  } finally {
    await listener.end();
    await app.stop();
  }
});
