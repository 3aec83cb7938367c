import { getIntrospectionQuery } from 'graphql';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { createTestApp, type TestApp } from './support/app.js';
import { gql } from './support/clients.js';
import { buildOrg, buildUser, type BuiltUser } from './support/factories.js';

// Default settings: GRAPHQL_MAX_COST 10000, default page size 100, webhook deliveries 50 by default.
let app: TestApp;
let viewer: BuiltUser;

beforeAll(async () => {
  app = await createTestApp();
  const org = await buildOrg(app);
  // Every list the queries ask for is a read.
  viewer = await buildUser(app, { orgId: org.id, role: 'Organization Viewer' });
});
afterAll(() => app.stop());

const aliases = (n: number, field: string) => `{ ${Array.from({ length: n }, (_, i) => `a${i}: ${field}`).join(' ')} }`;
const tooExpensive = (cost: number) => ({ message: `Query is too expensive: cost ${cost} exceeds the limit of 10000`, extensions: { code: 'VALIDATION_ERROR' } });

test('a list without a page size costs its default page size: sixty aliases of users are refused with or without limit', async () => {
  // Each alias: users (1) + 100 × (data (1) + id (1)).
  for (const field of ['users(limit: 100) { data { id } }', 'users { data { id } }']) {
    const res = await gql(app, viewer.as, aliases(60, field));
    expect(res.body.data).toBeUndefined();
    expect(res.body.errors).toEqual([tooExpensive(60 * 201)]);
  }
  const one = await gql(app, viewer.as, '{ users { data { id } } }');
  expect(one.body.errors).toBeUndefined();
  expect(one.body.data.users.data).toEqual([{ id: viewer.user.id }]);
});

test('a page size given as a variable counts as the largest page, whatever the value', async () => {
  // Each alias: 1 + 500 × 2, as validation cannot see the value.
  const res = await gql(app, viewer.as, `query($n: Int!) ${aliases(10, 'users(limit: $n) { data { id } }')}`, { n: 1 });
  expect(res.body.errors).toEqual([tooExpensive(10 * 1001)]);
});

test('nested lists multiply: webhooks { deliveries } is 100 webhooks × 50 deliveries', async () => {
  // webhooks (1) + 100 × (data (1) + deliveries (1) + 50 × (edges (1) + node (1) + id (1))).
  const res = await gql(app, viewer.as, '{ webhooks { data { deliveries { edges { node { id } } } } } }');
  expect(res.body.data).toBeUndefined();
  expect(res.body.errors).toEqual([tooExpensive(1 + 100 * (2 + 50 * 3))]);
});

test('a dashboard-sized query is accepted and answered', async () => {
  const res = await gql(
    app,
    viewer.as,
    `{
      me { id email permissions memberships { id scope orgId roleName } }
      users(limit: 25) { data { id email status } pagination { total } }
      organizations(limit: 20) { data { id name } pagination { total } }
      auditLogs(limit: 20) { data { id action createdAt } }
      webhooks(limit: 10) { data { id url deliveries(first: 5) { edges { node { id status } } } } pagination { total } }
    }`,
  );
  expect(res.body.errors).toBeUndefined();
  expect(res.body.data.me.id).toBe(viewer.user.id);
  expect(res.body.data.users.pagination.total).toBe(1);
  expect(res.body.data.webhooks.data).toEqual([]);
});

test('aliases are capped at 100 per operation, counted through fragments as often as they are spread', async () => {
  const allowed = await gql(app, viewer.as, aliases(100, 'serviceInfo { version }'));
  expect(allowed.body.errors).toBeUndefined();
  expect(Object.keys(allowed.body.data)).toHaveLength(100);

  const tooMany = { message: 'Query has too many aliases: 101 exceeds the limit of 100', extensions: { code: 'VALIDATION_ERROR' } };
  expect((await gql(app, viewer.as, aliases(101, 'serviceInfo { version }'))).body).toEqual({ errors: [tooMany] });
  const fragment = `fragment many on ServiceInfo { ${Array.from({ length: 50 }, (_, i) => `v${i}: version`).join(' ')} }`;
  const spread = await gql(app, viewer.as, `{ one: serviceInfo { ...many } two: serviceInfo { ...many } } ${fragment}`);
  expect(spread.body).toEqual({ errors: [{ ...tooMany, message: 'Query has too many aliases: 102 exceeds the limit of 100' }] });
});

test('a request may batch up to 10 operations, each answered in order; more are refused with one error', async () => {
  const batch = (n: number) =>
    fetch(`${app.url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${(viewer.as as { token: string }).token}` },
      body: JSON.stringify(Array.from({ length: n }, (_, i) => ({ query: i % 2 ? '{ me { email } }' : '{ serviceInfo { version } }' }))),
    });
  const ten = await batch(10);
  expect(ten.status).toBe(200);
  const results = (await ten.json()) as { data: Record<string, unknown> }[];
  expect(results).toHaveLength(10);
  expect(results[1]).toEqual({ data: { me: { email: viewer.user.email } } });
  expect(results[2]).toEqual({ data: { serviceInfo: { version: expect.any(String) } } });

  const eleven = await batch(11);
  expect([eleven.status, await eleven.json()]).toEqual([400, { errors: [{ message: 'Too many operations in one request: 11 exceeds the limit of 10', extensions: { code: 'VALIDATION_ERROR' } }] }]);
});

test('a batch entry that is no operation (null) is answered 400, not 500', async () => {
  const res = await fetch(`${app.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '[null]' });
  expect(res.status).toBe(400);
  expect(((await res.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe('VALIDATION_ERROR');
});

/** One operation over graphql-ws as `user`: its result, or the errors it was refused with. */
async function overSocket(user: BuiltUser, query: string): Promise<unknown> {
  const client = createClient({ url: `${app.url.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${user.token}` }, retryAttempts: 0 });
  try {
    return await new Promise((resolve) => client.subscribe({ query }, { next: (result) => resolve(result), error: (errors) => resolve({ errors }), complete: () => {} }));
  } finally {
    await client.dispose();
  }
}

// 946 bytes: each fragment spreads the next twice, so F0 stands for 2^23 `__typename`s.
const DOUBLING =
  'query Q { ...F0 } ' +
  Array.from({ length: 23 }, (_, i) => `fragment F${i} on Query { ...F${i + 1} ...F${i + 1} }`).join(' ') +
  ' fragment F23 on Query { __typename }';

test('a document whose fragments double at each level is refused (each fragment measured once), over HTTP and graphql-ws, while /health is answered', async () => {
  const refusal = { message: `Query is too expensive: cost ${2 ** 23} exceeds the limit of 10000`, extensions: { code: 'VALIDATION_ERROR' } };
  const [attack, health] = await Promise.all([gql(app, null, DOUBLING), fetch(`${app.url}/health`)]);
  expect(health.status).toBe(200);
  expect([attack.status, attack.body]).toEqual([400, { errors: [refusal] }]);
  expect(await overSocket(viewer, DOUBLING)).toEqual({ errors: [refusal] });
});

test('a document past 20,000 tokens is refused before it is validated', async () => {
  const res = await gql(app, null, `{ ${'__typename '.repeat(20_001)}}`);
  expect(res.status).toBe(400);
  expect(res.body.errors).toEqual([{ message: expect.stringMatching(/^Syntax Error: Document contains more tha[nt] 20000 tokens\. Parsing aborted\.$/), locations: expect.any(Array), extensions: { code: 'VALIDATION_ERROR' } }]);
});

test('a page list given the deprecated page/limit is costed at the size its resolver reads, not at first', async () => {
  // users(first: 1, limit: 500) reads 500 users: each alias 1 + 500 × (data + id).
  const mixed = await gql(app, viewer.as, aliases(10, 'users(first: 1, limit: 500) { data { id } }'));
  expect(mixed.body).toEqual({ errors: [tooExpensive(10 * 1001)] });
  // page alone reads pages of the default 100, whatever first says.
  const paged = await gql(app, viewer.as, aliases(60, 'users(first: 1, page: 1) { data { id } }'));
  expect(paged.body).toEqual({ errors: [tooExpensive(60 * 201)] });
  // devices (50 by default) × commands(first: 1, limit: 500) × (edges + node + stdout).
  const nested = await gql(app, viewer.as, '{ devices { edges { node { commands(first: 1, limit: 500) { edges { node { stdout } } } } } } }');
  expect(nested.body).toEqual({ errors: [tooExpensive(1 + 50 * (3 + 500 * 3))] });
  // What the resolver reads is what it answers: limit's page, first ignored.
  const small = await gql(app, viewer.as, '{ users(first: 5, limit: 1) { data { id } totalCount } }');
  expect(small.body).toEqual({ data: { users: { data: [{ id: viewer.user.id }], totalCount: 1 } } });
});

test('introspection counts: an operation may ask for the schema once, and its aliases count', async () => {
  const full = await gql(app, null, getIntrospectionQuery());
  expect(full.body.errors).toBeUndefined();
  expect(full.body.data.__schema.types.length).toBeGreaterThan(100);

  const twenty = await gql(app, null, aliases(20, '__schema { types { name fields { name } } }'));
  expect([twenty.status, twenty.body]).toEqual([400, { errors: [{ message: 'Query asks for introspection 20 times: an operation may ask once', extensions: { code: 'VALIDATION_ERROR' } }] }]);
  const innerAliases = `{ __schema { ${Array.from({ length: 101 }, (_, i) => `t${i}: queryType { name }`).join(' ')} } }`;
  expect((await gql(app, null, innerAliases)).body.errors).toEqual([{ message: 'Query has too many aliases: 101 exceeds the limit of 100', extensions: { code: 'VALIDATION_ERROR' } }]);
});
