// The GraphQL endpoint's HTTP behaviour around operations: caching of GETs by persisted-query hash
// (GRAPHQL_GET_MAX_AGE_SECONDS), the deadline (GRAPHQL_TIMEOUT_MS) and the per-caller budget shared
// with REST (API_RATE_LIMIT_PER_MINUTE).
import crypto from 'node:crypto';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { createTestApp, type TestApp } from './support/app.js';
import { sql } from './support/db.js';
import { gql, rest } from './support/clients.js';
import { buildOrg, buildUser } from './support/factories.js';

const hashOf = (query: string) => crypto.createHash('sha256').update(query).digest('hex');
const persisted = (query: string) => ({ persistedQuery: { version: 1, sha256Hash: hashOf(query) } });

async function get(app: TestApp, params: Record<string, string>, token?: string) {
  const res = await fetch(`${app.url}/graphql?${new URLSearchParams(params)}`, {
    headers: { 'apollo-require-preflight': 'true', ...(token ? { authorization: `Bearer ${token}` } : {}) },
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as { data?: unknown; errors?: { extensions?: { code?: string } }[] } };
}

describe('Cache-Control', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await createTestApp({ env: { GRAPHQL_GET_MAX_AGE_SECONDS: '20' } });
  });
  afterAll(async () => app?.stop());

  test("a query's answer by hash (GET) is private to the caller for the configured time; anything else is no-store", async () => {
    const org = await buildOrg(app);
    const viewer = await buildUser(app, { role: 'Organization Viewer', orgId: org.id });
    const query = 'query Me { me { email } }';
    const registered = await fetch(`${app.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${viewer.token}` },
      body: JSON.stringify({ query, extensions: persisted(query) }),
    });
    expect([registered.status, registered.headers.get('cache-control')]).toEqual([200, 'no-store']);

    const byHash = await get(app, { extensions: JSON.stringify(persisted(query)) }, viewer.token);
    expect(byHash.body).toEqual({ data: { me: { email: viewer.user.email } } });
    expect(byHash.headers.get('cache-control')).toBe('private, max-age=20');
    expect(byHash.headers.get('vary')?.split(/,\s*/)).toEqual(expect.arrayContaining(['Origin', 'Authorization', 'X-API-Key']));

    // The same hash without credentials answers an error: never stored.
    const anonymous = await get(app, { extensions: JSON.stringify(persisted(query)) });
    expect(anonymous.body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    expect(anonymous.headers.get('cache-control')).toBe('no-store');
    // A GET with the query text in full, and an unknown hash.
    expect((await get(app, { query }, viewer.token)).headers.get('cache-control')).toBe('no-store');
    const unknown = await get(app, { extensions: JSON.stringify(persisted('{ __typename }')) }, viewer.token);
    expect([unknown.body.errors?.[0]?.extensions?.code, unknown.headers.get('cache-control')]).toEqual(['PERSISTED_QUERY_NOT_FOUND', 'no-store']);

    // A mutation by hash over GET is refused (405), and never stored either.
    const mutation = 'mutation Out { logout }';
    await fetch(`${app.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: mutation, extensions: persisted(mutation) }) });
    const refused = await get(app, { extensions: JSON.stringify(persisted(mutation)) }, viewer.token);
    expect([refused.status, refused.headers.get('cache-control')]).toEqual([405, 'no-store']);
  });
});

describe('GRAPHQL_TIMEOUT_MS', () => {
  let owner: TestApp;
  beforeAll(async () => {
    owner = await createTestApp();
  });
  afterAll(async () => owner?.stop());

  test('an operation past the deadline is answered 504 TIMEOUT and the rest of its work abandoned', async () => {
    const slow = await createTestApp({ databaseUrl: owner.databaseUrl, env: { GRAPHQL_TIMEOUT_MS: '1' } });
    const org = await buildOrg(owner);
    const tech = await buildUser(owner, { role: 'Organization Technician', orgId: org.id });
    // Mutation fields run one after the other, each a transaction of its own: far longer than 1 ms.
    const creates = Array.from({ length: 30 }, (_, i) => `k${i}: createEnrollmentKey(input: { name: "slow ${i}" }) { id }`).join('\n');
    const res = await gql(slow, tech.as, `mutation { ${creates} }`);
    expect(res.status).toBe(504);
    expect(res.body).toEqual({ errors: [{ message: 'The operation did not finish within 1 ms and was abandoned', extensions: { code: 'TIMEOUT' } }] });
    expect(res.headers.get('cache-control')).toBe('no-store');

    // Stopping waits for the abandoned operation to settle: the mutation under way at the deadline
    // completes, none after it starts.
    await slow.server.stop();
    const [{ n }] = await sql(owner, 'select count(*)::int as n from enrollment_key where org_id = ?', [org.id]);
    expect(n).toBeLessThanOrEqual(1);
  });
});

describe('API_RATE_LIMIT_PER_MINUTE', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await createTestApp({ env: { API_RATE_LIMIT_PER_MINUTE: '4' } });
  });
  afterAll(async () => app?.stop());

  test('REST requests, GraphQL requests and subscribes drain one budget per caller', async () => {
    const org = await buildOrg(app);
    const viewer = await buildUser(app, { role: 'Organization Viewer', orgId: org.id });
    const other = await buildUser(app, { role: 'Organization Viewer', orgId: org.id });
    const api = rest(app, viewer.as);
    expect((await api.get('/users/me')).status).toBe(200);
    expect((await api.get(`/orgs/organizations/${org.id}`)).status).toBe(200);
    expect((await gql(app, viewer.as, '{ me { id } }')).body.data).toBeDefined();

    const client = createClient({ url: `${app.url.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${viewer.token}` }, retryAttempts: 0 });
    const overSocket = () =>
      new Promise<unknown>((resolve) => client.subscribe({ query: '{ serviceInfo { status } }' }, { next: (result) => resolve(result), error: (errors) => resolve({ errors }), complete: () => {} }));
    try {
      expect(await overSocket()).toEqual({ data: { serviceInfo: { status: expect.any(String) } } });
      // Four used: the fifth is refused on every door.
      expect(await overSocket()).toEqual({ errors: [{ message: 'Too many requests, try again later', extensions: { code: 'RATE_LIMITED', details: { retryAfterSeconds: expect.any(Number) } } }] });
    } finally {
      await client.dispose();
    }
    const restRefused = await api.get('/users/me');
    expect([restRefused.status, restRefused.body.code]).toEqual([429, 'RATE_LIMITED']);
    const gqlRefused = await gql(app, viewer.as, '{ me { id } }');
    expect(gqlRefused.status).toBe(429);
    expect(gqlRefused.body).toEqual({ errors: [{ message: 'Too many requests, try again later', extensions: { code: 'RATE_LIMITED', details: { retryAfterSeconds: expect.any(Number) } } }] });
    const retryAfter = Number(gqlRefused.headers.get('retry-after'));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);

    // Another caller has a budget of its own; anonymous requests are not counted here.
    expect((await rest(app, other.as).get('/users/me')).status).toBe(200);
    expect((await gql(app, null, '{ serviceInfo { status } }')).status).toBe(200);
  });

  test('each operation of a batch counts against the budget', async () => {
    const org = await buildOrg(app);
    const viewer = await buildUser(app, { role: 'Organization Viewer', orgId: org.id });
    const batch = await fetch(`${app.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${viewer.token}` },
      body: JSON.stringify(Array.from({ length: 4 }, () => ({ query: '{ me { id } }' }))),
    });
    expect(((await batch.json()) as unknown[]).length).toBe(4);
    // The batch's four used the budget of four.
    const next = await gql(app, viewer.as, '{ me { id } }');
    expect([next.status, next.body.errors?.[0]?.extensions?.code]).toEqual([429, 'RATE_LIMITED']);
  });
});
