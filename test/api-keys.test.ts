import { hashApiKey } from '../src/auth/api-key-format.js';
import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import { sql } from './support/db.js';
import type { Permission } from '../src/auth/permissions.js';
import { buildOrg, buildUser } from './support/factories.js';

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => {
  await app.stop();
});

const KEY_FORMAT = /^rmm_[A-Za-z0-9]{12}_[A-Za-z0-9_-]{32,}$/;
const inAnHour = () => new Date(Date.now() + 3600_000).toISOString();

/** What creating a key with createKey's default scopes and managing one's own keys takes. */
const KEY_USER: Permission[] = ['api_keys:read', 'api_keys:write', 'audit:read'];

/** A member of a new organization holding exactly `can`. */
async function orgMember(can: Permission[] = KEY_USER) {
  const org = await buildOrg(app);
  return { org, owner: await buildUser(app, { orgId: org.id, can }) };
}

async function createKey(as: { token: string }, body: Record<string, unknown> = {}) {
  const res = await rest(app, as).post('/api-keys', { name: 'ci', scopes: ['audit:read', 'api_keys:read'], ...body });
  expect(res.status).toBe(201);
  return res.body as { id: string; key: string; prefix: string };
}

describe('creating and using a key', () => {
  test('GET /users/me answers alike in front of Express (no query string) and through it (a query string): token, key, none, revoked key', async () => {
    const { owner } = await orgMember([...KEY_USER, 'api_keys:delete']);
    const created = await createKey(owner.as);
    const both = async (as: Parameters<typeof rest>[1]) => {
      const [hot, routed] = await Promise.all([rest(app, as).get('/users/me'), rest(app, as).get('/users/me?via=express')]);
      expect([routed.status, routed.body]).toEqual([hot.status, hot.body]);
      return hot;
    };
    expect((await both(owner.as)).body).toMatchObject({ email: owner.user.email });
    expect((await both({ apiKey: created.key })).body).toMatchObject({ email: owner.user.email });
    expect((await both(null)).body).toEqual({ code: 'UNAUTHENTICATED', message: expect.any(String) });
    expect((await rest(app, owner.as).delete(`/api-keys/${created.id}`)).status).toBe(204);
    expect((await both({ apiKey: created.key })).status).toBe(401);
  });

  test('the full key is answered once; only its prefix and hash are kept, and it works as X-API-Key on REST and GraphQL', async () => {
    const { org, owner } = await orgMember();
    const api = rest(app, owner.as);
    const created = await api.post('/api-keys', { name: 'backup script', scopes: ['audit:read', 'api_keys:read'], expiresAt: inAnHour() });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      name: 'backup script',
      prefix: expect.stringMatching(/^[A-Za-z0-9]{12}$/),
      scopes: ['audit:read', 'api_keys:read'],
      userId: owner.user.id,
      orgId: org.id,
      partnerId: org.partnerId,
      expiresAt: expect.any(String),
      lastUsedAt: null,
      revokedAt: null,
      createdAt: expect.any(String),
      status: 'active',
      key: expect.stringMatching(KEY_FORMAT),
    });
    const { id, key, prefix } = created.body;
    expect(key.startsWith(`rmm_${prefix}_`)).toBe(true);

    const [row] = await sql(app, 'select key_hash, prefix from api_key where id = ?', [id]);
    expect(row).toEqual({ key_hash: hashApiKey(key), prefix });

    const shown = await api.get(`/api-keys/${id}`);
    const listed = await api.get('/api-keys');
    const byGraphql = await gql(app, owner.as, '{ apiKeys { data { id prefix status } } }');
    for (const res of [shown, listed, byGraphql]) {
      expect(res.status).toBe(200);
      const text = JSON.stringify(res.body);
      expect(text).not.toContain(key);
      expect(text).not.toContain(row.key_hash);
      expect(text).not.toContain('keyHash');
    }
    expect(shown.body).not.toHaveProperty('key');
    expect(listed.body.data.map((k: any) => k.id)).toContain(id);

    const viaKey = await rest(app, { apiKey: key }).get(`/api-keys/${id}`);
    expect(viaKey.status).toBe(200);
    expect(viaKey.body).toMatchObject({ id, status: 'active' });
    expect(viaKey.body.lastUsedAt).not.toBeNull();

    const gqlViaKey = await gql(app, { apiKey: key }, 'query($id: ID!) { apiKey(id: $id) { id name scopes } }', { id });
    expect(gqlViaKey.body.errors).toBeUndefined();
    expect(gqlViaKey.body.data.apiKey).toEqual({ id, name: 'backup script', scopes: ['audit:read', 'api_keys:read'] });

    const audit = await rest(app, { apiKey: key }).get(`/audit?action=api_key.create&resourceId=${id}`);
    expect(audit.status).toBe(200);
    expect(audit.body.data).toEqual([expect.objectContaining({ action: 'api_key.create', actorId: owner.user.id, orgId: org.id })]);
    expect(JSON.stringify(audit.body)).not.toContain(key);
  });

  test('GraphQL createApiKey answers the key once and it authenticates', async () => {
    const { owner } = await orgMember(['api_keys:read', 'api_keys:write']);
    const res = await gql(app, owner.as, 'mutation { createApiKey(input: { name: "gql", scopes: ["api_keys:read"] }) { id key status scopes } }');
    expect(res.body.errors).toBeUndefined();
    const created = res.body.data.createApiKey;
    expect(created).toMatchObject({ status: 'active', scopes: ['api_keys:read'], key: expect.stringMatching(KEY_FORMAT) });
    const viaKey = await gql(app, { apiKey: created.key }, '{ apiKeys { data { id } pagination { total } } }');
    expect(viaKey.body.data.apiKeys.data.map((k: any) => k.id)).toContain(created.id);
  });

  test('an unknown key, a malformed key and a key with a wrong secret are 401', async () => {
    const { owner } = await orgMember();
    const { key, prefix } = await createKey(owner.as);
    for (const bad of ['rmm_nope', `rmm_${prefix}_${'x'.repeat(43)}`, key.slice(0, -1) + (key.endsWith('A') ? 'B' : 'A')]) {
      const res = await rest(app, { apiKey: bad }).get('/api-keys');
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ code: 'UNAUTHENTICATED', message: 'Invalid or expired API key' });
    }
  });
});

describe('scopes', () => {
  test('a key can do only what its scopes allow', async () => {
    // The owner may do both things the key is refused: the refusal comes from the key's scopes.
    const { owner } = await orgMember(['api_keys:write', 'organizations:read', 'audit:read']);
    const { key } = await createKey(owner.as, { scopes: ['organizations:read'] });
    const asKey = rest(app, { apiKey: key });
    const write = await asKey.post('/api-keys', { name: 'escalate', scopes: ['organizations:read'] });
    expect(write.status).toBe(403);
    expect(write.body.code).toBe('FORBIDDEN');
    expect((await asKey.get('/audit')).status).toBe(403);
    const gqlRead = await gql(app, { apiKey: key }, '{ auditLogs { data { id } } }');
    expect(gqlRead.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });

  test('scopes are re-checked on every use: shrinking the owner’s role takes access away from the key', async () => {
    const { owner } = await orgMember(['api_keys:write', 'audit:read']);
    const { key } = await createKey(owner.as, { scopes: ['audit:read'] });
    expect((await rest(app, { apiKey: key }).get('/audit')).status).toBe(200);

    await sql(app, `update role set permissions = '["api_keys:write"]' where id = ?`, [owner.membership.roleId]);
    const res = await rest(app, { apiKey: key }).get('/audit');
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('FORBIDDEN');
  });

  test('scopes beyond the creator’s permissions are refused with 403 naming them; unknown scopes with 400', async () => {
    const { owner: creator } = await orgMember(['api_keys:write', 'devices:read']);
    const api = rest(app, creator.as);

    const beyond = await api.post('/api-keys', { name: 'x', scopes: ['devices:read', 'devices:write', 'audit:*'] });
    expect(beyond.status).toBe(403);
    expect(beyond.body).toEqual({ code: 'FORBIDDEN', message: 'Scopes exceed your permissions: devices:write, audit:*' });

    const unknown = await api.post('/api-keys', { name: 'x', scopes: ['devices:read', 'spaceships:fly'] });
    expect(unknown.status).toBe(400);
    expect(unknown.body).toMatchObject({ code: 'VALIDATION_ERROR', message: 'Unknown scopes: spaceships:fly' });

    const ok = await createKey(creator.as, { scopes: ['devices:read'] });
    const widen = await api.patch(`/api-keys/${ok.id}`, { scopes: ['devices:*'] });
    expect(widen.status).toBe(403);
    expect(widen.body.message).toBe('Scopes exceed your permissions: devices:*');
    expect((await sql(app, 'select scopes from api_key where id = ?', [ok.id]))[0].scopes).toEqual(['devices:read']);
  });

  test('PATCH renames, rescopes and re-dates a key; unknown fields and past dates are refused', async () => {
    const { owner } = await orgMember();
    const { id } = await createKey(owner.as);
    const api = rest(app, owner.as);
    const later = inAnHour();
    const res = await api.patch(`/api-keys/${id}`, { name: 'renamed', scopes: ['audit:read'], expiresAt: later });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id, name: 'renamed', scopes: ['audit:read'], expiresAt: new Date(later).toISOString(), status: 'active' });
    expect((await api.patch(`/api-keys/${id}`, { expiresAt: null })).body.expiresAt).toBeNull();
    expect((await api.patch(`/api-keys/${id}`, { keyHash: 'x' })).status).toBe(400);
    const past = await api.patch(`/api-keys/${id}`, { expiresAt: '2020-01-01T00:00:00Z' });
    expect(past.status).toBe(400);
    expect(past.body.message).toBe('expiresAt: must be in the future');
  });
});

describe('revoking, rotating and expiry', () => {
  test('DELETE revokes: 204, the key stops working at once, and the key shows as revoked', async () => {
    const { owner } = await orgMember([...KEY_USER, 'api_keys:delete']);
    const { id, key } = await createKey(owner.as);
    expect((await rest(app, { apiKey: key }).get('/api-keys')).status).toBe(200);
    const res = await rest(app, owner.as).delete(`/api-keys/${id}`);
    expect(res.status).toBe(204);
    expect((await rest(app, { apiKey: key }).get('/api-keys')).status).toBe(401);
    expect((await gql(app, { apiKey: key }, '{ apiKeys { data { id } } }')).body.errors?.[0]?.extensions?.code).toBe('UNAUTHENTICATED');
    const shown = await rest(app, owner.as).get(`/api-keys/${id}`);
    expect(shown.body).toMatchObject({ status: 'revoked', revokedAt: expect.any(String) });
    expect((await rest(app, owner.as).patch(`/api-keys/${id}`, { name: 'again' })).status).toBe(409);
    expect((await rest(app, owner.as).post(`/api-keys/${id}/rotate`)).status).toBe(409);
    const revokedList = await rest(app, owner.as).get('/api-keys?status=revoked');
    expect(revokedList.body.data.map((k: any) => k.id)).toEqual([id]);
  });

  test('rotate answers new material for the same key once; the old key stops working at once', async () => {
    const { owner } = await orgMember(['api_keys:read', 'api_keys:write', 'api_keys:delete']);
    const old = await createKey(owner.as, { name: 'rotating', scopes: ['api_keys:read'] });
    const res = await rest(app, owner.as).post(`/api-keys/${old.id}/rotate`);
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ id: old.id, name: 'rotating', scopes: ['api_keys:read'], status: 'active', key: expect.stringMatching(KEY_FORMAT) });
    expect(res.body.prefix).not.toBe(old.prefix);
    expect(res.body.key).not.toBe(old.key);
    expect((await rest(app, { apiKey: old.key }).get('/api-keys')).status).toBe(401);
    expect((await rest(app, { apiKey: res.body.key }).get(`/api-keys/${old.id}`)).status).toBe(200);
    expect((await rest(app, owner.as).get(`/api-keys/${old.id}`)).body).not.toHaveProperty('key');

    const again = await gql(app, owner.as, 'mutation($id: ID!) { rotateApiKey(id: $id) { id key } }', { id: old.id });
    expect(again.body.data.rotateApiKey.id).toBe(old.id);
    expect((await rest(app, { apiKey: res.body.key }).get('/api-keys')).status).toBe(401);
    expect((await rest(app, { apiKey: again.body.data.rotateApiKey.key }).get('/api-keys')).status).toBe(200);
    const revoked = await gql(app, owner.as, 'mutation($id: ID!) { revokeApiKey(id: $id) { status } }', { id: old.id });
    expect(revoked.body.data.revokeApiKey.status).toBe('revoked');
    expect((await rest(app, { apiKey: again.body.data.rotateApiKey.key }).get('/api-keys')).status).toBe(401);
  });

  test('an expired key is 401; creating one with a past expiry is 400', async () => {
    const { owner } = await orgMember();
    const { id, key } = await createKey(owner.as, { expiresAt: inAnHour() });
    expect((await rest(app, { apiKey: key }).get('/api-keys')).status).toBe(200);
    await sql(app, `update api_key set expires_at = now() - interval '1 second' where id = ?`, [id]);
    const res = await rest(app, { apiKey: key }).get('/api-keys');
    expect(res.status).toBe(401);
    expect((await rest(app, owner.as).get(`/api-keys/${id}`)).body.status).toBe('expired');

    const past = await rest(app, owner.as).post('/api-keys', { name: 'old', scopes: ['audit:read'], expiresAt: new Date(Date.now() - 1000).toISOString() });
    expect(past.status).toBe(400);
    expect(past.body.code).toBe('VALIDATION_ERROR');
  });

  test('a request made with an API key cannot lift that key’s expiry, nor create or re-date a key to outlive it', async () => {
    const { owner } = await orgMember();
    const own = await createKey(owner.as, { scopes: ['api_keys:read', 'api_keys:write'], expiresAt: inAnHour() });
    const limit = (await rest(app, owner.as).get(`/api-keys/${own.id}`)).body.expiresAt as string;
    const message = `A request made with an API key cannot set an expiry later than that key's own: expiresAt must be at most ${limit}`;
    const asKey = rest(app, { apiKey: own.key });
    const later = new Date(Date.parse(limit) + 60_000).toISOString();
    const sooner = new Date(Date.parse(limit) - 60_000).toISOString();

    for (const res of [
      await asKey.patch(`/api-keys/${own.id}`, { expiresAt: later }),
      await asKey.patch(`/api-keys/${own.id}`, { expiresAt: null }),
      await asKey.post('/api-keys', { name: 'forever', scopes: ['api_keys:read'] }),
      await asKey.post('/api-keys', { name: 'successor', scopes: ['api_keys:read'], expiresAt: later }),
    ]) {
      expect([res.status, res.body]).toEqual([403, { code: 'FORBIDDEN', message }]);
    }
    const viaGql = await gql(app, { apiKey: own.key }, 'mutation($id: ID!) { updateApiKey(id: $id, input: { expiresAt: null }) { expiresAt } }', { id: own.id });
    expect(viaGql.body.errors?.[0]).toMatchObject({ message, extensions: { code: 'FORBIDDEN' } });
    expect((await rest(app, owner.as).get(`/api-keys/${own.id}`)).body.expiresAt).toBe(limit);
    // Scopes were already bounded by what the key itself holds.
    expect((await asKey.post('/api-keys', { name: 'wider', scopes: ['audit:read'], expiresAt: sooner })).body).toEqual({
      code: 'FORBIDDEN',
      message: 'Scopes exceed your permissions: audit:read',
    });

    // Within its own lifetime the key may still work: rename, shorten, create a shorter-lived key...
    expect((await asKey.patch(`/api-keys/${own.id}`, { name: 'renamed' })).status).toBe(200);
    const child = await asKey.post('/api-keys', { name: 'child', scopes: ['api_keys:read'], expiresAt: sooner });
    expect(child.status).toBe(201);
    // ...but not stretch that key beyond its own expiry either.
    expect((await asKey.patch(`/api-keys/${child.body.id}`, { expiresAt: null })).body).toEqual({ code: 'FORBIDDEN', message });
    expect((await asKey.patch(`/api-keys/${own.id}`, { expiresAt: sooner })).body.expiresAt).toBe(sooner);
    // The owner's own session is not bound by a key's lifetime.
    expect((await rest(app, owner.as).patch(`/api-keys/${own.id}`, { expiresAt: null })).body.expiresAt).toBeNull();
  });
});

describe('access', () => {
  test('writes need a session with MFA', async () => {
    const org = await buildOrg(app);
    const withMfa = await buildUser(app, { orgId: org.id, can: KEY_USER });
    const { id } = await createKey(withMfa.as);
    const noMfa = await buildUser(app, { orgId: org.id, can: ['api_keys:write', 'api_keys:delete'], mfa: false });
    const api = rest(app, noMfa.as);
    for (const res of [
      await api.post('/api-keys', { name: 'x', scopes: ['audit:read'] }),
      await api.patch(`/api-keys/${id}`, { name: 'y' }),
      await api.post(`/api-keys/${id}/rotate`),
      await api.delete(`/api-keys/${id}`),
    ]) {
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('MFA_REQUIRED');
    }
    const viaGql = await gql(app, noMfa.as, 'mutation { createApiKey(input: { name: "x", scopes: ["audit:read"] }) { id } }');
    expect(viaGql.body.errors?.[0]?.extensions?.code).toBe('MFA_REQUIRED');
    expect((await api.get('/api-keys')).status).toBe(200);
  });

  test('holders of api_keys permissions see and manage their organization’s keys; another organization’s keys are 404', async () => {
    const { org: orgA, owner: managerA } = await orgMember(['api_keys:read', 'api_keys:write', 'api_keys:delete']);
    const { owner: memberB } = await orgMember();
    const colleague = await buildUser(app, { orgId: orgA.id, can: KEY_USER });
    const technician = await buildUser(app, { orgId: orgA.id, role: 'Organization Technician' });
    const keyB = await createKey(memberB.as);
    const colleagueKey = await createKey(colleague.as);

    const apiA = rest(app, managerA.as);
    expect((await apiA.get(`/api-keys/${keyB.id}`)).status).toBe(404);
    expect((await apiA.patch(`/api-keys/${keyB.id}`, { name: 'mine' })).status).toBe(404);
    expect((await apiA.post(`/api-keys/${keyB.id}/rotate`)).status).toBe(404);
    const revoke = await apiA.delete(`/api-keys/${keyB.id}`);
    expect(revoke.status).toBe(404);
    expect(revoke.body).toEqual({ code: 'NOT_FOUND', message: 'API key not found' });
    expect((await rest(app, { apiKey: keyB.key }).get('/api-keys')).status).toBe(200);
    const gqlB = await gql(app, managerA.as, 'query($id: ID!) { apiKey(id: $id) { id } }', { id: keyB.id });
    expect(gqlB.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');

    const listA = await apiA.get('/api-keys');
    expect(listA.body.data.map((k: any) => k.id)).toContain(colleagueKey.id);
    expect(listA.body.data.map((k: any) => k.id)).not.toContain(keyB.id);
    expect((await apiA.get(`/api-keys?userId=${colleague.user.id}`)).body.data.map((k: any) => k.id)).toEqual([colleagueKey.id]);
    const rotate = await apiA.post(`/api-keys/${colleagueKey.id}/rotate`);
    expect(rotate.status).toBe(403);
    expect(rotate.body.message).toBe('Only the owner of an API key can rotate it');
    expect((await apiA.delete(`/api-keys/${colleagueKey.id}`)).status).toBe(204);
    expect((await rest(app, { apiKey: colleagueKey.key }).get('/api-keys')).status).toBe(401);

    // Without api_keys:read a user sees only their own keys, and another's key is forbidden.
    const techList = await rest(app, technician.as).get('/api-keys');
    expect(techList.status).toBe(200);
    expect(techList.body).toEqual({ data: [], pagination: { page: 1, limit: 100, total: 0 } });
    expect((await rest(app, technician.as).get(`/api-keys/${colleagueKey.id}`)).status).toBe(403);
  });

  test('without credentials every route is 401', async () => {
    expect((await rest(app).get('/api-keys')).status).toBe(401);
    expect((await rest(app).post('/api-keys', { name: 'x', scopes: ['audit:read'] })).status).toBe(401);
  });
});

describe('events', () => {
  test('creating, changing, rotating and revoking a key each emit their event, with no key material', async () => {
    const org = await buildOrg(app);
    const owner = await buildUser(app, { orgId: org.id, can: ['api_keys:write', 'api_keys:delete', 'users:read'] });
    const api = rest(app, owner.as);
    const created = await api.post('/api-keys', { name: 'ci', scopes: ['users:read'] });
    await api.patch(`/api-keys/${created.body.id}`, { name: 'ci runner' });
    await api.post(`/api-keys/${created.body.id}/rotate`);
    await api.delete(`/api-keys/${created.body.id}`);
    const events = await sql(app, `select type, org_id, data from outbox_event where data->>'apiKeyId' = ? order by created_at, id`, [created.body.id]);
    expect(events).toEqual([
      { type: 'api_key.created', org_id: org.id, data: { apiKeyId: created.body.id, userId: owner.user.id, name: 'ci', scopes: ['users:read'] } },
      { type: 'api_key.updated', org_id: org.id, data: { apiKeyId: created.body.id, userId: owner.user.id, changes: ['name'] } },
      { type: 'api_key.rotated', org_id: org.id, data: { apiKeyId: created.body.id, userId: owner.user.id } },
      { type: 'api_key.revoked', org_id: org.id, data: { apiKeyId: created.body.id, userId: owner.user.id, reason: 'revoked' } },
    ]);
  });
});
