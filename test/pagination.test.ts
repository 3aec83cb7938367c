import crypto from 'node:crypto';
import { Webhook, WebhookDelivery } from '../entities/webhook.js';
import { decodeCursor, encodeCursor, finishCursorPage, keysetWhere } from '../src/pagination.js';
import { createTestApp, type TestApp } from './support/app.js';
import { gql } from './support/clients.js';
import { buildOrg, buildUser, type BuiltUser } from './support/factories.js';

const id1 = crypto.randomUUID();
const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

test('cursors are opaque and round-trip the sort value and id', () => {
  const cursor = encodeCursor({ value: '2026-01-01T00:00:00.000Z', id: id1 });
  expect(cursor).not.toContain(id1);
  expect(decodeCursor(cursor, 'date')).toEqual({ value: '2026-01-01T00:00:00.000Z', id: id1 });
  expect(decodeCursor(encodeCursor({ value: 5, id: id1 }), 'number')).toEqual({ value: 5, id: id1 });
  expect(decodeCursor(encodeCursor({ value: 'b', id: id1 }), 'string')).toEqual({ value: 'b', id: id1 });
});

test('a cursor decodes only to the shape it was minted with: anything else is a 400 "Invalid cursor"', () => {
  const invalid = expect.objectContaining({ status: 400, code: 'VALIDATION_ERROR', message: 'Invalid cursor' });
  const date = '2026-01-01T00:00:00.000Z';
  for (const cursor of [
    'not-a-cursor!',
    crypto.randomBytes(24).toString('base64url'),
    b64({ $ne: null }),
    b64([{ $ne: null }, id1]),
    b64([date, { $gt: '' }]),
    b64([date, 'not-a-uuid']),
    b64(['not a date', id1]),
    b64([5, id1]),
    b64(['+275760-09-13T00:00:00.000Z', id1]),
    b64([date]),
    b64([date, id1, 'extra']),
    `${encodeCursor({ value: date, id: id1 })}${'A'.repeat(500)}`,
  ]) {
    expect(() => decodeCursor(cursor, 'date')).toThrow(invalid);
  }
  expect(() => decodeCursor(encodeCursor({ value: date, id: id1 }), 'number')).toThrow(invalid);
  expect(() => decodeCursor(encodeCursor({ value: 5, id: id1 }), 'string')).toThrow(invalid);
});

test('keyset conditions continue after the last row, tie-broken by id', () => {
  const cursor = encodeCursor({ value: 5, id: id1 });
  expect(keysetWhere('rank', 'number', 'desc', cursor)).toEqual({
    where: { rank: { $lte: 5 }, $or: [{ rank: { $lt: 5 } }, { rank: 5, id: { $lt: id1 } }] },
    orderBy: { rank: 'desc', id: 'desc' },
  });
  expect(keysetWhere('rank', 'number', 'asc', undefined)).toEqual({ where: {}, orderBy: { rank: 'asc', id: 'asc' } });
});

test('a page of limit+1 rows yields limit items and a cursor at the last one; a short page has no cursor', () => {
  const rows = [1, 2, 3].map((n) => ({ id: crypto.randomUUID(), n }));
  const full = finishCursorPage(rows, 2, (r) => r.n);
  expect(full.items).toEqual(rows.slice(0, 2));
  expect(decodeCursor(full.nextCursor!, 'number')).toEqual({ value: 2, id: rows[1]!.id });
  expect(finishCursorPage(rows, 3, (r) => r.n).nextCursor).toBeNull();
});

describe('through GraphQL (webhook deliveries, the keyset-paged list)', () => {
  let app: TestApp;
  let viewer: BuiltUser;
  let webhookId: string;
  const query = `query($id: ID!, $after: String) { webhook(id: $id) { deliveries(first: 2, after: $after) { edges { cursor node { id } } pageInfo { hasNextPage endCursor } } } }`;

  beforeAll(async () => {
    app = await createTestApp();
    const org = await buildOrg(app);
    viewer = await buildUser(app, { orgId: org.id, role: 'Organization Viewer' });
    const em = app.server.runtime.orm.em.fork();
    const hook = em.create(Webhook, { orgId: org.id, name: 'paged', url: app.server.runtime.secrets.encrypt('https://1.1.1.1/in'), events: ['device.offline'] });
    for (let i = 0; i < 3; i++) {
      em.create(WebhookDelivery, {
        webhookId: hook.id,
        orgId: org.id,
        status: 'delivered',
        event: 'device.offline',
        eventId: crypto.randomUUID(),
        payload: {},
        createdAt: new Date(Date.UTC(2026, 0, 1 + i)),
      });
    }
    await em.flush();
    webhookId = hook.id;
  });
  afterAll(async () => {
    await app.stop();
  });

  test('pages continue after the cursor without overlap', async () => {
    const first = (await gql(app, viewer.as, query, { id: webhookId })).body.data.webhook.deliveries;
    expect(first.edges).toHaveLength(2);
    expect(first.pageInfo.hasNextPage).toBe(true);
    const second = (await gql(app, viewer.as, query, { id: webhookId, after: first.pageInfo.endCursor })).body.data.webhook.deliveries;
    expect(second.edges).toHaveLength(1);
    expect(second.pageInfo).toEqual({ hasNextPage: false, endCursor: second.edges[0].cursor });
    expect(first.edges.map((e: any) => e.node.id)).not.toContain(second.edges[0].node.id);
  });

  test('a forged cursor is VALIDATION_ERROR "Invalid cursor", never an operator in the query', async () => {
    for (const after of [
      crypto.randomBytes(24).toString('base64url'),
      'not a cursor',
      b64({ $ne: null }),
      b64([{ $ne: null }, crypto.randomUUID()]),
      b64([{ $gt: '' }, { $gt: '' }]),
      b64(['not a date', crypto.randomUUID()]),
      b64(['-271821-04-20T00:00:00.000Z', crypto.randomUUID()]),
      'A'.repeat(10_000),
    ]) {
      const res = await gql(app, viewer.as, query, { id: webhookId, after });
      expect({ after, status: res.status, errors: res.body.errors }).toEqual({
        after,
        status: 200,
        errors: [expect.objectContaining({ message: 'Invalid cursor', extensions: { code: 'VALIDATION_ERROR' } })],
      });
    }
  });
});
