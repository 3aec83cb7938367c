// The public login routes' rate limit (SSO_RATE_LIMIT_PER_MINUTE, per client IP and route), counted in
// the database: two server instances on one database draw on one budget.
import { randomUUID } from 'node:crypto';
import type { AppError } from '../src/errors.js';
import { consumeRateLimit } from '../src/http/rate-limit.js';
import { createTestApp, type TestApp } from './support/app.js';
import { rest } from './support/clients.js';

// Each test sends from its own forwarded client address, so each starts with a full budget.
const env = { SSO_RATE_LIMIT_PER_MINUTE: '2', TRUST_PROXY: 'loopback' };
const from = (ip: string) => ({ 'x-forwarded-for': ip });

let first: TestApp;
let second: TestApp;
beforeAll(async () => {
  first = await createTestApp({ env });
  second = await createTestApp({ env, databaseUrl: first.databaseUrl });
});
afterAll(async () => {
  await second?.stop();
  await first?.stop();
});

test('each route has its own budget; past it, 429 RATE_LIMITED with Retry-After', async () => {
  const client = from('198.51.100.10');
  const orgId = randomUUID();
  const statuses: number[] = [];
  let last;
  for (const path of [`/sso/check/${orgId}`, `/sso/login/${orgId}`, `/sso/check/${orgId}`, `/sso/login/${orgId}`, `/sso/check/${orgId}`]) {
    last = await rest(first).get(path, client);
    statuses.push(last.status);
  }
  // The login flow passes through several routes: each counts on its own.
  expect(statuses).toEqual([200, 404, 200, 404, 429]);
  expect(last!.body).toEqual({ code: 'RATE_LIMITED', message: 'Too many requests, try again later', details: { retryAfterSeconds: expect.any(Number) } });
  const retryAfter = Number(last!.headers.get('retry-after'));
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(60);
  expect(last!.body.details.retryAfterSeconds).toBe(retryAfter);

  for (let i = 0; i < 2; i++) expect((await rest(first).post('/sso/exchange', { code: 'x' }, client)).status).not.toBe(429);
  expect((await rest(first).post('/sso/exchange', { code: 'x' }, client)).status).toBe(429);
  // Another client address has its own budget; management routes have none.
  expect((await rest(first).get(`/sso/check/${orgId}`, from('198.51.100.11'))).status).toBe(200);
  expect((await rest(first).get('/sso/presets', client)).status).toBe(401);
});

test('two instances on one database share the budget', async () => {
  const client = from('198.51.100.20');
  const orgId = randomUUID();
  const check = (app: TestApp) => rest(app).get(`/sso/check/${orgId}`, client);
  expect((await check(first)).status).toBe(200);
  expect((await check(second)).status).toBe(200);
  // Each instance has seen one request: the shared count says two, the limit.
  expect((await check(first)).status).toBe(429);
  expect((await check(second)).status).toBe(429);
});

test('calls arriving together are each counted once per key (one coalesced upsert)', async () => {
  // Called in one tick, the calls after the first two (the statements in flight) share one statement.
  const limit = { name: `together-${randomUUID()}`, perMinute: () => 5 };
  const outcome = (key: string) => consumeRateLimit(first.server.runtime, limit, key).then(() => 'ok', (error: AppError) => error.code);
  const outcomes = await Promise.all([...Array.from({ length: 8 }, () => outcome('a')), outcome('b'), outcome('b')]);
  // The budget is 5: exactly five of one key's eight pass (three of them in the shared statement); the other key's two pass beside them.
  expect(outcomes.slice(0, 8).sort()).toEqual(['RATE_LIMITED', 'RATE_LIMITED', 'RATE_LIMITED', 'ok', 'ok', 'ok', 'ok', 'ok']);
  expect(outcomes.slice(8)).toEqual(['ok', 'ok']);
});
