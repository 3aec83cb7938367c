import { Webhook } from '../entities/webhook.js';
import { redactUrl } from '../src/services/webhooks/webhooks.js';
import type { Permission } from '../src/auth/permissions.js';
import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import { auditOf, sql, statementsOn } from './support/db.js';
import { buildOrg, buildUser, type BuiltUser } from './support/factories.js';

const SECRET = 'whsec-super-secret-value';
const HEADER_VALUE = 'Bearer header-credential-xyz';

/** Test DNS: names the tests use, nothing from the real resolver. */
const resolve = async (host: string): Promise<string[]> => {
  const table: Record<string, string[]> = {
    'hooks.example.com': ['93.184.216.34'],
    'internal.example.com': ['10.0.0.7'],
    'mixed.example.com': ['93.184.216.34', '127.0.0.1'],
    'metadata.example.com': ['169.254.169.254'],
    'v6private.example.com': ['fd00::5'],
  };
  const found = table[host];
  if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return found;
};
const testDns = { tunables: { webhooks: { resolve } } };

/** Webhooks are organization configuration: reading them takes organizations:read, changing them organizations:write. */
const WEBHOOK_EDITOR: Permission[] = ['organizations:read', 'organizations:write'];

let app: TestApp;
let orgA: string;
let orgB: string;
let partnerA: string;
let editorA: BuiltUser;
let editorANoMfa: BuiltUser;
let viewerA: BuiltUser;
let editorB: BuiltUser;
let partnerEditor: BuiltUser;
let systemEditor: BuiltUser;

beforeAll(async () => {
  app = await createTestApp({ start: testDns });
  const a = await buildOrg(app);
  const b = await buildOrg(app);
  orgA = a.id;
  orgB = b.id;
  partnerA = a.partnerId;
  editorA = await buildUser(app, { orgId: orgA, can: WEBHOOK_EDITOR });
  editorANoMfa = await buildUser(app, { orgId: orgA, can: WEBHOOK_EDITOR, mfa: false });
  viewerA = await buildUser(app, { orgId: orgA, role: 'Organization Viewer' });
  editorB = await buildUser(app, { orgId: orgB, can: WEBHOOK_EDITOR });
  partnerEditor = await buildUser(app, { partnerId: partnerA, can: WEBHOOK_EDITOR });
  systemEditor = await buildUser(app, { can: WEBHOOK_EDITOR });
});

afterAll(async () => {
  await app.stop();
});

const valid = (extra: Record<string, unknown> = {}) => ({
  name: 'Ops hook',
  url: 'https://hooks.example.com/in',
  events: ['device.offline', 'alert.triggered'],
  ...extra,
});

const audit = (resourceId: string) => auditOf(app, resourceId, ['action', 'changes', 'details', 'actor_type']);

describe('REST', () => {
  test('create, read, list, update and delete; secrets never come back; every change is audited', async () => {
    const api = rest(app, editorA.as);
    const created = await api.post('/webhooks', {
      name: 'Ops hook',
      url: 'https://alice:pa55w0rd@hooks.example.com/in?token=t0k3n&X-Amz-Signature=amzsig&sig=azsig&keep=1',
      secret: SECRET,
      events: ['device.offline', 'alert.triggered', 'device.offline'],
      headers: [{ key: 'Authorization', value: HEADER_VALUE }],
      retryPolicy: { maxRetries: 3 },
    });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      orgId: orgA,
      name: 'Ops hook',
      url: 'https://hooks.example.com/in?keep=1',
      hasSecret: true,
      events: ['device.offline', 'alert.triggered'],
      headers: [{ key: 'Authorization' }],
      status: 'active',
      retryPolicy: { maxRetries: 3, initialDelayMs: 1000, backoffMultiplier: 2, maxDelayMs: 300_000 },
      successCount: 0,
      failureCount: 0,
      lastDeliveryAt: null,
      lastSuccessAt: null,
      createdBy: editorA.user.id,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const id = created.body.id as string;

    // Encrypted at rest: the stored row holds none of the plaintexts.
    const [row] = await sql(app, 'select url, secret, headers::text as headers from webhook where id = ?', [id]);
    expect(JSON.stringify(row)).not.toMatch(/pa55w0rd|hooks\.example\.com|whsec|header-credential/);
    expect(app.server.runtime.secrets.decrypt(row.url)).toContain('alice:pa55w0rd@');

    const got = await api.get(`/webhooks/${id}`);
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id, hasSecret: true, deliveryStats: { total: 0, pending: 0, delivered: 0, failed: 0, retrying: 0, lastDeliveredAt: null } });

    const list = await api.get('/webhooks');
    expect(list.status).toBe(200);
    expect(list.body.pagination).toEqual({ page: 1, limit: 100, total: expect.any(Number) });
    expect(list.body.data.map((w: { id: string }) => w.id)).toContain(id);

    const paused = await api.patch(`/webhooks/${id}`, { status: 'paused', name: 'Renamed', secret: null });
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ status: 'paused', name: 'Renamed', hasSecret: false });
    const stored = await app.server.runtime.orm.em.fork().findOneOrFail(Webhook, { id });
    expect(stored.status).toBe('disabled');
    expect((await api.get('/webhooks?status=paused')).body.data.map((w: { id: string }) => w.id)).toEqual([id]);
    expect((await api.get('/webhooks?status=active')).body.data.map((w: { id: string }) => w.id)).not.toContain(id);
    expect((await api.patch(`/webhooks/${id}`, { status: 'failed' })).body.status).toBe('failed');
    expect((await app.server.runtime.orm.em.fork().findOneOrFail(Webhook, { id })).status).toBe('error');

    for (const response of [created, got, list, paused]) expect(JSON.stringify(response.body)).not.toMatch(/pa55w0rd|t0k3n|amzsig|azsig|whsec|header-credential/);

    expect((await api.delete(`/webhooks/${id}`)).status).toBe(204);
    expect((await api.get(`/webhooks/${id}`)).status).toBe(404);

    const entries = await audit(id);
    expect(entries.map((e) => [e.action, e.changes])).toEqual([
      ['webhook.create', ['name', 'url', 'events', 'secret', 'headers', 'retryPolicy']],
      ['webhook.update', ['name', 'secret', 'status']],
      ['webhook.update', ['status']],
      ['webhook.delete', []],
    ]);
    expect(JSON.stringify(entries)).not.toMatch(/whsec|header-credential|pa55w0rd/);
  });

  test('retryPolicy: bounded, merged with the defaults, reset with null', async () => {
    const api = rest(app, editorA.as);
    const bad = [
      { maxRetries: 21 },
      { maxRetries: -1 },
      { initialDelayMs: 99 },
      { initialDelayMs: 3_600_001 },
      { backoffMultiplier: 0.5 },
      { backoffMultiplier: 10.5 },
      { maxDelayMs: 86_400_001 },
      { initialDelayMs: 5000, maxDelayMs: 4000 },
      { initialDelayMs: 400_000 }, // above the default max delay
      { maxRetries: 2, extra: 1 },
    ];
    for (const retryPolicy of bad) {
      const response = await api.post('/webhooks', valid({ retryPolicy }));
      expect([JSON.stringify(retryPolicy), response.status, response.body.code]).toEqual([JSON.stringify(retryPolicy), 400, 'VALIDATION_ERROR']);
    }
    const edge = await api.post('/webhooks', valid({ retryPolicy: { maxRetries: 20, initialDelayMs: 100, backoffMultiplier: 10, maxDelayMs: 86_400_000 } }));
    expect(edge.status).toBe(201);
    // PATCH changes only the fields it names.
    expect((await api.patch(`/webhooks/${edge.body.id}`, { retryPolicy: { maxRetries: 0, maxDelayMs: 100 } })).body.retryPolicy).toEqual({
      maxRetries: 0,
      initialDelayMs: 100,
      backoffMultiplier: 10,
      maxDelayMs: 100,
    });
    expect((await api.patch(`/webhooks/${edge.body.id}`, { retryPolicy: { initialDelayMs: 200 } })).status).toBe(400);
    expect((await api.patch(`/webhooks/${edge.body.id}`, { retryPolicy: null })).body.retryPolicy).toEqual({
      maxRetries: 5,
      initialDelayMs: 1000,
      backoffMultiplier: 2,
      maxDelayMs: 300_000,
    });
  });

  test('validation: event catalog, name length, custom headers, unknown fields, empty patch', async () => {
    const api = rest(app, editorA.as);
    const cases: [string, Record<string, unknown>][] = [
      ['unknown event', valid({ events: ['device.offline', 'device.exploded'] })],
      ['no events', valid({ events: [] })],
      ['name too long', valid({ name: 'n'.repeat(256) })],
      ['empty name', valid({ name: '  ' })],
      ['secret empty', valid({ secret: '' })],
      ['header name with a space', valid({ headers: [{ key: 'X Bad', value: 'v' }] })],
      ['header name with a colon', valid({ headers: [{ key: 'X-Bad:', value: 'v' }] })],
      ['CR/LF in a value', valid({ headers: [{ key: 'X-Ok', value: 'a\r\nX-Injected: 1' }] })],
      ['LF in a value', valid({ headers: [{ key: 'X-Ok', value: 'a\nb' }] })],
      ['X-Service-Signature', valid({ headers: [{ key: 'X-Service-Signature', value: 'sha256=forged' }] })],
      ['x-service-anything', valid({ headers: [{ key: 'x-service-event-id', value: 'x' }] })],
      ['Content-Type', valid({ headers: [{ key: 'content-type', value: 'text/plain' }] })],
      ['User-Agent', valid({ headers: [{ key: 'User-Agent', value: 'evil' }] })],
      ['Host', valid({ headers: [{ key: 'Host', value: 'evil.example' }] })],
      ['Content-Length', valid({ headers: [{ key: 'Content-Length', value: '1' }] })],
      ['duplicate header', valid({ headers: [{ key: 'X-A', value: '1' }, { key: 'x-a', value: '2' }] })],
      ['too many headers', valid({ headers: Array.from({ length: 21 }, (_, i) => ({ key: `X-H${i}`, value: 'v' })) })],
      ['server-set field', valid({ status: 'active' })],
      ['unknown field', valid({ colour: 'red' })],
    ];
    for (const [what, body] of cases) {
      const response = await api.post('/webhooks', body);
      expect([what, response.status, response.body.code]).toEqual([what, 400, 'VALIDATION_ERROR']);
    }
    expect((await api.post('/webhooks', valid({ name: 'n'.repeat(255) }))).status).toBe(201);
    const id = (await api.post('/webhooks', valid({ headers: [{ key: 'X-Tenant', value: 'a' }] }))).body.id;
    expect((await api.patch(`/webhooks/${id}`, {})).body).toMatchObject({ code: 'VALIDATION_ERROR', message: 'Provide at least one field to change' });
    expect((await api.patch(`/webhooks/${id}`, { events: ['nope'] })).status).toBe(400);
    expect((await api.patch(`/webhooks/${id}`, { status: 'disabled' })).status).toBe(400);
    expect((await api.patch(`/webhooks/${id}`, { headers: [{ key: 'Host', value: 'x' }] })).status).toBe(400);
    expect((await api.patch(`/webhooks/${id}`, { headers: [] })).body.headers).toEqual([]);
  });

  test('organization scoping: partner and system callers name the organization; it is checked', async () => {
    for (const caller of [partnerEditor, systemEditor]) {
      const api = rest(app, caller.as);
      expect((await api.post('/webhooks', valid())).body).toEqual({ code: 'VALIDATION_ERROR', message: 'Organization context required' });
      expect((await api.get('/webhooks')).body).toEqual({ code: 'VALIDATION_ERROR', message: 'Organization context required' });
      expect((await api.get('/webhooks/dead-letters')).body).toEqual({ code: 'VALIDATION_ERROR', message: 'Organization context required' });
      const created = await api.post('/webhooks', valid({ orgId: orgA }));
      expect(created.status).toBe(201);
      expect(created.body.orgId).toBe(orgA);
      expect((await api.get(`/webhooks?orgId=${orgA}`)).body.data.map((w: { id: string }) => w.id)).toContain(created.body.id);
    }
    // Org B belongs to another partner.
    expect((await rest(app, partnerEditor.as).post('/webhooks', valid({ orgId: orgB }))).status).toBe(404);
    expect((await rest(app, partnerEditor.as).get(`/webhooks?orgId=${orgB}`)).status).toBe(404);
    expect((await rest(app, systemEditor.as).post('/webhooks', valid({ orgId: orgB }))).status).toBe(201);
    // An organization caller acts on its own organization; naming another is 404.
    expect((await rest(app, editorA.as).post('/webhooks', valid({ orgId: orgB }))).status).toBe(404);
    expect((await rest(app, editorA.as).post('/webhooks', valid({ orgId: orgA }))).status).toBe(201);
  });

  test("another organization's webhook is invisible: 404 everywhere, absent from lists", async () => {
    const mine = (await rest(app, editorA.as).post('/webhooks', valid())).body.id as string;
    const theirs = rest(app, editorB.as);
    for (const response of [
      await theirs.get(`/webhooks/${mine}`),
      await theirs.patch(`/webhooks/${mine}`, { name: 'taken' }),
      await theirs.delete(`/webhooks/${mine}`),
      await theirs.get(`/webhooks/${mine}/deliveries`),
      await theirs.post(`/webhooks/${mine}/test`, {}),
      await theirs.post(`/webhooks/${mine}/retry/${mine}`, {}),
    ]) {
      expect(response.status).toBe(404);
      expect(response.body).toEqual({ code: 'NOT_FOUND', message: 'Webhook not found' });
    }
    expect((await theirs.get('/webhooks')).body.data.map((w: { id: string }) => w.id)).not.toContain(mine);
    expect((await theirs.get(`/webhooks?orgId=${orgA}`)).status).toBe(404);
    expect((await rest(app, editorA.as).get(`/webhooks/${mine}`)).status).toBe(200);
    expect((await rest(app, editorA.as).get('/webhooks/not-a-uuid')).status).toBe(404);
  });

  test('writes need organizations:write and a second factor; reads do not', async () => {
    const id = (await rest(app, editorA.as).post('/webhooks', valid())).body.id as string;
    const noMfa = rest(app, editorANoMfa.as);
    for (const response of [
      await noMfa.post('/webhooks', valid()),
      await noMfa.patch(`/webhooks/${id}`, { name: 'x' }),
      await noMfa.delete(`/webhooks/${id}`),
      await noMfa.post(`/webhooks/${id}/test`, {}),
      await noMfa.post(`/webhooks/${id}/retry/${id}`, {}),
    ]) {
      expect(response.status).toBe(403);
      expect(response.body.code).toBe('MFA_REQUIRED');
    }
    expect((await noMfa.get(`/webhooks/${id}`)).status).toBe(200);
    expect((await noMfa.get('/webhooks')).status).toBe(200);

    const viewer = rest(app, viewerA.as);
    expect((await viewer.get(`/webhooks/${id}`)).status).toBe(200);
    expect((await viewer.post('/webhooks', valid())).body.code).toBe('FORBIDDEN');
    expect((await viewer.patch(`/webhooks/${id}`, { name: 'x' })).body.code).toBe('FORBIDDEN');
    expect((await rest(app, null).get('/webhooks')).status).toBe(401);
  });

  test('a token in the URL path is shown only to callers who may edit the webhook; readers see the origin', async () => {
    const url = 'https://alice:pa55w0rd@hooks.example.com:8443/services/T000/B000/XXXXSECRET?token=t0k3n&keep=1';
    const editorView = 'https://hooks.example.com:8443/services/T000/B000/XXXXSECRET?keep=1';
    const editor = rest(app, editorA.as);
    const created = await editor.post('/webhooks', valid({ url }));
    expect(created.body.url).toBe(editorView);
    const id = created.body.id as string;
    expect((await editor.patch(`/webhooks/${id}`, { url })).body.url).toBe(editorView);
    expect((await editor.get(`/webhooks/${id}`)).body.url).toBe(editorView);

    const viewer = rest(app, viewerA.as);
    const got = await viewer.get(`/webhooks/${id}`);
    const list = await viewer.get('/webhooks');
    expect(got.body.url).toBe('https://hooks.example.com:8443');
    expect(list.body.data.find((w: { id: string }) => w.id === id).url).toBe('https://hooks.example.com:8443');
    const graphql = await gql(app, viewerA.as, `query($id: ID!) { webhook(id: $id) { url } webhooks { data { id url } } }`, { id });
    expect(graphql.body.data.webhook.url).toBe('https://hooks.example.com:8443');
    expect(graphql.body.data.webhooks.data.find((w: { id: string }) => w.id === id).url).toBe('https://hooks.example.com:8443');
    for (const response of [got, list, graphql]) expect(JSON.stringify(response.body)).not.toMatch(/XXXXSECRET|services\/T000|pa55w0rd|t0k3n/);

    const editorGraphql = await gql(app, editorA.as, `query($id: ID!) { webhook(id: $id) { url } }`, { id });
    expect(editorGraphql.body.data.webhook.url).toBe(editorView);
  });
});

describe('GraphQL', () => {
  const FIELDS = 'id orgId name url hasSecret events headers { key } status retryPolicy { maxRetries initialDelayMs backoffMultiplier maxDelayMs } lastDeliveryAt';

  test('create, query, update and delete', async () => {
    const created = await gql(app, editorA.as, `mutation($input: CreateWebhookInput!) { createWebhook(input: $input) { ${FIELDS} } }`, {
      input: {
        name: 'GraphQL hook',
        url: 'https://bob:hunter2@hooks.example.com/gql?api_key=k3y',
        secret: SECRET,
        events: ['script.completed'],
        headers: [{ key: 'X-Tenant', value: HEADER_VALUE }],
        retryPolicy: { backoffMultiplier: 1.5 },
      },
    });
    expect(created.body.errors).toBeUndefined();
    const webhook = created.body.data.createWebhook;
    expect(webhook).toEqual({
      id: expect.any(String),
      orgId: orgA,
      name: 'GraphQL hook',
      url: 'https://hooks.example.com/gql',
      hasSecret: true,
      events: ['script.completed'],
      headers: [{ key: 'X-Tenant' }],
      status: 'active',
      retryPolicy: { maxRetries: 5, initialDelayMs: 1000, backoffMultiplier: 1.5, maxDelayMs: 300_000 },
      lastDeliveryAt: null,
    });

    const read = await gql(
      app,
      editorA.as,
      `query($id: ID!) { webhook(id: $id) { id deliveryStats { total pending delivered failed retrying lastDeliveredAt } deliveries(first: 5) { totalCount edges { cursor } pageInfo { hasNextPage endCursor } } } webhooks(status: active) { data { id } pagination { total } } }`,
      { id: webhook.id },
    );
    expect(read.body.errors).toBeUndefined();
    expect(read.body.data.webhook).toEqual({
      id: webhook.id,
      deliveryStats: { total: 0, pending: 0, delivered: 0, failed: 0, retrying: 0, lastDeliveredAt: null },
      deliveries: { totalCount: 0, edges: [], pageInfo: { hasNextPage: false, endCursor: null } },
    });
    expect(read.body.data.webhooks.data.map((w: { id: string }) => w.id)).toContain(webhook.id);

    const updated = await gql(app, editorA.as, `mutation($id: ID!, $input: UpdateWebhookInput!) { updateWebhook(id: $id, input: $input) { status hasSecret name } }`, {
      id: webhook.id,
      input: { status: 'paused', secret: null, name: 'Paused hook' },
    });
    expect(updated.body.data.updateWebhook).toEqual({ status: 'paused', hasSecret: false, name: 'Paused hook' });
    expect(JSON.stringify([created.body, read.body, updated.body])).not.toMatch(/hunter2|k3y|whsec|header-credential/);

    const deleted = await gql(app, editorA.as, `mutation($id: ID!) { deleteWebhook(id: $id) }`, { id: webhook.id });
    expect(deleted.body.data).toEqual({ deleteWebhook: true });
    const gone = await gql(app, editorA.as, `query($id: ID!) { webhook(id: $id) { id } }`, { id: webhook.id });
    expect(gone.body.errors?.[0]).toMatchObject({ message: 'Webhook not found', extensions: { code: 'NOT_FOUND' } });
  });

  test("a list's delivery statistics and deliveries are read in a few statements, however many webhooks", async () => {
    const org = await buildOrg(app);
    const editor = await buildUser(app, { orgId: org.id, can: WEBHOOK_EDITOR });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++) {
      const created = await rest(app, editor.as).post('/webhooks', valid({ name: `Stats hook ${i}` }));
      expect(created.status).toBe(201);
      ids.push(created.body.id);
    }
    // Webhook i has i delivered deliveries and one failed.
    for (const [i, id] of ids.entries()) {
      for (let n = 0; n <= i; n++) {
        await sql(
          app,
          `insert into webhook_delivery (id, webhook_id, org_id, status, event, event_id, payload, created_at, delivered_at)
           values (gen_random_uuid(), ?, ?, ?, 'device.offline', gen_random_uuid()::text, '{}', now(), case when ? then now() end)`,
          [id, org.id, n < i ? 'delivered' : 'failed', n < i],
        );
      }
    }
    const { result: listed, statements } = await statementsOn(app, 'webhook_delivery', () =>
      gql(app, editor.as, `{ webhooks(limit: 10) { data { id deliveryStats { total delivered failed lastDeliveredAt } } } }`),
    );
    expect(listed.body.errors).toBeUndefined();
    const byId = new Map(listed.body.data.webhooks.data.map((w: { id: string; deliveryStats: unknown }) => [w.id, w.deliveryStats]));
    for (const [i, id] of ids.entries()) {
      expect(byId.get(id)).toEqual({ total: i + 1, delivered: i, failed: 1, lastDeliveredAt: i > 0 ? expect.any(String) : null });
    }
    expect(statements).toBe(1);

    // Each webhook's own newest delivered delivery, and whether it has more: ranked ids, rows and totals, three statements for the list.
    const { result: paged, statements: pageStatements } = await statementsOn(app, 'webhook_delivery', () =>
      gql(app, editor.as, `{ webhooks(limit: 10) { data { id deliveries(first: 1, status: delivered) { totalCount edges { node { webhookId status } } pageInfo { hasNextPage } } } } }`),
    );
    expect(paged.body.errors).toBeUndefined();
    expect(pageStatements).toBe(3);
    const pages = new Map(paged.body.data.webhooks.data.map((w: { id: string; deliveries: unknown }) => [w.id, w.deliveries]));
    for (const [i, id] of ids.entries()) {
      expect(pages.get(id)).toEqual({
        totalCount: i,
        edges: i === 0 ? [] : [{ node: { webhookId: id, status: 'delivered' } }],
        pageInfo: { hasNextPage: i > 1 },
      });
    }
  });

  test('errors: validation, scoping, tenancy and MFA in extensions.code', async () => {
    const mutation = `mutation($input: CreateWebhookInput!) { createWebhook(input: $input) { id } }`;
    const bad = await gql(app, editorA.as, mutation, { input: valid({ events: ['nope'] }) });
    expect(bad.body.errors?.[0].extensions?.code).toBe('VALIDATION_ERROR');
    const noOrg = await gql(app, partnerEditor.as, mutation, { input: valid() });
    expect(noOrg.body.errors?.[0]).toMatchObject({ message: 'Organization context required', extensions: { code: 'VALIDATION_ERROR' } });
    const listNoOrg = await gql(app, systemEditor.as, `{ webhooks { data { id } } }`);
    expect(listNoOrg.body.errors?.[0].message).toBe('Organization context required');
    const noMfa = await gql(app, editorANoMfa.as, mutation, { input: valid() });
    expect(noMfa.body.errors?.[0].extensions?.code).toBe('MFA_REQUIRED');

    const mine = (await gql(app, editorA.as, mutation, { input: valid() })).body.data.createWebhook.id;
    const theirs = await gql(app, editorB.as, `query($id: ID!) { webhook(id: $id) { id } }`, { id: mine });
    expect(theirs.body.errors?.[0]).toMatchObject({ message: 'Webhook not found', extensions: { code: 'NOT_FOUND' } });
    const theirList = await gql(app, editorB.as, `{ webhooks { data { id } } }`);
    expect(theirList.body.data.webhooks.data.map((w: { id: string }) => w.id)).not.toContain(mine);
    const theirUpdate = await gql(app, editorB.as, `mutation($id: ID!) { updateWebhook(id: $id, input: { name: "x" }) { id } }`, { id: mine });
    expect(theirUpdate.body.errors?.[0].extensions?.code).toBe('NOT_FOUND');
  });
});

describe('SSRF: destination URLs with private targets refused (the default)', () => {
  let strict: TestApp;
  let editor: BuiltUser;

  beforeAll(async () => {
    strict = await createTestApp({ start: testDns });
    editor = await buildUser(strict, { orgId: (await buildOrg(strict)).id, can: WEBHOOK_EDITOR });
  });
  afterAll(async () => {
    await strict.stop();
  });

  const refused = [
    'http://hooks.example.com/in',
    'ftp://hooks.example.com/in',
    'not a url',
    'https://localhost/in',
    'https://LOCALHOST./in',
    'https://api.localhost/in',
    'https://printer.local/in',
    'https://127.0.0.1/in',
    'https://127.1/in',
    'https://2130706433/in',
    'https://0x7f000001/in',
    'https://0.0.0.0/in',
    'https://10.1.2.3/in',
    'https://172.16.0.1/in',
    'https://192.168.1.10/in',
    'https://169.254.169.254/latest/meta-data/',
    'https://100.64.0.1/in',
    'https://192.0.2.10/in',
    'https://198.51.100.7/in',
    'https://203.0.113.9/in',
    'https://[::1]/in',
    'https://[fe80::1]/in',
    'https://[fc00::1]/in',
    'https://[fd12:3456::1]/in',
    'https://[::ffff:127.0.0.1]/in',
    'https://[::ffff:a9fe:a9fe]/in',
    'https://[64:ff9b::10.0.0.1]/in',
    'https://[::ffff:0:7f00:1]/in',
    'https://[2001:db8::1]/in',
    'https://internal.example.com/in',
    'https://mixed.example.com/in',
    'https://metadata.example.com/in',
    'https://v6private.example.com/in',
    'https://does-not-resolve.example.com/in',
  ];

  test.each(refused)('%s → 400 Invalid webhook URL (create and update)', async (url) => {
    const api = rest(strict, editor.as);
    expect((await api.post('/webhooks', valid({ url }))).body).toEqual({ code: 'VALIDATION_ERROR', message: 'Invalid webhook URL' });
    const id = (await api.post('/webhooks', valid())).body.id as string;
    expect((await api.patch(`/webhooks/${id}`, { url })).body).toEqual({ code: 'VALIDATION_ERROR', message: 'Invalid webhook URL' });
  });

  test('a public HTTPS destination is accepted; GraphQL refuses a private one the same way', async () => {
    expect((await rest(strict, editor.as).post('/webhooks', valid({ url: 'https://hooks.example.com:8443/in' }))).status).toBe(201);
    expect((await rest(strict, editor.as).post('/webhooks', valid({ url: 'https://93.184.216.34/in' }))).status).toBe(201);
    const response = await gql(strict, editor.as, `mutation($input: CreateWebhookInput!) { createWebhook(input: $input) { id } }`, {
      input: valid({ url: 'https://10.0.0.1/in' }),
    });
    expect(response.body.errors?.[0]).toMatchObject({ message: 'Invalid webhook URL', extensions: { code: 'VALIDATION_ERROR' } });
  });
});

test('redactUrl drops credentials and signed query parameters, keeps the rest', () => {
  expect(redactUrl('https://u:p@h.example/p?token=1&Signature=2&x-amz-credential=3&X-Amz-Security-Token=4&se=5&sp=6&sv=7&sr=8&sig=9&apikey=a&api_key=b&access_token=c&key=d&page=2')).toBe(
    'https://h.example/p?page=2',
  );
  expect(redactUrl('https://h.example:8443/p')).toBe('https://h.example:8443/p');
});
