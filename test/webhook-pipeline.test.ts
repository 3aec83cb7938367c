import { RequestContext } from '../src/auth/context.js';
import type { Permission } from '../src/auth/permissions.js';
import { withTransaction } from '../src/db/transaction.js';
import { emit } from '../src/events/outbox.js';
import { createTestApp, type TestApp } from './support/app.js';
import { rest } from './support/clients.js';
import { sql } from './support/db.js';
import { eventually } from './support/eventually.js';
import { buildOrg, buildUser } from './support/factories.js';
import { useHttpsReceiver } from './support/https-receiver.js';

/** Webhooks are organization configuration: reading them takes organizations:read, changing them organizations:write. */
const WEBHOOK_EDITOR: Permission[] = ['organizations:read', 'organizations:write'];
const PRIVATE_TARGETS = { ALLOW_PRIVATE_NETWORK_TARGETS: 'true' };
const ONE_ATTEMPT = { maxRetries: 0, initialDelayMs: 100, maxDelayMs: 100 };

const receiver = useHttpsReceiver();

async function editorOf(app: TestApp) {
  const orgId = (await buildOrg(app)).id;
  const editor = await buildUser(app, { orgId, can: WEBHOOK_EDITOR });
  return { orgId, api: rest(app, editor.as) };
}

async function createHook(api: ReturnType<typeof rest>, url: string, extra: Record<string, unknown> = {}): Promise<string> {
  const created = await api.post('/webhooks', { name: url, url, events: ['alert.triggered'], ...extra });
  expect(created.status).toBe(201);
  return created.body.id;
}

const rowsOf = (app: TestApp, webhookId: string) =>
  sql<{ id: string; status: string; attempt: number; error_message: string | null }>(
    app,
    'select id, status, attempt, error_message from webhook_delivery where webhook_id = ? order by created_at, id',
    [webhookId],
  );

describe('per-webhook isolation: a pool of 4 request slots, at most 2 per webhook, and a 10 s request timeout', () => {
  const TIMEOUT_MS = 10_000;
  let app: TestApp;

  beforeAll(async () => {
    app = await createTestApp({
      env: PRIVATE_TARGETS,
      start: { tunables: { webhooks: { deliveryTimeoutMs: TIMEOUT_MS, concurrency: 4, perWebhookConcurrency: 2 } } },
    });
  });
  afterAll(async () => {
    receiver.dropHanging();
    await app.stop();
  });

  test('a receiver that hangs holds only its own slots: the healthy webhook beside it is delivered while the hanging requests are still waiting', async () => {
    const { orgId, api } = await editorOf(app);
    receiver.script('/iso-hang', ['hang']);
    const hanging = await createHook(api, receiver.url('/iso-hang'), { retryPolicy: ONE_ATTEMPT });
    const healthy = await createHook(api, receiver.url('/iso-ok'));

    // A backlog for the hanging receiver first, so it stands ahead of everything else in claim order.
    for (let i = 0; i < 6; i++) expect((await api.post(`/webhooks/${hanging}/test`, {})).status).toBe(202);
    await eventually(() => receiver.to('/iso-hang').length === 2, 10_000, 'the hanging receiver to hold its two slots');
    // Then events for both webhooks.
    const ctx = RequestContext.system(app.server.runtime, 'test');
    await withTransaction(ctx, async (tx) => {
      for (let i = 0; i < 10; i++) await emit(tx, { type: 'alert.triggered', orgId, data: { n: i } as never });
    });

    const delivered = await eventually(
      async () => {
        const rows = await rowsOf(app, healthy);
        return rows.length === 10 && rows.every((r) => r.status === 'delivered') && rows;
      },
      TIMEOUT_MS - 1000,
      'the healthy webhook to be delivered',
    );
    expect(delivered.every((r) => r.attempt === 1)).toBe(true);
    expect(receiver.to('/iso-ok')).toHaveLength(10);

    // Meanwhile the hanging receiver still holds exactly its two requests, none of which has timed out
    // yet: the healthy deliveries did not wait for them, nor for the hanging webhook's backlog.
    expect(receiver.to('/iso-hang')).toHaveLength(2);
    const stuck = await rowsOf(app, hanging);
    expect(stuck).toHaveLength(16);
    expect(stuck.every((r) => r.status === 'pending' && r.attempt === 0)).toBe(true);
    const firstHang = receiver.to('/iso-hang')[0]!.at;
    expect(Math.max(...receiver.to('/iso-ok').map((r) => r.at))).toBeLessThan(firstHang + TIMEOUT_MS);

    // Once its connections drop, the hanging webhook's backlog moves on, two at a time.
    receiver.script('/iso-hang', [{ status: 200 }]);
    receiver.dropHanging();
    await eventually(
      async () => (await rowsOf(app, hanging)).filter((r) => r.status === 'pending').length === 0,
      15_000,
      'the hanging webhook to be worked off',
    );
    const after = await rowsOf(app, hanging);
    expect(after.filter((r) => r.status === 'failed').map((r) => r.error_message)).toEqual([expect.any(String), expect.any(String)]);
    expect(after.filter((r) => r.status === 'delivered')).toHaveLength(14);
  });
});

describe('keep-alive connections per checked address', () => {
  let app: TestApp;
  let answer = ['127.0.0.1'];

  beforeAll(async () => {
    const resolve = async (host: string) => (host === 'receiver.test' ? answer : Promise.reject(new Error('ENOTFOUND')));
    app = await createTestApp({ env: PRIVATE_TARGETS, start: { tunables: { webhooks: { resolve } } } });
  });
  afterAll(async () => {
    await app.stop();
  });

  test('deliveries reuse one connection; the name is resolved and checked before every attempt, so a changed answer is used at once', async () => {
    const { api } = await editorOf(app);
    const id = await createHook(api, receiver.url('/reuse', 'receiver.test'), { retryPolicy: ONE_ATTEMPT });
    const send = async (status: string) => {
      const test = await api.post(`/webhooks/${id}/test`, {});
      expect(test.status).toBe(202);
      return eventually(
        async () => (await rowsOf(app, id)).find((r) => r.id === test.body.delivery.id && r.status === status),
        10_000,
        `delivery ${status}`,
      );
    };
    for (let i = 0; i < 3; i++) await send('delivered');
    const reused = receiver.to('/reuse');
    expect(reused).toHaveLength(3);
    expect(reused.every((r) => r.headers.connection === 'keep-alive' && r.headers.host === `receiver.test:${receiver.port}`)).toBe(true);
    expect(new Set(reused.map((r) => r.remotePort)).size).toBe(1);

    // The name now points elsewhere (nothing listens there): the next attempt goes there, not over the open connection.
    answer = ['127.0.0.2'];
    const failed = await send('failed');
    expect(failed.error_message).toMatch(/ECONNREFUSED/);
    expect(receiver.to('/reuse')).toHaveLength(3);

    answer = ['127.0.0.1'];
    await send('delivered');
    expect(receiver.to('/reuse')).toHaveLength(4);
  });
});
