// The GraphQL explorer outside production: GraphiQL's page and every asset it references come from
// this server (the npm packages it ships), none from another origin.
import { createTestApp, type TestApp } from './support/app.js';

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp({ env: { NODE_ENV: 'development' } });
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

test('not in production', async () => {
  const production = await createTestApp({ databaseUrl: app.databaseUrl, env: { NODE_ENV: 'production' } });
  try {
    const res = await page(production);
    expect(res.headers.get('content-type')).not.toMatch(/^text\/html/);
    expect((await fetch(`${production.url}/graphql/explorer/graphiql.min.js`)).headers.get('content-type')).not.toMatch(/javascript/);
  } finally {
    await production.server.stop();
  }
});
