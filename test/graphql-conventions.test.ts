import { getNamedType, isObjectType } from 'graphql';
import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import { buildOrg, buildSite, buildUser, type BuiltUser } from './support/factories.js';

/**
 * The conventions every GraphQL list and error follows: lists are Relay connections read with
 * `first`/`after` (`first` capped, cursors opaque and checked), the older `page`/`limit` and
 * `data`/`pagination` still answer, and errors carry the REST code in `extensions.code`.
 */

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => {
  await app.stop();
});

async function ok(user: BuiltUser, query: string, variables?: Record<string, unknown>): Promise<any> {
  const res = await gql(app, user.as, query, variables);
  expect(res.body.errors).toBeUndefined();
  return res.body.data;
}

const codes = (res: { body: { errors?: { extensions?: { code?: string } }[] } }) => res.body.errors?.map((e) => e.extensions?.code);

const SITES = `query($first: Int!, $after: String) {
  sites(first: $first, after: $after) {
    totalCount
    pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
    edges { cursor node { id name } }
  }
}`;

test('a page list reads forward with first/after to its end, in the REST order, and old page/limit queries still answer', async () => {
  const org = await buildOrg(app);
  const names = ['Alpha', 'Bravo', 'Charlie', 'Delta', 'Echo'];
  for (const name of names) await buildSite(app, org.id, { name });
  const viewer = await buildUser(app, { orgId: org.id, can: ['sites:read'] });

  const restOrder = (await rest(app, viewer.as).get('/orgs/sites?limit=100')).body.data.map((s: { name: string }) => s.name);
  expect([...restOrder].sort()).toEqual(names);

  const read: string[] = [];
  let after: string | null = null;
  const pages: any[] = [];
  do {
    const page: any = (await ok(viewer, SITES, { first: 2, after })).sites;
    pages.push(page);
    expect(page.totalCount).toBe(5);
    expect(page.pageInfo.startCursor).toBe(page.edges[0]?.cursor ?? null);
    expect(page.pageInfo.endCursor).toBe(page.edges.at(-1)?.cursor ?? null);
    expect(page.pageInfo.hasPreviousPage).toBe(after !== null);
    read.push(...page.edges.map((e: any) => e.node.name));
    after = page.pageInfo.hasNextPage ? page.pageInfo.endCursor : null;
  } while (after);
  expect(pages.map((p) => p.edges.length)).toEqual([2, 2, 1]);
  expect(read).toEqual(restOrder);

  // Any edge's cursor continues after that edge, whatever `first` was.
  const fromSecond = (await ok(viewer, SITES, { first: 3, after: pages[0].edges[1].cursor })).sites;
  expect(fromSecond.edges.map((e: any) => e.node.name)).toEqual(restOrder.slice(2, 5));
  const straddling = (await ok(viewer, SITES, { first: 2, after: pages[0].edges[0].cursor })).sites;
  expect(straddling.edges.map((e: any) => e.node.name)).toEqual(restOrder.slice(1, 3));

  // The page/limit form written before connections, and its data/pagination.
  const legacy = (await ok(viewer, '{ sites(page: 2, limit: 2) { data { name } pagination { page limit total } edges { node { name } } } }')).sites;
  expect(legacy).toEqual({
    data: restOrder.slice(2, 4).map((name: string) => ({ name })),
    pagination: { page: 2, limit: 2, total: 5 },
    edges: restOrder.slice(2, 4).map((name: string) => ({ node: { name } })),
  });
});

test('no field answers a bare page: every page/limit list is a connection that keeps data and pagination', () => {
  // REST's `GET /orgs/` answers the tenancy with its organizations as a page; GraphQL mirrors it (docs/decisions.md).
  const exceptions = ['Tenancy.organizations'];
  const bare: string[] = [];
  for (const type of Object.values(app.server.schema.getTypeMap())) {
    if (type.name.startsWith('__') || !isObjectType(type)) continue;
    for (const field of Object.values(type.getFields())) {
      const answer = getNamedType(field.type);
      if (!isObjectType(answer)) continue;
      const fields = answer.getFields();
      if (fields.data && fields.pagination && !(fields.edges && fields.pageInfo)) bare.push(`${type.name}.${field.name}: ${answer.name}`);
    }
  }
  expect(bare.filter((found) => !exceptions.includes(found.split(':')[0]!))).toEqual([]);
  // The exceptions are still pages: one that became a connection leaves the list.
  expect(exceptions.filter((exception) => !bare.some((found) => found.startsWith(`${exception}:`)))).toEqual([]);
});

test('first is capped at 500 and cursors are checked: both VALIDATION_ERROR', async () => {
  const org = await buildOrg(app);
  const viewer = await buildUser(app, { orgId: org.id, can: ['sites:read', 'devices:read'] });
  const over = await gql(app, viewer.as, '{ sites(first: 501) { totalCount } }');
  expect(codes(over)).toEqual(['VALIDATION_ERROR']);
  expect(over.body.errors![0]!.message).toMatch(/first/);
  expect(codes(await gql(app, viewer.as, '{ sites(first: 0) { totalCount } }'))).toEqual(['VALIDATION_ERROR']);
  for (const after of ['nope', Buffer.from('offset:-1').toString('base64url'), Buffer.from('offset:1e3').toString('base64url')]) {
    const res = await gql(app, viewer.as, 'query($after: String) { sites(after: $after) { totalCount } }', { after });
    expect([codes(res), res.body.errors![0]!.message]).toEqual([['VALIDATION_ERROR'], 'Invalid cursor']);
  }
  // The same rule on keyset connections.
  expect(codes(await gql(app, viewer.as, '{ devices(first: 1001) { totalCount } }'))).toEqual(['VALIDATION_ERROR']);
});

test('errors carry the REST codes: NOT_FOUND, FORBIDDEN, VALIDATION_ERROR, UNAUTHENTICATED', async () => {
  const org = await buildOrg(app);
  const other = await buildOrg(app);
  const theirs = await buildSite(app, other.id);
  const viewer = await buildUser(app, { orgId: org.id, can: ['sites:read'] });

  // Another tenant's site is NOT_FOUND, as over REST.
  const hidden = await gql(app, viewer.as, 'query($id: ID!) { site(id: $id) { id } }', { id: theirs.id });
  expect([codes(hidden), hidden.body.data]).toEqual([['NOT_FOUND'], null]);
  expect((await rest(app, viewer.as).get(`/orgs/sites/${theirs.id}`)).body.code).toBe('NOT_FOUND');

  // A permission the caller lacks is FORBIDDEN.
  const denied = await gql(app, viewer.as, 'mutation { createSite(input: { name: "Nope" }) { id } }');
  expect(codes(denied)).toEqual(['FORBIDDEN']);
  expect((await rest(app, viewer.as).post('/orgs/sites', { name: 'Nope' })).body.code).toBe('FORBIDDEN');

  // Bad arguments, whether the schema or the service refuses them, are VALIDATION_ERROR.
  expect(codes(await gql(app, viewer.as, '{ sites(first: "two") { totalCount } }'))).toEqual(['VALIDATION_ERROR']);
  expect(codes(await gql(app, viewer.as, '{ site(id: "not-a-uuid") { id } }'))).toEqual(['NOT_FOUND']);
  expect(codes(await gql(app, viewer.as, '{ sites(orgId: "not-a-uuid") { totalCount } }'))).toEqual(['VALIDATION_ERROR']);

  // No credentials where they are required: UNAUTHENTICATED.
  const anonymous = await gql(app, null, '{ sites { totalCount } }');
  expect(codes(anonymous)).toEqual(['UNAUTHENTICATED']);
  expect(codes(await gql(app, { token: 'not-a-token' }, '{ me { id } }'))).toEqual(['UNAUTHENTICATED']);
});
