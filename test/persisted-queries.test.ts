import crypto from 'node:crypto';
import { createTestApp, useInstancePair, type TestApp } from './support/app.js';
import { sql } from './support/db.js';
import { eventually } from './support/eventually.js';
import { gql } from './support/clients.js';

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
