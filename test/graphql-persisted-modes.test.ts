// PERSISTED_QUERIES: off refuses the extension, trusted answers only the documents of imported
// manifests (npm run persisted:import, or POST /api/v1/graphql/persisted-queries by a platform admin).
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { createTestApp, type TestApp } from './support/app.js';
import { sql } from './support/db.js';
import { rest } from './support/clients.js';
import { buildOrg, buildUser } from './support/factories.js';

const hashOf = (query: string) => crypto.createHash('sha256').update(query).digest('hex');
const persisted = (query: string) => ({ persistedQuery: { version: 1, sha256Hash: hashOf(query) } });

const TRUSTED = 'query Version { serviceInfo { version } }';
const OTHER = '{ serviceInfo { status } }';

type Body = { data?: Record<string, unknown>; errors?: { message: string; extensions?: { code?: string; details?: unknown } }[] };

async function post(app: TestApp, body: unknown) {
  const res = await fetch(`${app.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Body };
}

async function getByHash(app: TestApp, query: string) {
  const params = new URLSearchParams({ extensions: JSON.stringify(persisted(query)) });
  const res = await fetch(`${app.url}/graphql?${params}`, { headers: { 'apollo-require-preflight': 'true' } });
  return { status: res.status, body: (await res.json()) as Body };
}

/** One operation over graphql-ws (which takes only authenticated sockets): its result, or the errors it was refused with. */
async function overSocket(app: TestApp, token: string, payload: { query: string; extensions?: Record<string, unknown> }): Promise<unknown> {
  const client = createClient({ url: `${app.url.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${token}` }, retryAttempts: 0 });
  try {
    return await new Promise((resolve) => {
      client.subscribe(payload, { next: (result) => resolve(result), error: (errors) => resolve({ errors }), complete: () => {} });
    });
  } finally {
    await client.dispose();
  }
}

let apq: TestApp;
let trusted: TestApp;
let off: TestApp;
beforeAll(async () => {
  apq = await createTestApp();
  trusted = await createTestApp({ databaseUrl: apq.databaseUrl, env: { PERSISTED_QUERIES: 'trusted' } });
  off = await createTestApp({ databaseUrl: apq.databaseUrl, env: { PERSISTED_QUERIES: 'off' } });
});
afterAll(async () => {
  await off?.server.stop();
  await trusted?.server.stop();
  await apq?.stop();
});

test('off: the persistedQuery extension is refused with 400 PERSISTED_QUERY_NOT_SUPPORTED; plain queries run', async () => {
  const refused = await post(off, { query: TRUSTED, extensions: persisted(TRUSTED) });
  expect(refused.status).toBe(400);
  expect(refused.body.errors?.[0]).toEqual({
    message: 'Persisted queries are turned off on this server: send the query text without the persistedQuery extension',
    extensions: { code: 'PERSISTED_QUERY_NOT_SUPPORTED' },
  });
  expect((await getByHash(off, TRUSTED)).body.errors?.[0]?.extensions?.code).toBe('PERSISTED_QUERY_NOT_SUPPORTED');
  expect((await post(off, { query: TRUSTED })).body.data).toEqual({ serviceInfo: { version: expect.any(String) } });
  // graphql-ws too: a subscribe by hash is refused, one in full runs.
  const viewer = await buildUser(apq, { role: 'Organization Viewer', orgId: (await buildOrg(apq)).id });
  expect(await overSocket(off, viewer.token, { query: '', extensions: persisted(TRUSTED) })).toEqual({ errors: [refused.body.errors![0]] });
  expect(await overSocket(off, viewer.token, { query: TRUSTED })).toEqual({ data: { serviceInfo: { version: expect.any(String) } } });
});

test('trusted: only imported documents run; an APQ registration never makes one trusted', async () => {
  const viewer = await buildUser(apq, { role: 'Organization Viewer', orgId: (await buildOrg(apq)).id });
  const notAllowed = { message: 'Only trusted documents run on this server: this operation is not in the trusted manifest', extensions: { code: 'PERSISTED_QUERY_NOT_ALLOWED' } };
  // Registered anonymously through the APQ instance: known by hash there, still not trusted.
  expect((await post(apq, { query: TRUSTED, extensions: persisted(TRUSTED) })).body.data).toBeDefined();
  for (const attempt of [await post(trusted, { query: TRUSTED }), await post(trusted, { query: TRUSTED, extensions: persisted(TRUSTED) }), await getByHash(trusted, TRUSTED)]) {
    expect([attempt.status, attempt.body.errors]).toEqual([400, [notAllowed]]);
  }
  expect(await overSocket(trusted, viewer.token, { query: TRUSTED })).toEqual({ errors: [notAllowed] });

  const platform = await buildUser(apq, { role: 'Platform Admin' });
  const manifest = { format: 'apollo-persisted-query-manifest', version: 1, operations: [{ id: hashOf(TRUSTED), name: 'Version', type: 'query', body: TRUSTED }] };
  const imported = await rest(apq, platform.as).post('/graphql/persisted-queries', manifest);
  expect([imported.status, imported.body]).toEqual([200, { documents: 1, added: 1 }]);
  expect((await rest(apq, platform.as).post('/graphql/persisted-queries', manifest)).body).toEqual({ documents: 1, added: 0 });

  // By hash alone, in full (with or without the extension), over HTTP and graphql-ws alike.
  for (const answered of [await getByHash(trusted, TRUSTED), await post(trusted, { query: TRUSTED }), await post(trusted, { query: TRUSTED, extensions: persisted(TRUSTED) })]) {
    expect([answered.status, answered.body.data]).toEqual([200, { serviceInfo: { version: expect.any(String) } }]);
  }
  expect(await overSocket(trusted, viewer.token, { query: TRUSTED })).toEqual({ data: { serviceInfo: { version: expect.any(String) } } });
  expect(await overSocket(trusted, viewer.token, { query: '', extensions: persisted(TRUSTED) })).toEqual({ data: { serviceInfo: { version: expect.any(String) } } });
  // Anything else is still refused, whether sent in full or registered meanwhile.
  expect((await post(trusted, { query: OTHER, extensions: persisted(OTHER) })).body.errors).toEqual([notAllowed]);
  expect((await getByHash(trusted, OTHER)).body.errors).toEqual([notAllowed]);
  expect(await sql(apq, 'select name, trusted from persisted_query where key = ?', [`apq:${hashOf(TRUSTED)}`])).toEqual([{ name: 'Version', trusted: true }]);
});

test('the admin POST: platform administrators only, every body hashed, a plain hash map accepted', async () => {
  const org = await buildOrg(apq);
  const orgAdmin = await buildUser(apq, { role: 'Organization Admin', orgId: org.id });
  const platform = await buildUser(apq, { role: 'Platform Admin' });
  const query = '{ serviceInfo { status version } }';
  expect((await rest(apq).post('/graphql/persisted-queries', { [hashOf(query)]: query })).status).toBe(401);
  const denied = await rest(apq, orgAdmin.as).post('/graphql/persisted-queries', { [hashOf(query)]: query });
  expect([denied.status, denied.body.code]).toEqual([403, 'FORBIDDEN']);

  const forged = await rest(apq, platform.as).post('/graphql/persisted-queries', { [hashOf(TRUSTED)]: query });
  expect(forged.status).toBe(400);
  expect(forged.body).toEqual({ code: 'VALIDATION_ERROR', message: 'Every document must be listed under the SHA-256 of its body', details: [{ path: hashOf(TRUSTED), message: 'is not the SHA-256 of its body' }] });
  expect((await rest(apq, platform.as).post('/graphql/persisted-queries', { format: 'something-else' })).status).toBe(400);
  expect(await sql(apq, 'select key from persisted_query where query = ?', [query])).toEqual([]);

  const imported = await rest(apq, platform.as).post('/graphql/persisted-queries', { [hashOf(query)]: query });
  expect([imported.status, imported.body]).toEqual([200, { documents: 1, added: 1 }]);
  expect((await post(trusted, { query })).body.data).toEqual({ serviceInfo: { status: expect.any(String), version: expect.any(String) } });
});

test('npm run persisted:import loads a manifest file as trusted documents', async () => {
  const query = 'query Status { serviceInfo { status } }';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'manifest-'));
  const file = path.join(dir, 'manifest.json');
  fs.writeFileSync(file, JSON.stringify({ format: 'apollo-persisted-query-manifest', version: 1, operations: [{ id: hashOf(query), name: 'Status', type: 'query', body: query }] }));
  try {
    // The built script (`npm run persisted:import` builds first; the test run has built).
    const { stdout } = await promisify(execFile)('node', ['dist/src/scripts/persisted-import.js', file], {
      env: { ...process.env, DATABASE_URL: apq.databaseUrl, NODE_ENV: 'test', DATA_DIR: dir, LOG_LEVEL: 'silent', SECRET_ENCRYPTION_KEY: 'test-encryption-key-0123456789abcdef', JWT_SECRET: 'test-jwt-secret-0123456789abcdefghij' },
    });
    expect(stdout).toContain('1 trusted documents');
    expect((await getByHash(trusted, query)).body.data).toEqual({ serviceInfo: { status: expect.any(String) } });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('npm run persisted:import exits non-zero on a manifest it refuses', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'manifest-'));
  const file = path.join(dir, 'manifest.json');
  fs.writeFileSync(file, '{ not json');
  try {
    const run = promisify(execFile)('node', ['dist/src/scripts/persisted-import.js', file], {
      env: { ...process.env, DATABASE_URL: apq.databaseUrl, NODE_ENV: 'test', DATA_DIR: dir, LOG_LEVEL: 'silent', SECRET_ENCRYPTION_KEY: 'test-encryption-key-0123456789abcdef', JWT_SECRET: 'test-jwt-secret-0123456789abcdefghij' },
    });
    await expect(run).rejects.toMatchObject({ code: 1 });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
