import crypto from 'node:crypto';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { RequestContext } from '../src/auth/context.js';
import { withTransaction } from '../src/db/transaction.js';
import { emit } from '../src/events/outbox.js';
import type { DomainEvent, DomainEventMap, DomainEventType } from '../src/events/types.js';
import type { Runtime } from '../src/runtime.js';
import { DELIVERY_UPDATED_TOPIC, retryDelayMs } from '../src/services/webhooks/delivery-pipeline.js';
import { DEFAULT_RETRY_POLICY } from '../src/services/webhooks/webhooks.js';
import type { Permission } from '../src/auth/permissions.js';
import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import { TestClock } from './support/clock.js';
import { auditOf, dispatched, sql } from './support/db.js';
import { eventually } from './support/eventually.js';
import { buildOrg, buildUser, type BuiltUser } from './support/factories.js';
import { startHttpsReceiver, type HttpsReceiver, type ReceivedRequest } from './support/https-receiver.js';

const SECRET = 'whsec-0123456789abcdef';
/** Webhooks are organization configuration: reading them takes organizations:read, changing them organizations:write. */
const WEBHOOK_EDITOR: Permission[] = ['organizations:read', 'organizations:write'];

const FAST = { maxRetries: 0, initialDelayMs: 100, maxDelayMs: 100 };
const PRIVATE_TARGETS = { ALLOW_PRIVATE_NETWORK_TARGETS: 'true' };

let app: TestApp;
let receiver: HttpsReceiver;
let orgA: string;
let orgB: string;
let editorA: BuiltUser;
let editorB: BuiltUser;
let api: ReturnType<typeof rest>;

beforeAll(async () => {
  [app, receiver] = await Promise.all([createTestApp({ env: PRIVATE_TARGETS }), startHttpsReceiver()]);
  orgA = (await buildOrg(app)).id;
  orgB = (await buildOrg(app)).id;
  editorA = await buildUser(app, { orgId: orgA, can: WEBHOOK_EDITOR });
  editorB = await buildUser(app, { orgId: orgB, can: WEBHOOK_EDITOR });
  api = rest(app, editorA.as);
});

afterAll(async () => {
  await app.stop();
  await receiver.close();
});

async function createHook(path: string, extra: Record<string, unknown> = {}, as = editorA, target = app): Promise<string> {
  const response = await rest(target, as.as).post('/webhooks', { name: path, url: receiver.url(path), events: ['device.offline'], ...extra });
  expect(response.status).toBe(201);
  return response.body.id;
}

async function emitEvent<T extends DomainEventType>(runtime: Runtime, type: T, orgId: string, data: DomainEventMap[T]): Promise<DomainEvent> {
  return withTransaction(RequestContext.system(runtime, 'test'), (tx) => emit(tx, { type, orgId, data }));
}

function offlineDevice(orgId: string, deviceId: string, lastSeen = new Date().toISOString()): DomainEventMap['device.offline'] {
  return { deviceId, orgId, siteId: null, hostname: 'web-01', status: 'offline', previousStatus: 'online', lastSeenAt: lastSeen, lastSeen };
}

async function deliveries(webhookId: string, client = api): Promise<any[]> {
  const response = await client.get(`/webhooks/${webhookId}/deliveries`);
  expect(response.status).toBe(200);
  return response.body.data;
}

async function settled(webhookId: string, deliveryId: string, status: string, client = api): Promise<any> {
  return eventually(
    async () => (await deliveries(webhookId, client)).find((d) => d.id === deliveryId && d.status === status),
    15_000,
    `delivery ${deliveryId} ${status}`,
  );
}

async function sendTest(webhookId: string, body: Record<string, unknown> = {}, client = api): Promise<string> {
  const response = await client.post(`/webhooks/${webhookId}/test`, body);
  expect(response.status).toBe(202);
  return response.body.delivery.id;
}

/** The test's own check of the spec's signature: HMAC-SHA256 of "<X-Service-Signature-Timestamp>.<raw body>", constant-time compare. */
function signatureValid(secret: string, request: ReceivedRequest): boolean {
  const timestamp = String(request.headers['x-service-signature-timestamp']);
  const expected = Buffer.from(`sha256=${crypto.createHmac('sha256', secret).update(`${timestamp}.${request.body}`).digest('hex')}`);
  const received = Buffer.from(String(request.headers['x-service-signature']));
  return expected.length === received.length && crypto.timingSafeEqual(expected, received);
}

/** The webhooks that got a delivery of the event; complete once the event is dispatched (the fan-out runs in that transaction). */
async function fannedOutTo(eventId: string): Promise<string[]> {
  await dispatched(app, eventId);
  return (await sql(app, 'select webhook_id from webhook_delivery where event_id = ?', [eventId])).map((row) => row.webhook_id).sort();
}

test('an event reaches every active subscribed webhook of its organization once, with the exact headers, body and signature', async () => {
  const signed = await createHook('/signed', { secret: SECRET, headers: [{ key: 'X-Tenant', value: 'acme' }] });
  const plain = await createHook('/plain');
  await createHook('/other-type', { events: ['alert.triggered'] });
  const paused = await createHook('/paused');
  const failed = await createHook('/failed');
  expect((await api.patch(`/webhooks/${paused}`, { status: 'paused' })).status).toBe(200);
  expect((await api.patch(`/webhooks/${failed}`, { status: 'failed' })).status).toBe(200);
  await createHook('/org-b', {}, editorB);

  const before = Date.now();
  const data = offlineDevice(orgA, crypto.randomUUID(), '2026-11-22T10:00:00.000Z');
  const event = await emitEvent(app.server.runtime, 'device.offline', orgA, data);
  expect(await fannedOutTo(event.id)).toEqual([signed, plain].sort());
  const [delivery] = await deliveries(signed);
  await settled(signed, delivery.id, 'delivered');
  await settled(plain, (await deliveries(plain))[0].id, 'delivered');

  for (const path of ['/other-type', '/paused', '/failed', '/org-b']) expect(receiver.to(path)).toEqual([]);
  expect(await deliveries(paused)).toEqual([]);
  const [request] = receiver.to('/signed');
  expect(receiver.to('/signed')).toHaveLength(1);
  const expectedBody = { id: event.id, type: 'device.offline', timestamp: event.timestamp, orgId: orgA, data };
  expect(JSON.parse(request!.body)).toEqual(expectedBody);
  expect(Object.keys(JSON.parse(request!.body))).toEqual(['id', 'type', 'timestamp', 'orgId', 'data']);
  expect(request!.method).toBe('POST');
  const timestamp = Number(request!.headers['x-service-timestamp']);
  expect(timestamp).toBeGreaterThanOrEqual(before);
  expect(timestamp).toBeLessThanOrEqual(request!.at);
  expect(request!.headers).toEqual({
    host: `127.0.0.1:${receiver.port}`,
    connection: 'keep-alive',
    'content-type': 'application/json',
    'content-length': String(Buffer.byteLength(request!.body)),
    'user-agent': 'Service-Webhooks/1.0',
    'x-service-delivery-id': delivery.id,
    'x-service-event-id': event.id,
    'x-service-event-type': 'device.offline',
    'x-service-timestamp': String(timestamp),
    'x-service-signature': expect.stringMatching(/^sha256=[0-9a-f]{64}$/),
    'x-service-signature-timestamp': String(timestamp),
    'x-tenant': 'acme',
  });
  expect(signatureValid(SECRET, request!)).toBe(true);
  expect(signatureValid('another-secret', request!)).toBe(false);

  const [unsigned] = receiver.to('/plain');
  expect(unsigned!.headers['x-service-signature']).toBeUndefined();
  expect(unsigned!.headers['x-service-signature-timestamp']).toBeUndefined();
  expect(JSON.parse(unsigned!.body)).toEqual(expectedBody);

  const record = await settled(signed, delivery.id, 'delivered');
  expect(record).toEqual({
    id: delivery.id,
    webhookId: signed,
    orgId: orgA,
    status: 'delivered',
    event: 'device.offline',
    eventId: event.id,
    payload: expectedBody,
    responseStatus: 200,
    responseBody: 'ok',
    attempt: 1,
    nextAttemptAt: null,
    responseTimeMs: expect.any(Number),
    errorMessage: null,
    createdAt: expect.any(String),
    deliveredAt: expect.any(String),
    deadLetteredAt: null,
    redrivenAt: null,
    retryOf: null,
  });
  const webhook = (await api.get(`/webhooks/${signed}`)).body;
  expect(webhook).toMatchObject({ successCount: 1, failureCount: 0, lastDeliveryAt: expect.any(String), lastSuccessAt: expect.any(String) });
  expect(webhook.deliveryStats).toEqual({ total: 1, pending: 0, delivered: 1, failed: 0, retrying: 0, lastDeliveredAt: record.deliveredAt });

  // The outbox hands the same event over again (at-least-once): still one delivery per webhook, one request each.
  await sql(app, 'update outbox_event set dispatched_at = null where id = ?', [event.id]);
  expect(await fannedOutTo(event.id)).toEqual([signed, plain].sort());
  expect((await deliveries(signed)).length).toBe(1);
  expect((await deliveries(plain)).length).toBe(1);
  expect(receiver.to('/signed')).toHaveLength(1);
  expect(receiver.to('/plain')).toHaveLength(1);
});

test('a receiver that fails three times is retried on the policy schedule, then delivered; the subscription sees every state', async () => {
  receiver.script('/flaky', [{ status: 500 }, { status: 502 }, { status: 503, body: 'busy' }, { status: 200, body: 'thanks' }]);
  const id = await createHook('/flaky', { secret: SECRET, retryPolicy: { maxRetries: 5, initialDelayMs: 200, backoffMultiplier: 2, maxDelayMs: 1000 } });
  const otherOrgHook = await createHook('/b-flaky', {}, editorB);

  const updates: any[] = [];
  const foreign: any[] = [];
  const subscribe = (client: Client, query: string, variables: Record<string, unknown>, into: any[]) =>
    client.subscribe({ query, variables }, { next: (msg) => into.push(msg.data ? (msg.data as any).webhookDeliveryUpdated : { errors: msg.errors }), error: (e) => into.push({ error: String(e) }), complete: () => {} });
  const wsUrl = `${app.url.replace('http', 'ws')}/graphql`;
  const clientA = createClient({ url: wsUrl, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${editorA.token}` } });
  const clientB = createClient({ url: wsUrl, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${editorB.token}` } });
  const denied: any[] = [];
  try {
    const selection = 'id webhookId orgId status attempt event';
    const before = app.subscriptions(DELIVERY_UPDATED_TOPIC);
    subscribe(clientA, `subscription($id: ID) { webhookDeliveryUpdated(webhookId: $id) { ${selection} } }`, { id }, updates);
    subscribe(clientB, `subscription { webhookDeliveryUpdated { ${selection} } }`, {}, foreign);
    subscribe(clientB, `subscription($id: ID) { webhookDeliveryUpdated(webhookId: $id) { ${selection} } }`, { id }, denied);
    await eventually(() => app.subscriptions(DELIVERY_UPDATED_TOPIC) === before + 2 && denied.length === 1, 10_000, 'two live subscriptions and one refusal');

    const test = await api.post(`/webhooks/${id}/test`, {});
    expect(test.status).toBe(202);
    expect(test.body).toEqual({
      message: 'Test delivery queued',
      delivery: { id: expect.any(String), webhookId: id, status: 'pending', event: 'webhook.test', attempt: 0 },
    });
    const deliveryId = test.body.delivery.id;
    // Org B's own delivery: B's subscription sees it, A's does not.
    expect((await rest(app, editorB.as).post(`/webhooks/${otherOrgHook}/test`, {})).status).toBe(202);

    const record = await settled(id, deliveryId, 'delivered');
    expect(record).toMatchObject({ attempt: 4, responseStatus: 200, responseBody: 'thanks', errorMessage: null, nextAttemptAt: null });
    const attempts = receiver.to('/flaky');
    expect(attempts).toHaveLength(4);
    for (const attempt of attempts) {
      expect(attempt.headers['x-service-delivery-id']).toBe(deliveryId);
      expect(signatureValid(SECRET, attempt)).toBe(true);
      expect(JSON.parse(attempt.body)).toEqual({
        id: record.eventId,
        type: 'webhook.test',
        timestamp: expect.any(String),
        orgId: orgA,
        data: { message: expect.any(String), timestamp: expect.any(String), webhookId: id },
      });
    }
    // X-Service-Timestamp is the time of each attempt.
    expect(new Set(attempts.map((a) => a.headers['x-service-timestamp'])).size).toBe(4);
    const gaps = attempts.slice(1).map((a, i) => a.at - attempts[i]!.at);
    [200, 400, 800].forEach((delay, i) => {
      expect(gaps[i]).toBeGreaterThanOrEqual(delay - 20);
      expect(gaps[i]).toBeLessThan(delay + 1500);
    });

    await eventually(() => updates.length >= 5 && foreign.length >= 2, 10_000, 'subscription updates');
    expect(updates).toEqual([
      { id: deliveryId, webhookId: id, orgId: orgA, status: 'pending', attempt: 0, event: 'webhook.test' },
      { id: deliveryId, webhookId: id, orgId: orgA, status: 'retrying', attempt: 1, event: 'webhook.test' },
      { id: deliveryId, webhookId: id, orgId: orgA, status: 'retrying', attempt: 2, event: 'webhook.test' },
      { id: deliveryId, webhookId: id, orgId: orgA, status: 'retrying', attempt: 3, event: 'webhook.test' },
      { id: deliveryId, webhookId: id, orgId: orgA, status: 'delivered', attempt: 4, event: 'webhook.test' },
    ]);
    expect(foreign.every((u) => u.orgId === orgB && u.webhookId === otherOrgHook)).toBe(true);
    // Subscribing to another organization's webhook is refused like reading it.
    expect(denied).toEqual([{ errors: [expect.objectContaining({ message: 'Webhook not found' })] }]);
  } finally {
    await clientA.dispose();
    await clientB.dispose();
  }
});

test('the default schedule: after attempts 1 and 2 the next try is 1 s then 2 s later; the formula gives 1, 2, 4, 8, 16 s, capped at 300 s', async () => {
  expect([0, 1, 2, 3, 4].map((retry) => retryDelayMs(DEFAULT_RETRY_POLICY, retry))).toEqual([1000, 2000, 4000, 8000, 16000]);
  expect(retryDelayMs(DEFAULT_RETRY_POLICY, 9)).toBe(300_000);
  receiver.script('/down', [{ status: 500 }]);
  const id = await createHook('/down');
  const deliveryId = await sendTest(id);
  // The next attempt is scheduled from the moment the attempt was recorded, which is also the webhook's last delivery time.
  const scheduled = (attempt: number) =>
    eventually(async () => {
      const [row] = await sql(
        app,
        `select d.status, d.response_status, d.error_message, (extract(epoch from d.next_attempt_at - w.last_delivery_at) * 1000)::int as delay_ms
           from webhook_delivery d join webhook w on w.id = d.webhook_id where d.id = ? and d.attempt = ?`,
        [deliveryId, attempt],
      );
      return row;
    }, 10_000, `attempt ${attempt}`);
  expect(await scheduled(1)).toEqual({ status: 'retrying', response_status: 500, error_message: 'HTTP 500', delay_ms: 1000 });
  expect(await scheduled(2)).toEqual({ status: 'retrying', response_status: 500, error_message: 'HTTP 500', delay_ms: 2000 });
  const [one, two] = receiver.to('/down');
  expect(two!.at - one!.at).toBeGreaterThanOrEqual(1000);
  expect((await api.delete(`/webhooks/${id}`)).status).toBe(204);
});

test('exhausted retries end failed in the dead-letter queue; the retry route re-drives it as a new delivery', async () => {
  receiver.script('/dead', [{ status: 500, body: 'boom' }]);
  const id = await createHook('/dead', { retryPolicy: { maxRetries: 2, initialDelayMs: 100, maxDelayMs: 100 } });
  const deliveryId = await sendTest(id, { event: 'alert.triggered', payload: { alertId: 'a-1' } });
  const failed = await settled(id, deliveryId, 'failed');
  expect(failed).toMatchObject({
    attempt: 3,
    responseStatus: 500,
    responseBody: 'boom',
    errorMessage: 'HTTP 500',
    nextAttemptAt: null,
    deliveredAt: null,
    deadLetteredAt: expect.any(String),
    event: 'alert.triggered',
    payload: expect.objectContaining({ type: 'alert.triggered', data: { alertId: 'a-1' } }),
  });
  expect(receiver.to('/dead')).toHaveLength(3);
  expect((await api.get(`/webhooks/${id}`)).body).toMatchObject({ failureCount: 1, successCount: 0, deliveryStats: { failed: 1, total: 1 } });

  const letters = await api.get(`/webhooks/dead-letters?webhookId=${id}`);
  expect(letters.status).toBe(200);
  expect(letters.body).toEqual({ data: [expect.objectContaining({ id: deliveryId, status: 'failed', redrivenAt: null })], pagination: { page: 1, limit: 100, total: 1 } });
  expect((await rest(app, editorB.as).get('/webhooks/dead-letters')).body.data.map((d: { id: string }) => d.id)).not.toContain(deliveryId);
  const viaGraphql = await gql(app, editorA.as, `query($id: ID) { webhookDeadLetters(webhookId: $id) { data { id status } pagination { total } } }`, { id });
  expect(viaGraphql.body.data.webhookDeadLetters).toEqual({ data: [{ id: deliveryId, status: 'failed' }], pagination: { total: 1 } });

  receiver.script('/dead', [{ status: 204 }]);
  const retry = await api.post(`/webhooks/${id}/retry/${deliveryId}`, {});
  expect(retry.status).toBe(202);
  expect(retry.body).toEqual({ message: 'Delivery queued for retry', delivery: { id: expect.any(String), status: 'pending', attempt: 0 } });
  const redriven = await settled(id, retry.body.delivery.id, 'delivered');
  expect(redriven).toMatchObject({ attempt: 1, retryOf: deliveryId, eventId: failed.eventId, payload: failed.payload, responseStatus: 204 });
  const requests = receiver.to('/dead');
  expect(requests).toHaveLength(4);
  expect(requests[3]!.headers['x-service-delivery-id']).toBe(redriven.id);
  expect(requests[3]!.headers['x-service-event-id']).toBe(failed.eventId);
  expect(requests[3]!.body).toBe(requests[0]!.body);

  const original = (await deliveries(id)).find((d) => d.id === deliveryId);
  expect(original).toMatchObject({ status: 'failed', attempt: 3, redrivenAt: expect.any(String) });
  expect((await api.get(`/webhooks/dead-letters?webhookId=${id}&redriven=false`)).body.data).toEqual([]);
  expect((await api.get(`/webhooks/dead-letters?webhookId=${id}&redriven=true`)).body.data.map((d: { id: string }) => d.id)).toEqual([deliveryId]);

  // Only failed deliveries can be retried, through both doors.
  const notFailed = await api.post(`/webhooks/${id}/retry/${redriven.id}`, {});
  expect(notFailed.status).toBe(400);
  expect(notFailed.body).toEqual({ code: 'VALIDATION_ERROR', message: 'Only failed deliveries can be retried' });
  const mutation = `mutation($w: ID!, $d: ID!) { retryWebhookDelivery(webhookId: $w, deliveryId: $d) { message delivery { id status attempt } } }`;
  const gqlNotFailed = await gql(app, editorA.as, mutation, { w: id, d: redriven.id });
  expect(gqlNotFailed.body.errors?.[0]).toMatchObject({ message: 'Only failed deliveries can be retried', extensions: { code: 'VALIDATION_ERROR' } });
  const gqlRetry = await gql(app, editorA.as, mutation, { w: id, d: deliveryId });
  expect(gqlRetry.body.data.retryWebhookDelivery).toEqual({ message: 'Delivery queued for retry', delivery: { id: expect.any(String), status: 'pending', attempt: 0 } });
  await settled(id, gqlRetry.body.data.retryWebhookDelivery.delivery.id, 'delivered');
  expect((await api.post(`/webhooks/${id}/retry/${crypto.randomUUID()}`, {})).body).toEqual({ code: 'NOT_FOUND', message: 'Delivery not found' });

  expect((await auditOf(app, id, ['action'])).map((r) => r.action)).toEqual(['webhook.create', 'webhook.test', 'webhook.retry', 'webhook.retry']);
});

test('GraphQL: test mutation, deliveries connection with keyset cursors and status filter', async () => {
  const id = await createHook('/gql');
  const ids: string[] = [];
  for (let i = 0; i < 3; i++) {
    const response = await gql(app, editorA.as, `mutation($id: ID!) { testWebhook(id: $id) { message delivery { id webhookId status event attempt } } }`, { id });
    expect(response.body.data.testWebhook).toEqual({
      message: 'Test delivery queued',
      delivery: { id: expect.any(String), webhookId: id, status: 'pending', event: 'webhook.test', attempt: 0 },
    });
    ids.push(response.body.data.testWebhook.delivery.id);
    await settled(id, ids[i]!, 'delivered');
  }
  const query = `query($id: ID!, $after: String) { webhook(id: $id) { deliveries(first: 2, after: $after, status: delivered) { totalCount edges { cursor node { id status } } pageInfo { hasNextPage endCursor } } } }`;
  const first = (await gql(app, editorA.as, query, { id })).body.data.webhook.deliveries;
  expect(first.totalCount).toBe(3);
  expect(first.edges.map((e: any) => e.node.id)).toEqual([ids[2], ids[1]]);
  expect(first.pageInfo).toEqual({ hasNextPage: true, endCursor: first.edges[1].cursor });
  const second = (await gql(app, editorA.as, query, { id, after: first.pageInfo.endCursor })).body.data.webhook.deliveries;
  expect(second.edges.map((e: any) => e.node.id)).toEqual([ids[0]]);
  expect(second.pageInfo.hasNextPage).toBe(false);
  const none = await gql(app, editorA.as, `query($id: ID!) { webhook(id: $id) { deliveries(status: failed) { totalCount } } }`, { id });
  expect(none.body.data.webhook.deliveries.totalCount).toBe(0);

  // REST: newest first, page/limit, status filter, limit capped at 100.
  const page = await api.get(`/webhooks/${id}/deliveries?limit=2&page=2`);
  expect(page.body.pagination).toEqual({ page: 2, limit: 2, total: 3 });
  expect(page.body.data.map((d: { id: string }) => d.id)).toEqual([ids[0]]);
  expect((await api.get(`/webhooks/${id}/deliveries`)).body.pagination.limit).toBe(50);
  expect((await api.get(`/webhooks/${id}/deliveries?limit=101`)).status).toBe(400);
  expect((await api.get(`/webhooks/${id}/deliveries?status=bogus`)).status).toBe(400);
  expect((await api.get(`/webhooks/${id}/deliveries?status=failed`)).body.data).toEqual([]);
  expect((await api.post(`/webhooks/${id}/test`, { event: '' })).status).toBe(400);
});

test('a redirect is not followed and does not count as delivered; a long response body is stored truncated', async () => {
  receiver.script('/redirect', [{ status: 307, headers: { location: receiver.url('/landing') } }]);
  const id = await createHook('/redirect', { retryPolicy: FAST });
  const failed = await settled(id, await sendTest(id), 'failed');
  expect(failed).toMatchObject({ attempt: 1, responseStatus: 307, errorMessage: 'HTTP 307' });
  // A followed redirect would have reached /landing before the attempt's outcome was recorded.
  expect(receiver.to('/landing')).toEqual([]);

  receiver.script('/big', [{ status: 200, body: 'é'.repeat(3000) }]);
  const big = await createHook('/big');
  const delivered = await settled(big, await sendTest(big), 'delivered');
  expect(delivered.responseBody).toBe('é'.repeat(1000));
});

test('pausing stops deliveries: a retry due after the pause fails without a request; a paused webhook gets no new deliveries', async () => {
  receiver.script('/pause-me', [{ status: 500 }]);
  const id = await createHook('/pause-me', { retryPolicy: { maxRetries: 3, initialDelayMs: 1500, maxDelayMs: 1500 } });
  const deliveryId = await sendTest(id);
  await eventually(async () => (await deliveries(id)).find((d) => d.status === 'retrying'), 10_000, 'retrying');
  expect((await api.patch(`/webhooks/${id}`, { status: 'paused' })).status).toBe(200);
  const failed = await settled(id, deliveryId, 'failed');
  expect(failed).toMatchObject({ attempt: 2, errorMessage: 'Webhook is not active', responseStatus: null });
  expect(receiver.to('/pause-me')).toHaveLength(1);
  const event = await emitEvent(app.server.runtime, 'device.offline', orgA, offlineDevice(orgA, crypto.randomUUID()));
  expect(await fannedOutTo(event.id)).not.toContain(id);
  expect((await deliveries(id)).map((d) => d.id)).toEqual([deliveryId]);
});

test('deleting a webhook deletes its deliveries', async () => {
  const id = await createHook('/delete-me');
  const deliveryId = await sendTest(id);
  await settled(id, deliveryId, 'delivered');
  expect((await api.delete(`/webhooks/${id}`)).status).toBe(204);
  expect(await sql(app, 'select id from webhook_delivery where webhook_id = ?', [id])).toEqual([]);
  expect((await api.get(`/webhooks/${id}/deliveries`)).status).toBe(404);
});

describe('time-based rules, on an instance with its own clock and a short request timeout', () => {
  const clock = new TestClock();
  const AUTO_FAIL_AFTER = 3;
  let tuned: TestApp;
  let editor: BuiltUser;
  let tunedApi: ReturnType<typeof rest>;

  beforeAll(async () => {
    tuned = await createTestApp({ env: PRIVATE_TARGETS, start: { clock, tunables: { webhooks: { deliveryTimeoutMs: 500, autoFailAfter: AUTO_FAIL_AFTER } } } });
    editor = await buildUser(tuned, { orgId: (await buildOrg(tuned)).id, can: WEBHOOK_EDITOR });
    tunedApi = rest(tuned, editor.as);
  });
  afterAll(async () => {
    await tuned.stop();
  });

  test('a receiver that never answers times out', async () => {
    receiver.script('/hang', ['hang']);
    const id = await createHook('/hang', { retryPolicy: FAST }, editor, tuned);
    const failed = await settled(id, await sendTest(id, {}, tunedApi), 'failed', tunedApi);
    expect(failed).toMatchObject({ attempt: 1, responseStatus: null, errorMessage: 'Request timed out after 500 ms' });
    expect(failed.responseTimeMs).toBeGreaterThanOrEqual(500);
    expect(receiver.to('/hang')).toHaveLength(1);
  });

  test('failed deliveries set the webhook to failed only when there are enough of them and they span an hour; by the system, audited; it then receives nothing', async () => {
    receiver.script('/always-down', [{ status: 500 }]);
    const id = await createHook('/always-down', { retryPolicy: FAST }, editor, tuned);
    const failOnce = async () => settled(id, await sendTest(id, {}, tunedApi), 'failed', tunedApi);
    const status = async () => (await tunedApi.get(`/webhooks/${id}`)).body.status;
    // Enough failures, within a few seconds: a receiver's short outage does not fail the webhook.
    for (let i = 0; i < AUTO_FAIL_AFTER; i++) await failOnce();
    expect(await status()).toBe('active');
    clock.advance(59 * 60_000);
    await failOnce();
    expect(await status()).toBe('active');
    clock.advance(60_000);
    await failOnce();
    expect(await status()).toBe('failed');
    const audit = await sql(tuned, `select actor_type, actor_id, changes, details from audit_log where resource_id = ? and action = 'webhook.auto_failed'`, [id]);
    const failingSince = new Date((await sql(tuned, 'select failing_since from webhook where id = ?', [id]))[0].failing_since).toISOString();
    expect(audit).toEqual([{ actor_type: 'system', actor_id: null, changes: ['status'], details: { consecutiveFailures: AUTO_FAIL_AFTER + 2, failingSince } }]);

    // Hours of failures, but fewer than AUTO_FAIL_AFTER of them, leave a webhook active.
    receiver.script('/down-twice', [{ status: 500 }]);
    const sparse = await createHook('/down-twice', { retryPolicy: FAST, events: ['alert.triggered'] }, editor, tuned);
    await settled(sparse, await sendTest(sparse, {}, tunedApi), 'failed', tunedApi);
    clock.advance(2 * 60 * 60_000);
    await settled(sparse, await sendTest(sparse, {}, tunedApi), 'failed', tunedApi);
    expect((await tunedApi.get(`/webhooks/${sparse}`)).body.status).toBe('active');

    const event = await emitEvent(tuned.server.runtime, 'device.offline', editor.membership.orgId!, offlineDevice(editor.membership.orgId!, crypto.randomUUID()));
    await dispatched(tuned, event.id);
    expect((await deliveries(id, tunedApi)).length).toBe(AUTO_FAIL_AFTER + 2);
    expect(receiver.to('/always-down')).toHaveLength(AUTO_FAIL_AFTER + 2);
  });
});

describe('SSRF at delivery time (private targets refused)', () => {
  let strict: TestApp;
  let editor: BuiltUser;
  let answer = ['93.184.216.34'];

  beforeAll(async () => {
    const resolve = async (host: string) => (host === 'rebind.example.com' ? answer : Promise.reject(new Error('ENOTFOUND')));
    strict = await createTestApp({ start: { tunables: { webhooks: { resolve } } } });
    editor = await buildUser(strict, { orgId: (await buildOrg(strict)).id, can: WEBHOOK_EDITOR });
  });
  afterAll(async () => {
    await strict.stop();
  });

  test('a host whose DNS answer turns private after validation fails at once with "Unsafe webhook URL" and no request', async () => {
    const strictApi = rest(strict, editor.as);
    const created = await strictApi.post('/webhooks', { name: 'rebind', url: `https://rebind.example.com:${receiver.port}/rebind`, events: ['device.offline'] });
    expect(created.status).toBe(201);
    answer = ['127.0.0.1']; // where the receiver listens
    const test = await strictApi.post(`/webhooks/${created.body.id}/test`, {});
    const failed = await eventually(
      async () => (await strictApi.get(`/webhooks/${created.body.id}/deliveries`)).body.data.find((d: any) => d.status === 'failed'),
      10_000,
      'failed delivery',
    );
    expect(failed).toMatchObject({ id: test.body.delivery.id, attempt: 1, errorMessage: 'Unsafe webhook URL', responseStatus: null, deadLetteredAt: expect.any(String) });
    expect(receiver.to('/rebind')).toEqual([]);
  });
});
