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
