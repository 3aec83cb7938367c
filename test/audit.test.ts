import crypto from 'node:crypto';
import { RequestContext } from '../src/auth/context.js';
import { withTransaction } from '../src/db/transaction.js';
import { recordAudit } from '../src/services/audit/record.js';
import type { AuditAction } from '../src/events/types.js';
import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import type { Permission } from '../src/auth/permissions.js';
import { buildOrg, buildPartner, buildUser, systemRole } from './support/factories.js';
import { parseCsv } from './support/csv.js';

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => {
  await app.stop();
});

async function sql(target: TestApp, query: string, params: unknown[] = []): Promise<any[]> {
  return target.server.runtime.orm.em.fork().getConnection().execute(query, params);
}

/**
 * An organization whose member created two keys (one with a name that needs CSV quoting) and revoked
 * one, and reads the log (`export`: and exports it).
 */
async function tenant(target = app, { exports = false } = {}) {
  const org = await buildOrg(target);
  const can: Permission[] = ['api_keys:write', 'api_keys:delete', 'audit:read', ...(exports ? (['audit:export'] as const) : [])];
  const member = await buildUser(target, { orgId: org.id, can });
  const api = rest(target, member.as);
  const tag = crypto.randomBytes(4).toString('hex');
  const first = (await api.post('/api-keys', { name: `nightly-${tag}`, scopes: ['audit:read'] })).body;
  const second = (await api.post('/api-keys', { name: `report "q3", draft\n${tag}`, scopes: ['audit:read'] })).body;
  expect((await api.delete(`/api-keys/${first.id}`)).status).toBe(204);
  return { org, member, api, tag, first, second };
}

describe('listing', () => {
  test('mutations are listed newest first and narrowed by every filter', async () => {
    const { org, member, api, first, second } = await tenant();
    const all = await api.get('/audit/logs?action=api_key.*');
    expect(all.status).toBe(200);
    expect(all.body.data.map((r: any) => [r.action, r.resourceId])).toEqual([
      ['api_key.revoke', first.id],
      ['api_key.create', second.id],
      ['api_key.create', first.id],
    ]);
    expect(all.body.data[0]).toEqual({
      id: expect.any(String),
      seq: expect.stringMatching(/^\d+$/),
      createdAt: expect.any(String),
      actorType: 'user',
      actorId: member.user.id,
      actorEmail: member.user.email,
      action: 'api_key.revoke',
      resourceType: 'api_key',
      resourceId: first.id,
      orgId: org.id,
      partnerId: org.partnerId,
      ip: expect.any(String),
      userAgent: expect.any(String),
      result: 'success',
      changes: [],
      details: { prefix: first.prefix },
      prevHash: expect.stringMatching(/^[0-9a-f]{64}$/),
      hash: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(all.body.pagination).toEqual({ page: 1, limit: 100, total: 3 });

    expect((await api.get('/audit?action=api_key.create')).body.data).toHaveLength(2);
    expect((await api.get(`/audit?resourceId=${first.id}`)).body.data.map((r: any) => r.action)).toEqual(['api_key.revoke', 'api_key.create']);
    expect((await api.get(`/audit?actorId=${member.user.id}&resourceType=api_key&actorType=user`)).body.pagination.total).toBe(3);
    expect((await api.get('/audit?action=api_key.*&result=denied')).body.data).toEqual([]);
    const paged = await api.get('/audit?action=api_key.*&limit=1&page=2');
    expect(paged.body).toEqual({ data: [expect.objectContaining({ resourceId: second.id })], pagination: { page: 2, limit: 1, total: 3 } });

    const createdAt = all.body.data[1].createdAt;
    const since = await api.get(`/audit?action=api_key.*&from=${encodeURIComponent(createdAt)}`);
    expect(since.body.data.map((r: any) => r.resourceId)).toEqual([first.id, second.id]);
    const until = await api.get(`/audit?action=api_key.*&to=${encodeURIComponent(createdAt)}`);
    expect(until.body.data.map((r: any) => r.resourceId)).toEqual([second.id, first.id]);

    const one = await api.get(`/audit/logs/${all.body.data[0].id}`);
    expect(one.body).toEqual(all.body.data[0]);
    expect((await api.get('/audit?result=maybe')).status).toBe(400);
    expect((await api.get('/audit?colour=red')).status).toBe(400);
  });

  test('search finds entries by actor email and by text inside details; LIKE wildcards in the text are literal', async () => {
    const { api, member, tag, second } = await tenant();
    const byDetails = await api.get(`/audit/search?q=${tag}`);
    expect(byDetails.status).toBe(200);
    expect(byDetails.body.data.map((r: any) => [r.action, r.resourceId])).toEqual([
      ['api_key.create', second.id],
      ['api_key.create', expect.any(String)],
    ]);
    const byEmail = await api.get(`/audit/search?q=${encodeURIComponent(member.user.email.toUpperCase())}&action=api_key.create`);
    expect(byEmail.body.pagination.total).toBe(2);
    expect((await api.get('/audit/search?q=%25')).body.data).toEqual([]);
    expect((await api.get('/audit/search')).status).toBe(400);
  });

  test('denied attempts are listed with result denied', async () => {
    const org = await buildOrg(app);
    const auditor = await buildUser(app, { orgId: org.id, can: ['audit:read'] });
    const technician = await buildUser(app, { orgId: org.id, role: 'Organization Technician' });
    expect((await rest(app, technician.as).post('/api-keys', { name: 'x', scopes: ['devices:read'] })).status).toBe(403);
    expect((await rest(app, technician.as).get('/audit')).status).toBe(403);

    const denied = await rest(app, auditor.as).get('/audit?result=denied');
    expect(denied.body.data.map((r: any) => [r.action, r.actorId, r.result, r.details.permission])).toEqual([
      ['access.denied', technician.user.id, 'denied', 'audit:read'],
      ['access.denied', technician.user.id, 'denied', 'api_keys:write'],
    ]);
  });

  test('reading the log is itself recorded', async () => {
    const { api, member, org } = await tenant();
    await api.get('/audit?action=api_key.*');
    const reads = await api.get('/audit?action=audit.read');
    expect(reads.body.data[0]).toMatchObject({ action: 'audit.read', actorId: member.user.id, orgId: org.id, details: { view: 'list', filters: { action: 'api_key.*' } } });
  });
});

describe('tenancy', () => {
  test('an organization sees only its own entries, over REST and GraphQL', async () => {
    const a = await tenant(app, { exports: true });
    const b = await tenant(app, { exports: true });
    const bRow = (await b.api.get('/audit?action=api_key.create')).body.data[0];

    const list = await a.api.get('/audit?limit=500');
    expect(list.body.data.length).toBeGreaterThan(0);
    expect(new Set(list.body.data.map((r: any) => r.orgId))).toEqual(new Set([a.org.id]));
    expect((await a.api.get(`/audit/logs/${bRow.id}`)).status).toBe(404);
    expect((await a.api.get(`/audit?orgId=${b.org.id}`)).status).toBe(404);
    // (a's own searches are recorded with the text they searched for, so narrow to the keys' entries)
    expect((await a.api.get(`/audit/search?q=${b.tag}&resourceType=api_key`)).body.data).toEqual([]);
    expect((await a.api.get(`/audit/export?format=json&q=${b.tag}&resourceType=api_key`)).body).toEqual([]);
    expect((await b.api.get(`/audit/export?format=json&q=${b.tag}&resourceType=api_key`)).body).toHaveLength(2);

    const viaGql = await gql(app, a.member.as, '{ auditLogs(limit: 500) { data { id orgId details } pagination { total } } }');
    expect(viaGql.body.errors).toBeUndefined();
    expect(new Set(viaGql.body.data.auditLogs.data.map((r: any) => r.orgId))).toEqual(new Set([a.org.id]));
    const one = await gql(app, a.member.as, 'query($id: ID!) { auditLog(id: $id) { id } }', { id: bRow.id });
    expect(one.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const filtered = await gql(app, a.member.as, 'query($f: AuditLogFilter) { auditLogs(filters: $f) { data { action resourceId } } }', {
      f: { action: 'api_key.revoke' },
    });
    expect(filtered.body.data.auditLogs.data).toEqual([{ action: 'api_key.revoke', resourceId: a.first.id }]);
  });

  test('a partner sees its organizations’ entries and its own, not another partner’s', async () => {
    const partner = await buildPartner(app);
    const partnerAuditor = await buildUser(app, { partnerId: partner.id, can: ['api_keys:write', 'audit:read'] });
    const org = await buildOrg(app, { partnerId: partner.id });
    const customer = await buildUser(app, { orgId: org.id, can: ['api_keys:write', 'audit:read'] });
    const other = await tenant();
    const own = (await rest(app, partnerAuditor.as).post('/api-keys', { name: 'partner', scopes: ['audit:read'] })).body;
    const customerKey = (await rest(app, customer.as).post('/api-keys', { name: 'customer', scopes: ['audit:read'] })).body;

    const seen = (await rest(app, partnerAuditor.as).get('/audit?action=api_key.*&limit=500')).body.data.map((r: any) => r.resourceId);
    expect(seen.sort()).toEqual([own.id, customerKey.id].sort());
    expect(seen).not.toContain(other.first.id);
    const narrowed = (await rest(app, partnerAuditor.as).get(`/audit?orgId=${org.id}&action=api_key.*`)).body.data.map((r: any) => r.resourceId);
    expect(narrowed).toEqual([customerKey.id]);
  });
});

describe('export', () => {
  test('CSV is streamed as an attachment with a header row, quoting and only the filtered rows', async () => {
    const { api, first, second, member } = await tenant(app, { exports: true });
    const res = await fetch(`${app.url}/api/v1/audit/export?format=csv&action=api_key.*`, { headers: { authorization: `Bearer ${member.token}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/csv; charset=utf-8');
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="audit-log-.+\.csv"$/);
    expect(res.headers.get('transfer-encoding')).toBe('chunked');
    expect(res.headers.get('content-length')).toBeNull();
    const [header, ...rows] = parseCsv(await res.text());
    expect(header).toEqual(['id', 'seq', 'createdAt', 'actorType', 'actorId', 'actorEmail', 'action', 'resourceType', 'resourceId', 'orgId', 'partnerId', 'ip', 'userAgent', 'result', 'changes', 'details', 'prevHash', 'hash']);
    const records = rows.map((cells) => Object.fromEntries(header!.map((name, i) => [name, cells[i]])));
    expect(records.map((r) => [r.action, r.resourceId])).toEqual([
      ['api_key.revoke', first.id],
      ['api_key.create', second.id],
      ['api_key.create', first.id],
    ]);
    expect(JSON.parse(records[1]!.details!).name).toBe(second.name);
    expect(records[0]!.changes).toBe('[]');

    const exported = await api.get('/audit?action=audit.export');
    expect(exported.body.data[0]).toMatchObject({ action: 'audit.export', details: { format: 'csv', filters: { action: 'api_key.*' } } });
  });

  test('JSON is a streamed array; POST takes the filters in the body; large exports page through every row', async () => {
    const org = await buildOrg(app);
    const exporter = await buildUser(app, { orgId: org.id, can: ['audit:export'] });
    const ctx = RequestContext.system(app.server.runtime, 'test');
    await withTransaction(ctx, async (tx) => {
      for (let i = 0; i < 1203; i++) await recordAudit(tx, { action: 'bench.write', resourceType: 'thing', resourceId: String(i), orgId: org.id, details: { i } });
    });
    const res = await rest(app, exporter.as).post('/audit/export', { format: 'json', filters: { action: 'bench.*' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="audit-log-.+\.json"$/);
    expect(res.body).toHaveLength(1203);
    expect(res.body.map((r: any) => Number(r.resourceId))).toEqual(Array.from({ length: 1203 }, (_, i) => 1202 - i));
    expect(res.body[0]).toMatchObject({ action: 'bench.write', orgId: org.id, details: { i: 1202 } });

    const none = await rest(app, exporter.as).post('/audit/export', { format: 'json', filters: { action: 'nothing.*' } });
    expect(none.body).toEqual([]);
    expect((await rest(app, exporter.as).post('/audit/export', { format: 'xml' })).status).toBe(400);
  });

  test('export needs audit:export', async () => {
    const org = await buildOrg(app);
    const viewer = await buildUser(app, { orgId: org.id, role: 'Organization Viewer' });
    expect((await rest(app, viewer.as).get('/audit')).status).toBe(200);
    const res = await rest(app, viewer.as).get('/audit/export');
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('FORBIDDEN');
  });
});

describe('reports', () => {
  test('user activity, security events and stats count the caller’s tenant only', async () => {
    const { org, member, api } = await tenant();
    const technician = await buildUser(app, { orgId: org.id, role: 'Organization Technician' });
    await rest(app, technician.as).post('/api-keys', { name: 'x', scopes: ['devices:read'] });
    await rest(app, technician.as).get('/audit');
    await tenant();

    const activity = await api.get('/audit/reports/user-activity');
    expect(activity.status).toBe(200);
    const mine = activity.body.users.find((u: any) => u.actorId === member.user.id);
    expect(mine).toMatchObject({ actorType: 'user', actorEmail: member.user.email, total: 3, success: 3, denied: 0, failure: 0 });
    expect(mine.actions).toEqual([
      { action: 'api_key.create', count: 2 },
      { action: 'api_key.revoke', count: 1 },
    ]);
    expect(activity.body.users.find((u: any) => u.actorId === technician.user.id)).toMatchObject({ total: 2, denied: 2 });
    expect(activity.body.users).toHaveLength(2);

    const security = await api.get('/audit/reports/security-events');
    expect(security.body.totals).toMatchObject({ denied: 2, apiKeyChanges: 3, logins: 0, loginFailures: 0 });
    expect(security.body.events).toHaveLength(5);
    expect(security.body.events[0]).toMatchObject({ action: 'access.denied', categories: ['denied'] });
    expect(security.body.events[4]).toMatchObject({ action: 'api_key.create', categories: ['apiKeyChanges'] });

    const stats = await api.get('/audit/stats');
    expect(stats.body.byAction).toEqual(
      expect.arrayContaining([
        { action: 'api_key.create', count: 2 },
        { action: 'access.denied', count: 2 },
      ]),
    );
    expect(stats.body.byResult).toEqual(expect.arrayContaining([{ result: 'denied', count: 2 }]));
    expect(stats.body.byDay).toEqual([{ day: new Date().toISOString().slice(0, 10), count: stats.body.total }]);
    const viaGql = await gql(app, member.as, '{ auditStats { total byResult { result count } } }');
    expect(viaGql.body.data.auditStats.total).toBe(stats.body.total + 1);

    const empty = await api.get(`/audit/stats?from=2001-01-01T00:00:00Z&to=2001-02-01T00:00:00Z`);
    expect(empty.body).toMatchObject({ total: 0, byAction: [], byDay: [] });
    expect((await api.get(`/audit/stats?from=2002-01-01T00:00:00Z&to=2001-01-01T00:00:00Z`)).status).toBe(400);
  });
});

describe('the hash chains', () => {
  const GENESIS = '0'.repeat(64);

  test('the compliance report detects an edited and a deleted row in the chain that holds it, for the system and for the organization', async () => {
    const isolated = await createTestApp();
    try {
      const system = await buildUser(isolated, { can: ['audit:read'] });
      const { org, member, first } = await tenant(isolated);
      const bystander = await tenant(isolated);
      const report = () => rest(isolated, system.as).get('/audit/reports/compliance');
      const orgReport = (who = member) => rest(isolated, who.as).get('/audit/reports/compliance');

      const intact = await report();
      expect(intact.status).toBe(200);
      expect(intact.body.chain).toEqual({ valid: true, checked: expect.any(Number), brokenAt: null, chains: expect.any(Number), broken: [] });
      expect(intact.body.integrity.valid).toBe(true);
      expect(intact.body.totals.events).toBeGreaterThan(0);
      // an organization walks its own chain whole, and only that one
      const orgView = await orgReport();
      expect(orgView.body).toMatchObject({ chain: { valid: true, chains: 1, brokenAt: null }, integrity: { valid: true, brokenAt: null } });

      const [row] = await sql(isolated, `select seq::text as seq, action from audit_log where action = 'api_key.create' and resource_id = ?`, [first.id]);
      await sql(isolated, `update audit_log set action = 'api_key.read' where seq = ?`, [row.seq]);
      const edited = await report();
      expect(edited.body.chain).toMatchObject({ valid: false, brokenAt: row.seq, broken: [{ chain: `org:${org.id}`, brokenAt: row.seq }] });
      expect(edited.body.integrity).toMatchObject({ valid: false, brokenAt: row.seq });
      expect((await orgReport()).body).toMatchObject({ chain: { valid: false, brokenAt: row.seq }, integrity: { valid: false, brokenAt: row.seq } });
      expect((await orgReport(bystander.member)).body).toMatchObject({ chain: { valid: true, chains: 1, broken: [] }, integrity: { valid: true } });

      await sql(isolated, `update audit_log set action = ? where seq = ?`, [row.action, row.seq]);
      expect((await report()).body.chain.valid).toBe(true);

      await sql(isolated, `delete from audit_log where seq = ?`, [row.seq]);
      const [next] = await sql(isolated, `select min(seq)::text as seq from audit_log where org_id = ? and seq > ?`, [org.id, row.seq]);
      expect((await report()).body.chain).toMatchObject({ valid: false, brokenAt: next.seq, broken: [{ chain: `org:${org.id}`, brokenAt: next.seq }] });
      expect((await orgReport()).body.chain).toMatchObject({ valid: false, brokenAt: next.seq });
    } finally {
      await isolated.stop();
    }
  });

  test('each organization has its own chain, and its writes do not wait for another organization’s open transaction', async () => {
    const system = await buildUser(app, { can: ['audit:read'] });
    const [a, b] = [await buildOrg(app), await buildOrg(app)];
    const write = (orgId: string, action: AuditAction) =>
      withTransaction(RequestContext.system(app.server.runtime, 'test'), (tx) => recordAudit(tx, { action, resourceType: 'thing', orgId }));

    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let appended!: () => void;
    const aAppended = new Promise<void>((resolve) => (appended = resolve));
    const holdingA = withTransaction(RequestContext.system(app.server.runtime, 'test'), async (tx) => {
      await recordAudit(tx, { action: 'site.create', resourceType: 'thing', orgId: a.id });
      appended();
      await held;
    });
    await aAppended;
    // a's chain stays locked until its transaction ends; b's write commits meanwhile
    await write(b.id, 'site.update');
    release();
    await holdingA;
    await write(a.id, 'site.delete');

    expect((await rest(app, system.as).get(`/audit/reports/compliance?orgId=${a.id}`)).body.chain).toEqual({ valid: true, checked: 2, brokenAt: null, chains: 1, broken: [] });
    const entries = async (orgId: string) => (await rest(app, system.as).get(`/audit?orgId=${orgId}&action=site.*`)).body.data.reverse();
    const [hold, second] = await entries(a.id);
    expect([hold.action, hold.prevHash, second.action, second.prevHash]).toEqual(['site.create', GENESIS, 'site.delete', hold.hash]);
    const [onlyB] = await entries(b.id);
    expect([onlyB.action, onlyB.prevHash]).toEqual(['site.update', GENESIS]);
    expect(BigInt(onlyB.seq)).toBeLessThan(BigInt(second.seq));
  });

  test('a denial inside a write’s transaction is recorded though the write rolls back', async () => {
    const org = await buildOrg(app);
    const auditor = await buildUser(app, { orgId: org.id, can: ['audit:read'] });
    const noMfa = await buildUser(app, { orgId: org.id, can: ['users:write', 'roles:write'], mfa: false });
    const technician = await buildUser(app, { orgId: org.id, role: 'Organization Technician' });
    // users:write passes, then roles:write with MFA is refused inside the same transaction
    expect(await rest(app, noMfa.as).post(`/users/${technician.user.id}/role`, { roleId: systemRole('Organization Viewer') })).toMatchObject({ status: 403, body: { code: 'MFA_REQUIRED' } });

    const entries = (await rest(app, auditor.as).get(`/audit?actorId=${noMfa.user.id}`)).body.data;
    expect(entries.map((r: any) => [r.action, r.result, r.orgId, r.details])).toEqual([
      ['access.denied', 'denied', org.id, { permission: 'roles:write', reason: 'mfa_required' }],
    ]);
    expect((await rest(app, auditor.as).get('/audit/reports/compliance')).body.chain).toMatchObject({ valid: true, chains: 1 });
  });
});

describe('date filters', () => {
  const FAR = ['-271821-04-20T00:00:00Z', '+275760-09-13T00:00:00Z', '0000-01-01T00:00:00Z', '10000-01-01T00:00:00Z', '0001-01-01T00:00:00+01:00', '0000-01-01', 'yesterday'];

  test('REST: dates outside years 0001–9999 (or not ISO 8601 date-times) are a 400 naming the field', async () => {
    const api = rest(app, (await buildUser(app, { orgId: (await buildOrg(app)).id, can: ['audit:read', 'audit:export'] })).as);
    for (const path of ['/audit/logs', '/audit/stats', '/audit/export', '/audit/reports/compliance']) {
      for (const field of ['from', 'to']) {
        for (const value of FAR) {
          const res = await api.get(`${path}?${field}=${encodeURIComponent(value)}`);
          expect({ path, field, value, status: res.status, code: res.body.code, fields: res.body.details?.map((d: any) => d.path) }).toEqual({
            path,
            field,
            value,
            status: 400,
            code: 'VALIDATION_ERROR',
            fields: [field],
          });
        }
      }
    }
    const zero = await api.get('/audit/logs?from=0000-01-01T00:00:00Z');
    expect(zero.body.message).toBe('from: must be between years 0001 and 9999');
  });

  test('REST: the bounds themselves are accepted, and an offset is read as the instant it names', async () => {
    const api = rest(app, (await buildUser(app, { orgId: (await buildOrg(app)).id, can: ['audit:read'] })).as);
    const edges = await api.get(`/audit/stats?from=${encodeURIComponent('0001-01-01T00:00:00Z')}&to=${encodeURIComponent('9999-12-31T23:59:59.999Z')}`);
    expect(edges.status).toBe(200);
    expect(edges.body).toMatchObject({ from: '0001-01-01T00:00:00.000Z', to: '9999-12-31T23:59:59.999Z' });
    const offset = await api.get(`/audit/stats?from=${encodeURIComponent('2026-01-01T02:00:00+02:00')}&to=${encodeURIComponent('2026-01-02T00:00:00Z')}`);
    expect(offset.body).toMatchObject({ from: '2026-01-01T00:00:00.000Z', to: '2026-01-02T00:00:00.000Z' });
    expect((await api.get(`/audit/logs?from=${encodeURIComponent('0001-01-01T00:00:00Z')}&to=${encodeURIComponent('9999-12-31T23:59:59Z')}`)).status).toBe(200);
    // a date alone is its UTC midnight, a time without offset is UTC
    expect((await api.get('/audit/stats?from=2026-01-01&to=2026-01-02T12:00')).body).toMatchObject({ from: '2026-01-01T00:00:00.000Z', to: '2026-01-02T12:00:00.000Z' });
  });

  test('GraphQL: the same bounds, as VALIDATION_ERROR', async () => {
    const auditor = await buildUser(app, { orgId: (await buildOrg(app)).id, can: ['audit:read'] });
    for (const value of FAR) {
      // Dates are the DateTime scalar: the same rule refuses them while the variables are read.
      const stats = await gql(app, auditor.as, 'query($from: DateTime, $to: DateTime) { auditStats(from: $from, to: $to) { total } }', { from: value });
      expect({ value, errors: stats.body.errors }).toEqual({ value, errors: [expect.objectContaining({ message: expect.stringMatching(/\$from.*DateTime: must/), extensions: expect.objectContaining({ code: 'VALIDATION_ERROR' }) })] });
      const logs = await gql(app, auditor.as, 'query($filters: AuditLogFilter) { auditLogs(filters: $filters) { pagination { total } } }', { filters: { to: value } });
      expect({ value, errors: logs.body.errors }).toEqual({ value, errors: [expect.objectContaining({ message: expect.stringMatching(/\$filters.*DateTime: must/), extensions: expect.objectContaining({ code: 'VALIDATION_ERROR' }) })] });
    }
    const ok = await gql(app, auditor.as, '{ auditStats(from: "0001-01-01T00:00:00Z", to: "9999-12-31T23:59:59Z") { from to } }');
    expect(ok.body).toEqual({ data: { auditStats: { from: '0001-01-01T00:00:00.000Z', to: '9999-12-31T23:59:59.000Z' } } });
  });
});
