import crypto from 'node:crypto';
import { createTestApp, useInstancePair, type TestApp } from './support/app.js';
import { sql } from './support/db.js';
import { eventually } from './support/eventually.js';
import { gql } from './support/clients.js';
import { TestClock } from './support/clock.js';

/** Automatic persisted queries: a hash registered through one instance is answered by the other. */
const pair = useInstancePair();

const QUERY = '{ serviceInfo { version } }';
const hashOf = (query: string) => crypto.createHash('sha256').update(query).digest('hex');
const persisted = (query: string) => ({ persistedQuery: { version: 1, sha256Hash: hashOf(query) } });

/** A GET by hash only, as the mobile app sends it so that answers can be cached. */
async function getByHash(app: TestApp, query: string) {
  const params = new URLSearchParams({ extensions: JSON.stringify(persisted(query)) });
  const res = await fetch(`${app.url}/graphql?${params}`, { headers: { 'apollo-require-preflight': 'true' } });
  return { status: res.status, body: (await res.json()) as { data?: Record<string, unknown>; errors?: { message: string; extensions?: { code?: string } }[] } };
}

test('a hash unknown everywhere is PERSISTED_QUERY_NOT_FOUND; registered on A, B answers it by hash alone', async () => {
  const miss = await getByHash(pair.b, QUERY);
  expect(miss.body.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_NOT_FOUND');

  const registered = await fetch(`${pair.a.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: QUERY, extensions: persisted(QUERY) }),
  });
  expect(((await registered.json()) as { data: unknown }).data).toEqual({ serviceInfo: { version: expect.any(String) } });
  await eventually(async () => (await sql(pair.a, 'select count(*)::int as n from persisted_query'))[0]!.n === 1, 10_000, 'the registration to be stored');

  const hit = await getByHash(pair.b, QUERY);
  expect([hit.status, hit.body.data]).toEqual([200, { serviceInfo: { version: expect.any(String) } }]);
});

test('a query that fails validation, or whose hash does not match, is not kept', async () => {
  const invalid = '{ serviceInfo { nope } }';
  const refused = await fetch(`${pair.a.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: invalid, extensions: persisted(invalid) }) });
  expect(refused.status).toBe(400);
  const mismatched = await fetch(`${pair.a.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ serviceInfo { version } __typename }', extensions: persisted(QUERY.replace('version', 'name')) }),
  });
  expect(mismatched.status).toBe(400);
  expect(((await mismatched.json()) as { errors: unknown }).errors).toEqual([
    { message: 'PERSISTED_QUERY_HASH_MISMATCH: the persistedQuery sha256Hash is not the SHA-256 of the query sent', extensions: { code: 'VALIDATION_ERROR' } },
  ]);
  expect((await getByHash(pair.b, invalid)).body.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_NOT_FOUND');
  expect(await sql(pair.a, 'select key from persisted_query where key like ?', [`%${hashOf(invalid)}`])).toEqual([]);
});

test('in production, validation errors name no field through "Did you mean" hints', async () => {
  const production = await createTestApp({ databaseUrl: pair.a.databaseUrl, env: { NODE_ENV: 'production' } });
  try {
    const res = await gql(production, null, '{ serviceInf { version } }');
    expect(res.body.errors?.[0]?.message).toBe('Cannot query field "serviceInf" on type "Query".');
    expect((await gql(pair.a, null, '{ serviceInf { version } }')).body.errors?.[0]?.message).toMatch(/Did you mean "serviceInfo"/);
  } finally {
    await production.server.stop();
  }
});

describe('registrations anyone may send', () => {
  // Two registrations kept, three requests a minute per caller; each test sends from its own address.
  const clock = new TestClock();
  let app: TestApp;
  beforeAll(async () => {
    app = await createTestApp({ env: { GRAPHQL_PERSISTED_QUERIES_MAX: '2', API_RATE_LIMIT_PER_MINUTE: '3', TRUST_PROXY: 'loopback' }, start: { clock } });
  });
  afterAll(async () => app?.stop());

  const register = async (query: string, ip: string) => {
    const res = await fetch(`${app.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': ip },
      body: JSON.stringify({ query, extensions: persisted(query) }),
    });
    return { status: res.status, body: (await res.json()) as { data?: unknown; errors?: { extensions?: { code?: string } }[] } };
  };
  const kept = async () => (await sql(app, 'select key from persisted_query order by key')).map((row: { key: string }) => row.key);
  const keyOf = (query: string) => `apq:${hashOf(query)}`;

  test('a document over 100,000 characters runs but is not kept', async () => {
    const huge = `# ${'x'.repeat(100_000)}\n{ serviceInfo { version } }`;
    const res = await register(huge, '198.51.100.1');
    expect([res.status, res.body.data]).toEqual([200, { serviceInfo: { version: expect.any(String) } }]);
    expect(await kept()).not.toContain(keyOf(huge));
  });

  test('past the cap a new registration evicts the least recently used one', async () => {
    const [q1, q2, q3] = ['{ serviceInfo { status } }', '{ serviceInfo { version status } }', '{ serviceInfo { status version } }'];
    expect((await register(q1, '198.51.100.2')).status).toBe(200);
    await eventually(async () => (await kept()).includes(keyOf(q1)), 10_000, 'q1 to be kept');
    expect((await register(q2, '198.51.100.2')).status).toBe(200);
    await eventually(async () => (await kept()).includes(keyOf(q2)), 10_000, 'q2 to be kept');
    // q1 is used again (a use is recorded at most hourly per instance): q2 is now the least recently used.
    clock.advance(2 * 3_600_000);
    expect((await getByHash(app, q1)).body.data).toEqual({ serviceInfo: { status: expect.any(String) } });
    expect((await register(q3, '198.51.100.2')).status).toBe(200);
    await eventually(async () => (await kept()).includes(keyOf(q3)), 10_000, 'q3 to be kept');
    expect((await kept()).sort()).toEqual([keyOf(q1), keyOf(q3)].sort());
  });

  test("an anonymous caller's registrations count against its address's budget; its other queries do not", async () => {
    for (let i = 0; i < 5; i++) expect((await gql(app, null, '{ serviceInfo { version } }')).status).toBe(200);
    const queries = [1, 2, 3, 4].map((n) => `{ serviceInfo { ${Array.from({ length: n }, () => 'version').join(' ')} } }`);
    for (const query of queries.slice(0, 3)) expect((await register(query, '198.51.100.3')).status).toBe(200);
    const fourth = await register(queries[3]!, '198.51.100.3');
    expect([fourth.status, fourth.body.errors?.[0]?.extensions?.code]).toEqual([429, 'RATE_LIMITED']);
    // Another address has its own budget.
    expect((await register(queries[3]!, '198.51.100.4')).status).toBe(200);
  });
});
