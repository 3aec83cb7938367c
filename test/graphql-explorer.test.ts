// The GraphQL explorer, on only when asked (GRAPHQL_EXPLORER=true, as `npm run dev` sets it): GraphiQL's
// page and every asset it references come from this server (the npm packages it ships), none from another origin.
import { createTestApp, type TestApp } from './support/app.js';
import { gql } from './support/clients.js';

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp({ env: { NODE_ENV: 'development', GRAPHQL_EXPLORER: 'true' } });
});
afterAll(async () => app?.stop());

const page = (target: TestApp) => fetch(`${target.url}/graphql`, { headers: { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' } });

test('GET /graphql asked for HTML is the explorer, whose scripts and styles all load from this server', async () => {
  const res = await page(app);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/html/);
  const html = await res.text();
  expect(html).toContain('<div id="graphiql">');
  expect(html).not.toMatch(/https?:\/\//);
  // Helmet's CSP lets only this origin's scripts run and connect, and no inline script.
  const csp = res.headers.get('content-security-policy') ?? '';
  expect(csp).toMatch(/default-src 'self'/);
  expect(csp).toMatch(/script-src 'self';/);
  expect(csp).not.toMatch(/unsafe-eval|https?:\/\/|upgrade-insecure-requests/);
  expect(html).not.toMatch(/<script>/);

  const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
  expect(assets.length).toBeGreaterThanOrEqual(5);
  for (const asset of assets) {
    expect(asset).toMatch(/^\/graphql\/explorer\//);
    const loaded = await fetch(new URL(asset, app.url));
    expect([asset, loaded.status]).toEqual([asset, 200]);
    expect(loaded.headers.get('content-type')).toMatch(asset.endsWith('.css') ? /^text\/css/ : /^text\/javascript/);
    expect((await loaded.text()).length).toBeGreaterThan(100);
  }
  expect((await fetch(`${app.url}/graphql/explorer/nope.js`)).status).toBe(404);
  // A GraphQL client's GET is still GraphQL.
  const query = await fetch(`${app.url}/graphql?query=${encodeURIComponent('{ serviceInfo { status } }')}`);
  expect(((await query.json()) as { data: unknown }).data).toEqual({ serviceInfo: { status: expect.any(String) } });
});

test('off unless asked, in development too; asked for in production, it brings the introspection it reads', async () => {
  // One after another: instances starting together on one database race to create the job store's schema.
  const production = await createTestApp({ databaseUrl: app.databaseUrl, env: { NODE_ENV: 'production' } });
  const development = await createTestApp({ databaseUrl: app.databaseUrl, env: { NODE_ENV: 'development' } });
  const explicit = await createTestApp({ databaseUrl: app.databaseUrl, env: { NODE_ENV: 'production', GRAPHQL_EXPLORER: 'true' } });
  const introspect = (target: TestApp) => gql(target, null, '{ __schema { queryType { name } } }');
  try {
    for (const off of [production, development]) {
      const res = await page(off);
      expect(res.headers.get('content-type')).not.toMatch(/^text\/html/);
      expect((await fetch(`${off.url}/graphql/explorer/graphiql.min.js`)).headers.get('content-type')).not.toMatch(/javascript/);
    }
    expect((await introspect(production)).status).toBe(400);
    expect((await page(explicit)).headers.get('content-type')).toMatch(/^text\/html/);
    expect((await introspect(explicit)).body).toEqual({ data: { __schema: { queryType: { name: 'Query' } } } });
  } finally {
    await Promise.all([production, development, explicit].map((target) => target.server.stop()));
  }
});
