import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import { buildOrg, buildUser } from './support/factories.js';

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => {
  await app.stop();
});

describe('health', () => {
  test('GET /health answers status, version and uptime', async () => {
    const res = await fetch(`${app.url}/health`);
    expect(res.status).toBe(200);
    const body: any = await res.json();
    expect(body).toEqual({ status: 'ok', version: expect.any(String), uptime: expect.any(Number) });
    expect(body.version).toBe(app.server.runtime.config.serviceVersion);
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });

  test('GET /health/ready checks the database and the job store', async () => {
    const res = await fetch(`${app.url}/health/ready`);
    expect(res.status).toBe(200);
    const body: any = await res.json();
    expect(body.status).toBe('ok');
    expect(body.checks.database.status).toBe('ok');
    expect(body.checks.jobs.status).toBe('ok');
  });

  test('security headers are set', async () => {
    const res = await fetch(`${app.url}/health`);
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
    expect(res.headers.get('x-powered-by')).toBeNull();
  });

  test('GET /health, answered in front of Express, has the headers and body Express gives the same route', async () => {
    // A query string takes the request through Express to the same route.
    const headers = { origin: 'https://dash.example.test', 'x-request-id': 'probe-1.a_b' };
    const [fast, routed] = [await fetch(`${app.url}/health`, { headers }), await fetch(`${app.url}/health?via=express`, { headers })];
    const comparable = (res: Response) => Object.fromEntries([...res.headers].filter(([name]) => !['date', 'content-length'].includes(name)));
    expect(comparable(fast)).toEqual(comparable(routed));
    expect(fast.headers.get('x-request-id')).toBe('probe-1.a_b');
    expect(fast.headers.get('content-security-policy') ?? fast.headers.get('strict-transport-security')).not.toBeNull();
    const [fastBody, routedBody] = [(await fast.json()) as object, (await routed.json()) as object];
    expect({ ...fastBody, uptime: 0 }).toEqual({ ...routedBody, uptime: 0 });
  });
});

describe('error envelope', () => {
  test('malformed JSON is a 400 VALIDATION_ERROR', async () => {
    const res = await rest(app).post('/auth/login', '{"email": ');
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ code: 'VALIDATION_ERROR', message: 'Malformed JSON in request body' });
  });

  test('a compressed body that does not decompress is a 400, not a 500', async () => {
    const res = await fetch(`${app.url}/api/v1/auth/login`, { method: 'POST', headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' }, body: 'not gzip at all' });
    expect(res.status).toBe(400);
    expect(await res.json()).toMatchObject({ code: 'VALIDATION_ERROR' });
  });

  test('an unknown API route is a 404 in the envelope', async () => {
    const res = await rest(app).get('/no/such/route');
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ code: 'NOT_FOUND', message: 'Route GET /api/v1/no/such/route not found' });
  });

  test('an unknown route outside the API is a 404 in the envelope too', async () => {
    const res = await fetch(`${app.url}/nowhere`);
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ code: 'NOT_FOUND' });
  });

  test('a body over the size limit is refused in the envelope', async () => {
    const res = await rest(app).post('/auth/login', { email: 'a@b.test', password: 'x'.repeat(2 * 1024 * 1024) });
    expect(res.status).toBe(413);
    expect(res.body.code).toBe('PAYLOAD_TOO_LARGE');
  });

  test('an invalid bearer token is a 401 UNAUTHENTICATED', async () => {
    const res = await rest(app, { token: 'not-a-jwt' }).get('/users/me');
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ code: 'UNAUTHENTICATED', message: 'Invalid or expired access token' });
  });
});

describe('OpenAPI', () => {
  test('the document is served as OpenAPI 3.1 with the error schema', async () => {
    const res = await rest(app).get('/openapi.json');
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    expect(res.body.components.schemas.Error.required).toEqual(['code', 'message']);
    // Routes land in the document from the same zod schemas that validate them.
    const login = res.body.paths['/api/v1/auth/login'].post;
    expect(login.security).toEqual([]);
    expect(login.requestBody.required).toBe(true);
    expect(login.requestBody.content['application/json'].schema.required).toEqual(['email', 'password']);
    expect(res.body.paths['/api/v1/auth/logout'].post.requestBody.required).toBe(false);
    expect(Object.keys(res.body.paths)).toEqual(expect.arrayContaining(['/api/v1/webhooks', '/api/v1/sso/providers/{id}', '/api/v1/orgs/organizations', '/api/v1/users/me']));
  });

  test('every documented operation is served, and its path parameters carry their schema', async () => {
    const { paths } = (await rest(app).get('/openapi.json')).body as { paths: Record<string, Record<string, { parameters: { name: string; in: string; required: boolean; schema: any }[] }>> };
    const operations = Object.entries(paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ path, method, op })));
    expect(operations.length).toBeGreaterThan(50);
    for (const { path, method, op } of operations) {
      const names = [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      const inPath = op.parameters.filter((p) => p.in === 'path');
      expect({ path, names: inPath.map((p) => p.name) }).toEqual({ path, names });
      for (const p of inPath) expect({ path, p }).toEqual({ path, p: expect.objectContaining({ required: true, schema: expect.objectContaining({ type: 'string' }) }) });
      const url = path.replace('/api/v1', '').replace(/\{\w+\}/g, () => randomUUID());
      const res = await (rest(app) as Record<string, (path: string) => Promise<{ body: any }>>)[method]!(url);
      expect({ path, method, message: res.body?.message }).not.toEqual({ path, method, message: expect.stringMatching(/^Route .* not found$/) });
    }
    expect(paths['/api/v1/webhooks/{id}/retry/{deliveryId}']!.post!.parameters).toEqual([
      { name: 'id', in: 'path', required: true, schema: expect.objectContaining({ type: 'string', format: 'uuid' }) },
      { name: 'deliveryId', in: 'path', required: true, schema: expect.objectContaining({ type: 'string', format: 'uuid' }) },
    ]);
  });
});

describe('path parameters', () => {
  test('a malformed id answers the resource 404, after the body is checked, as an id of another tenant does', async () => {
    const api = rest(app, (await buildUser(app, { orgId: (await buildOrg(app)).id, can: ['organizations:write', 'audit:read'] })).as);
    for (const id of ['not-a-uuid', randomUUID()]) {
      expect(await api.patch(`/webhooks/${id}`, { name: 'renamed' })).toMatchObject({ status: 404, body: { code: 'NOT_FOUND', message: 'Webhook not found' } });
      expect((await api.patch(`/webhooks/${id}`, { events: 'nope' })).status).toBe(400);
    }
    expect(await api.get('/audit/logs/1%27%20or%201=1')).toMatchObject({ status: 404, body: { code: 'NOT_FOUND', message: 'Audit log entry not found' } });
  });

  test('a fixed segment wins over an id whatever the declaration order', async () => {
    // `/webhooks/dead-letters` is declared after `/webhooks/:id`.
    const member = await buildUser(app, { orgId: (await buildOrg(app)).id, role: 'Organization Viewer' });
    expect((await rest(app, member.as).get('/webhooks/dead-letters')).body).toMatchObject({ data: [], pagination: { total: 0 } });
  });
});

describe('GraphQL', () => {
  test('answers a query over HTTP', async () => {
    const res = await gql(app, null, '{ serviceInfo { status version } }');
    expect(res.body.data).toEqual({ serviceInfo: { status: 'ok', version: app.server.runtime.config.serviceVersion } });
  });

  test('a syntax error carries VALIDATION_ERROR in extensions.code', async () => {
    const res = await gql(app, null, '{ serviceInfo { ');
    expect(res.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_ERROR');
  });

  test('queries over the depth or cost limit are refused before they run', async () => {
    const limited = await createTestApp({ env: { GRAPHQL_MAX_COST: '10', GRAPHQL_MAX_DEPTH: '2' } });
    try {
      const fields = Array.from({ length: 6 }, (_, i) => `a${i}: serviceInfo { status version }`).join(' ');
      const res = await gql(limited, null, `{ ${fields} }`);
      expect(res.body.data).toBeUndefined();
      expect(res.body.errors?.[0]).toMatchObject({ message: 'Query is too expensive: cost 18 exceeds the limit of 10', extensions: { code: 'VALIDATION_ERROR' } });
      const small = await gql(limited, null, '{ serviceInfo { status } }');
      expect(small.body.data).toEqual({ serviceInfo: { status: 'ok' } });
      const deep = await gql(limited, null, '{ organizations { data { id } } }');
      expect(deep.body.errors?.[0]).toMatchObject({ message: 'Query is too deep: depth 3 exceeds the limit of 2', extensions: { code: 'VALIDATION_ERROR' } });
    } finally {
      await limited.stop();
    }
  });
});

describe('production settings', () => {
  test('introspection is off in production and CORS answers only allowed origins', async () => {
    const prod = await createTestApp({ env: { NODE_ENV: 'production', CORS_ORIGINS: 'https://dash.example.test' } });
    try {
      const res = await gql(prod, null, '{ __schema { queryType { name } } }');
      expect(res.body.data).toBeUndefined();
      expect(res.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_ERROR');

      const allowed = await fetch(`${prod.url}/health`, { headers: { origin: 'https://dash.example.test' } });
      expect(allowed.headers.get('access-control-allow-origin')).toBe('https://dash.example.test');
      // The same CORS answer as Express gives (a query string goes through it).
      const routed = await fetch(`${prod.url}/health?via=express`, { headers: { origin: 'https://dash.example.test' } });
      const cors = (res: Response) => [...res.headers].filter(([name]) => name.startsWith('access-control-') || name === 'vary');
      expect(cors(allowed)).toEqual(cors(routed));
      const other = await fetch(`${prod.url}/health`, { headers: { origin: 'https://evil.example.test' } });
      expect(other.headers.get('access-control-allow-origin')).toBeNull();
    } finally {
      await prod.stop();
    }
  });

  test('introspection works outside production', async () => {
    const res = await gql(app, null, '{ __schema { queryType { name } } }');
    expect(res.body.data).toEqual({ __schema: { queryType: { name: 'Query' } } });
  });
});

describe('readiness when the database goes away', () => {
  test('GET /health/ready answers 503 naming the database', async () => {
    const other = await createTestApp();
    try {
      const admin = new pg.Client({ connectionString: process.env.TEST_DATABASE_ADMIN_URL });
      await admin.connect();
      const dbName = new URL(other.databaseUrl).pathname.slice(1);
      await admin.query(`drop database ${dbName} with (force)`);
      await admin.end();
      const res = await fetch(`${other.url}/health/ready`);
      expect(res.status).toBe(503);
      const body: any = await res.json();
      expect(body.status).toBe('unavailable');
      expect(body.checks.database.status).toBe('error');
    } finally {
      await other.stop();
    }
  });
});
