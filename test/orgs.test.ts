import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import { auditOf, sql } from './support/db.js';
import type { Permission } from '../src/auth/permissions.js';
import { buildOrg, buildPartner, buildSite, buildUser, type BuiltUser } from './support/factories.js';

let app: TestApp;
let platform: BuiltUser;

beforeAll(async () => {
  app = await createTestApp();
  // Creating, suspending and deleting partners is for platform administrators alone.
  platform = await buildUser(app, { role: 'Platform Admin' });
});
afterAll(async () => {
  await app.stop();
});

const AUDIT_COLUMNS = ['action', 'resource_type', 'org_id', 'partner_id', 'actor_id', 'changes'];

async function eventsOf(type: string, key: string, id: string) {
  return sql(app, `select type, org_id, data from outbox_event where type = ? and data->>? = ?`, [type, key, id]);
}

/** A partner with two organizations (A1, A2) and an unrelated partner B with one (B1), each organization with one site. */
async function twoTenants() {
  const partnerA = await buildPartner(app);
  const partnerB = await buildPartner(app);
  const orgA1 = await buildOrg(app, { partnerId: partnerA.id });
  const orgA2 = await buildOrg(app, { partnerId: partnerA.id });
  const orgB = await buildOrg(app, { partnerId: partnerB.id });
  const siteA1 = await buildSite(app, orgA1.id);
  const siteA2 = await buildSite(app, orgA2.id);
  const siteB = await buildSite(app, orgB.id);
  return { partnerA, partnerB, orgA1, orgA2, orgB, siteA1, siteA2, siteB };
}

const window = { days: ['sat', 'sun'], startUtc: '22:00', endUtc: '04:00' };

describe('partners over REST', () => {
  test('a platform administrator creates, reads, updates and deletes a partner, each change audited with an event', async () => {
    const api = rest(app, platform.as);
    const created = await api.post('/orgs/partners', { name: '  Acme MSP ', contactEmail: 'ops@acme.test', settings: { agentUpdateWindow: window } });
    expect(created.status).toBe(201);
    const id = created.body.id;
    expect(created.body).toEqual({
      id: expect.any(String),
      name: 'Acme MSP',
      status: 'active',
      contactEmail: 'ops@acme.test',
      requireMfa: false,
      settings: { agentUpdateWindow: window },
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });

    expect((await api.get(`/orgs/partners/${id}`)).body).toEqual(created.body);

    const patched = await api.patch(`/orgs/partners/${id}`, { name: 'Acme', status: 'suspended', contactEmail: 'ops@acme.test' });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ name: 'Acme', status: 'suspended', contactEmail: 'ops@acme.test' });

    expect((await api.delete(`/orgs/partners/${id}`)).status).toBe(204);
    expect(await api.get(`/orgs/partners/${id}`)).toMatchObject({ status: 404, body: { code: 'NOT_FOUND', message: 'Partner not found' } });

    expect(await auditOf(app, id, AUDIT_COLUMNS)).toEqual([
      { action: 'partner.create', resource_type: 'partner', org_id: null, partner_id: id, actor_id: platform.user.id, changes: ['name', 'contactEmail', 'settings'] },
      // contactEmail was sent unchanged: only what changed is listed
      { action: 'partner.update', resource_type: 'partner', org_id: null, partner_id: id, actor_id: platform.user.id, changes: ['name', 'status'] },
      { action: 'partner.delete', resource_type: 'partner', org_id: null, partner_id: id, actor_id: platform.user.id, changes: [] },
    ]);
    expect((await eventsOf('partner.updated', 'partnerId', id))[0].data).toEqual({ partnerId: id, name: 'Acme', changes: ['name', 'status'] });
    expect(await eventsOf('partner.deleted', 'partnerId', id)).toHaveLength(1);
  });

  test('a PATCH that changes nothing writes no audit row', async () => {
    const partner = await buildPartner(app, { name: 'Unchanged' });
    const res = await rest(app, platform.as).patch(`/orgs/partners/${partner.id}`, { name: 'Unchanged' });
    expect(res.status).toBe(200);
    expect(await auditOf(app, partner.id, AUDIT_COLUMNS)).toEqual([]);
  });

  test('the list pages, searches by name and defaults to 100 items', async () => {
    const tag = `Zeta${Date.now()}`;
    await buildPartner(app, { name: `${tag} one` });
    await buildPartner(app, { name: `${tag} two` });
    const api = rest(app, platform.as);
    const first = await api.get(`/orgs/partners?search=${tag}&limit=1`);
    expect(first.status).toBe(200);
    expect(first.body.data.map((p: any) => p.name)).toEqual([`${tag} one`]);
    expect(first.body.pagination).toEqual({ page: 1, limit: 1, total: 2 });
    const second = await api.get(`/orgs/partners?search=${tag}&limit=1&page=2`);
    expect(second.body.data.map((p: any) => p.name)).toEqual([`${tag} two`]);
    expect((await api.get('/orgs/partners')).body.pagination.limit).toBe(100);
    // LIKE wildcards in the search are literal
    expect((await api.get('/orgs/partners?search=%25')).body.data).toEqual([]);
  });

  test('partner users see and change only their own partner; only platform administrators create or suspend partners', async () => {
    const { partnerA, partnerB } = await twoTenants();
    // every partner permission, so each refusal below comes from the scope, not from a missing permission
    const member = await buildUser(app, { partnerId: partnerA.id, can: ['partners:read', 'partners:write', 'partners:delete'] });
    const api = rest(app, member.as);

    const list = await api.get('/orgs/partners');
    expect(list.body).toEqual({ data: [expect.objectContaining({ id: partnerA.id })], pagination: { page: 1, limit: 100, total: 1 } });
    for (const res of [
      await api.get(`/orgs/partners/${partnerB.id}`),
      await api.patch(`/orgs/partners/${partnerB.id}`, { name: 'Taken over' }),
      await api.delete(`/orgs/partners/${partnerB.id}`),
    ]) {
      expect(res).toMatchObject({ status: 404, body: { code: 'NOT_FOUND', message: 'Partner not found' } });
    }

    expect(await api.post('/orgs/partners', { name: 'Mine too' })).toMatchObject({
      status: 403,
      body: { code: 'FORBIDDEN', message: 'Only platform administrators can create partners' },
    });
    expect(await api.patch(`/orgs/partners/${partnerA.id}`, { status: 'suspended' })).toMatchObject({
      status: 403,
      body: { code: 'FORBIDDEN', message: "Only platform administrators can change a partner's status" },
    });
    expect(await api.delete(`/orgs/partners/${partnerA.id}`)).toMatchObject({ status: 400, body: { message: 'You cannot delete your own partner' } });

    const after = await rest(app, platform.as).get(`/orgs/partners/${partnerB.id}`);
    expect(after.body).toMatchObject({ name: partnerB.name, status: 'active' });
  });

  test('/orgs/partners/me is the partner-scoped caller’s own partner; other callers get a 400 saying so', async () => {
    const partner = await buildPartner(app);
    const org = await buildOrg(app, { partnerId: partner.id });
    const member = await buildUser(app, { partnerId: partner.id, can: ['partners:read', 'partners:write'] });
    const me = await rest(app, member.as).get('/orgs/partners/me');
    expect(me.body).toMatchObject({ id: partner.id, name: partner.name });

    const patched = await rest(app, member.as).patch('/orgs/partners/me', { contactEmail: 'desk@partner.test' });
    expect(patched.body).toMatchObject({ id: partner.id, contactEmail: 'desk@partner.test' });
    expect((await auditOf(app, partner.id, AUDIT_COLUMNS)).map((r) => [r.action, r.changes])).toEqual([['partner.update', ['contactEmail']]]);

    const message = 'Partner context required: only partner users and API keys have their own partner; use /orgs/partners/:id';
    const orgUser = await buildUser(app, { orgId: org.id, role: 'Organization Viewer' });
    for (const as of [orgUser.as, platform.as]) {
      expect(await rest(app, as).get('/orgs/partners/me')).toMatchObject({ status: 400, body: { code: 'VALIDATION_ERROR', message } });
      expect(await rest(app, as).patch('/orgs/partners/me', { name: 'x' })).toMatchObject({ status: 400, body: { message } });
    }
  });

  test('deleting a partner removes its organizations and their sites', async () => {
    const { partnerA, orgA1, siteA1, orgB } = await twoTenants();
    expect((await rest(app, platform.as).delete(`/orgs/partners/${partnerA.id}`)).status).toBe(204);
    expect(await sql(app, 'select id from organization where partner_id = ?', [partnerA.id])).toEqual([]);
    expect(await sql(app, 'select id from site where id = ?', [siteA1.id])).toEqual([]);
    expect((await rest(app, platform.as).get(`/orgs/organizations/${orgA1.id}`)).status).toBe(404);
    expect((await rest(app, platform.as).get(`/orgs/organizations/${orgB.id}`)).status).toBe(200);
  });

  test('invalid input is a 400 VALIDATION_ERROR naming the field; unknown and server-set fields are refused', async () => {
    const api = rest(app, platform.as);
    const partner = await buildPartner(app);
    const cases: [unknown, string][] = [
      [{ name: '' }, 'name'],
      [{ name: '   ' }, 'name'],
      [{ name: 'x'.repeat(256) }, 'name'],
      [{ name: 'Ok', id: partner.id }, ''],
      [{ name: 'Ok', createdAt: '2020-01-01T00:00:00Z' }, ''],
      [{ name: 'Ok', contactEmail: 'not-an-email' }, 'contactEmail'],
      [{ name: 'Ok', settings: { requireMfa: true } }, 'settings'],
      [{ name: 'Ok', settings: { agentUpdateWindow: { ...window, startUtc: '25:00' } } }, 'settings.agentUpdateWindow.startUtc'],
      [{ name: 'Ok', settings: { agentUpdateWindow: { ...window, days: ['sat', 'sat'] } } }, 'settings.agentUpdateWindow.days'],
      [{ name: 'Ok', settings: { agentUpdateWindow: { ...window, days: ['someday'] } } }, 'settings.agentUpdateWindow.days.0'],
      [{ name: 'Ok', settings: { agentUpdateWindow: { ...window, days: [] } } }, 'settings.agentUpdateWindow.days'],
    ];
    for (const [body, path] of cases) {
      const res = await api.post('/orgs/partners', body);
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('VALIDATION_ERROR');
      expect(res.body.details[0].path).toBe(path);
    }
    expect((await api.post('/orgs/partners', { name: 'Ok', id: partner.id })).body.message).toMatch(/id/);
    expect((await api.patch(`/orgs/partners/${partner.id}`, { status: 'gone' })).body.details[0].path).toBe('status');
    expect((await api.get('/orgs/partners?sort=name')).status).toBe(400);
    expect(await api.get('/orgs/partners/not-a-uuid')).toMatchObject({ status: 404, body: { message: 'Partner not found' } });
  });

  test('changing requireMfa needs a session that passed a second factor', async () => {
    const partner = await buildPartner(app);
    const noMfa = await buildUser(app, { partnerId: partner.id, can: ['partners:write'], mfa: false });
    expect(await rest(app, noMfa.as).patch(`/orgs/partners/${partner.id}`, { requireMfa: true })).toMatchObject({ status: 403, body: { code: 'MFA_REQUIRED' } });
    expect((await rest(app, noMfa.as).patch(`/orgs/partners/${partner.id}`, { name: 'Renamed without MFA' })).status).toBe(200);
    const withMfa = await buildUser(app, { partnerId: partner.id, can: ['partners:write'] });
    expect((await rest(app, withMfa.as).patch(`/orgs/partners/${partner.id}`, { requireMfa: true })).body.requireMfa).toBe(true);
  });
});

describe('organizations over REST', () => {
  test('a partner user creates an organization in their own partner, then reads, updates and deletes it', async () => {
    const partner = await buildPartner(app);
    const member = await buildUser(app, { partnerId: partner.id, can: ['organizations:read', 'organizations:write', 'organizations:delete'] });
    const api = rest(app, member.as);
    const created = await api.post('/orgs/organizations', { name: 'Contoso', requireMfa: true });
    expect(created.status).toBe(201);
    const id = created.body.id;
    expect(created.body).toEqual({
      id: expect.any(String),
      partnerId: partner.id,
      name: 'Contoso',
      status: 'active',
      contactEmail: null,
      requireMfa: true,
      settings: { agentUpdateWindow: null },
      effectiveAgentUpdateWindow: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect((await api.get(`/orgs/organizations/${id}`)).body).toEqual(created.body);
    expect((await api.patch(`/orgs/organizations/${id}`, { name: 'Contoso Ltd', status: 'suspended' })).body).toMatchObject({ name: 'Contoso Ltd', status: 'suspended' });
    expect((await api.delete(`/orgs/organizations/${id}`)).status).toBe(204);
    expect((await api.get(`/orgs/organizations/${id}`)).status).toBe(404);

    expect(await auditOf(app, id, AUDIT_COLUMNS)).toEqual([
      { action: 'organization.create', resource_type: 'organization', org_id: id, partner_id: partner.id, actor_id: member.user.id, changes: ['name', 'requireMfa', 'partnerId'] },
      { action: 'organization.update', resource_type: 'organization', org_id: id, partner_id: partner.id, actor_id: member.user.id, changes: ['name', 'status'] },
      { action: 'organization.delete', resource_type: 'organization', org_id: id, partner_id: partner.id, actor_id: member.user.id, changes: [] },
    ]);
    const [event] = await eventsOf('organization.created', 'orgId', id);
    expect(event).toEqual({ type: 'organization.created', org_id: id, data: { orgId: id, partnerId: partner.id, name: 'Contoso', changes: ['name', 'requireMfa', 'partnerId'] } });
  });

  test('who may create an organization where', async () => {
    const { partnerA, partnerB, orgA1 } = await twoTenants();
    const partnerUser = rest(app, (await buildUser(app, { partnerId: partnerA.id, can: ['organizations:write'] })).as);
    expect(await partnerUser.post('/orgs/organizations', { name: 'Elsewhere', partnerId: partnerB.id })).toMatchObject({ status: 404, body: { message: 'Partner not found' } });
    expect((await partnerUser.post('/orgs/organizations', { name: 'Here', partnerId: partnerA.id })).status).toBe(201);

    const system = rest(app, platform.as);
    expect(await system.post('/orgs/organizations', { name: 'Nowhere' })).toMatchObject({
      status: 400,
      body: { code: 'VALIDATION_ERROR', message: 'partnerId: required when a platform administrator creates an organization' },
    });
    expect(await system.post('/orgs/organizations', { name: 'Ghost', partnerId: '00000000-0000-4000-8000-00000000dead' })).toMatchObject({ status: 404, body: { message: 'Partner not found' } });
    expect((await system.post('/orgs/organizations', { name: 'Placed', partnerId: partnerB.id })).body.partnerId).toBe(partnerB.id);

    const orgUser = rest(app, (await buildUser(app, { orgId: orgA1.id, can: ['organizations:write'] })).as);
    expect(await orgUser.post('/orgs/organizations', { name: 'Sibling' })).toMatchObject({
      status: 403,
      body: { code: 'FORBIDDEN', message: 'Organization users cannot create organizations' },
    });
    const selected = rest(app, (await buildUser(app, { partnerId: partnerA.id, can: ['organizations:write'], orgAccess: 'selected', orgIds: [orgA1.id] })).as);
    expect(await selected.post('/orgs/organizations', { name: 'Outside my selection' })).toMatchObject({
      status: 403,
      body: { message: 'Partner users limited to selected organizations cannot create organizations' },
    });
    const viewer = rest(app, (await buildUser(app, { partnerId: partnerA.id, role: 'Partner Viewer' })).as);
    expect(await viewer.post('/orgs/organizations', { name: 'Read only' })).toMatchObject({ status: 403, body: { code: 'FORBIDDEN' } });
  });

  test('the list filters by partner, status and name, and pages', async () => {
    const partner = await buildPartner(app);
    const other = await buildPartner(app);
    await buildOrg(app, { partnerId: partner.id, name: 'Alpha clinic' });
    await buildOrg(app, { partnerId: partner.id, name: 'Beta clinic', status: 'suspended' });
    await buildOrg(app, { partnerId: partner.id, name: 'Gamma bakery' });
    await buildOrg(app, { partnerId: other.id, name: 'Delta clinic' });
    const api = rest(app, platform.as);
    const names = async (q: string) => (await api.get(`/orgs/organizations?${q}`)).body.data.map((o: any) => o.name);
    expect(await names(`partnerId=${partner.id}`)).toEqual(['Alpha clinic', 'Beta clinic', 'Gamma bakery']);
    expect(await names(`partnerId=${partner.id}&search=CLINIC`)).toEqual(['Alpha clinic', 'Beta clinic']);
    expect(await names(`partnerId=${partner.id}&status=suspended`)).toEqual(['Beta clinic']);
    const page = await api.get(`/orgs/organizations?partnerId=${partner.id}&limit=2&page=2`);
    expect(page.body).toEqual({ data: [expect.objectContaining({ name: 'Gamma bakery' })], pagination: { page: 2, limit: 2, total: 3 } });
    expect((await api.get('/orgs/organizations?status=closed')).status).toBe(400);
    expect((await api.get('/orgs/organizations?limit=501')).status).toBe(400);
  });

  test('organization users rename their organization but cannot suspend, move or delete it; viewers cannot change it', async () => {
    const org = await buildOrg(app);
    const api = rest(app, (await buildUser(app, { orgId: org.id, can: ['organizations:write'] })).as);
    expect((await api.patch(`/orgs/organizations/${org.id}`, { name: 'Renamed by its own user' })).body.name).toBe('Renamed by its own user');
    expect(await api.patch(`/orgs/organizations/${org.id}`, { status: 'suspended' })).toMatchObject({
      status: 403,
      body: { message: "Organization users cannot change their organization's status" },
    });
    const moved = await api.patch(`/orgs/organizations/${org.id}`, { partnerId: (await buildPartner(app)).id });
    expect(moved).toMatchObject({ status: 400, body: { code: 'VALIDATION_ERROR' } });
    expect(await api.delete(`/orgs/organizations/${org.id}`)).toMatchObject({ status: 403, body: { code: 'FORBIDDEN' } });

    const withDelete = rest(app, (await buildUser(app, { orgId: org.id, can: ['organizations:delete'] })).as);
    expect(await withDelete.delete(`/orgs/organizations/${org.id}`)).toMatchObject({ status: 400, body: { message: 'You cannot delete your own organization' } });

    const viewer = rest(app, (await buildUser(app, { orgId: org.id, role: 'Organization Viewer' })).as);
    expect((await viewer.get(`/orgs/organizations/${org.id}`)).status).toBe(200);
    expect(await viewer.patch(`/orgs/organizations/${org.id}`, { name: 'Viewer was here' })).toMatchObject({ status: 403, body: { code: 'FORBIDDEN' } });
    expect((await rest(app, platform.as).get(`/orgs/organizations/${org.id}`)).body).toMatchObject({ name: 'Renamed by its own user', status: 'active', partnerId: org.partnerId });
    const denied = await sql(app, `select details->>'permission' as permission from audit_log where org_id = ? and action = 'access.denied' order by seq`, [org.id]);
    expect(denied).toEqual([{ permission: 'organizations:delete' }, { permission: 'organizations:write' }]);
  });

  test('deleting an organization removes its sites', async () => {
    const org = await buildOrg(app);
    const site = await buildSite(app, org.id);
    const partnerUser = await buildUser(app, { partnerId: org.partnerId, can: ['organizations:delete'] });
    expect((await rest(app, partnerUser.as).delete(`/orgs/organizations/${org.id}`)).status).toBe(204);
    expect(await sql(app, 'select id from site where id = ?', [site.id])).toEqual([]);
    expect((await eventsOf('organization.deleted', 'orgId', org.id))[0].data).toEqual({ orgId: org.id, partnerId: org.partnerId, name: org.name });
  });
});

describe('the agent update window', () => {
  test("an organization's own window overrides its partner's; clearing it inherits the partner's again", async () => {
    const partner = await buildPartner(app);
    const org = await buildOrg(app, { partnerId: partner.id });
    const partnerApi = rest(app, (await buildUser(app, { partnerId: partner.id, can: ['organizations:read', 'organizations:write', 'partners:write'] })).as);
    const effective = async () => (await partnerApi.get(`/orgs/organizations/${org.id}`)).body.effectiveAgentUpdateWindow;

    expect(await effective()).toBeNull();
    await partnerApi.patch('/orgs/partners/me', { settings: { agentUpdateWindow: window } });
    expect(await effective()).toEqual({ ...window, source: 'partner' });

    // days come back in week order whatever order they were sent in
    const own = await partnerApi.patch(`/orgs/organizations/${org.id}`, { settings: { agentUpdateWindow: { days: ['wed', 'mon'], startUtc: '01:00', endUtc: '03:30' } } });
    expect(own.body.settings.agentUpdateWindow).toEqual({ days: ['mon', 'wed'], startUtc: '01:00', endUtc: '03:30' });
    expect(own.body.effectiveAgentUpdateWindow).toEqual({ days: ['mon', 'wed'], startUtc: '01:00', endUtc: '03:30', source: 'organization' });
    expect((await auditOf(app, org.id, AUDIT_COLUMNS)).map((r) => r.changes)).toEqual([['settings.agentUpdateWindow']]);

    expect((await partnerApi.patch(`/orgs/organizations/${org.id}`, { settings: { agentUpdateWindow: null } })).body.effectiveAgentUpdateWindow).toEqual({ ...window, source: 'partner' });
    await partnerApi.patch('/orgs/partners/me', { settings: { agentUpdateWindow: null } });
    expect(await effective()).toBeNull();
  });

  test('lists carry the effective window of every organization, over GraphQL too', async () => {
    const partner = await buildPartner(app, { settings: { agentUpdateWindow: { days: ['sun'], startUtc: '00:00', endUtc: '06:00' } } });
    const inherits = await buildOrg(app, { partnerId: partner.id, name: 'A inherits' });
    await buildOrg(app, { partnerId: partner.id, name: 'B overrides', settings: { agentUpdateWindow: { days: ['fri'], startUtc: '23:00', endUtc: '23:30' } } });
    const list = await rest(app, platform.as).get(`/orgs/organizations?partnerId=${partner.id}`);
    expect(list.body.data.map((o: any) => [o.name, o.effectiveAgentUpdateWindow])).toEqual([
      ['A inherits', { days: ['sun'], startUtc: '00:00', endUtc: '06:00', source: 'partner' }],
      ['B overrides', { days: ['fri'], startUtc: '23:00', endUtc: '23:30', source: 'organization' }],
    ]);

    const res = await gql(app, platform.as, `query ($id: ID!) { organization(id: $id) { effectiveAgentUpdateWindow { days startUtc endUtc source } settings { agentUpdateWindow { days } } } }`, {
      id: inherits.id,
    });
    expect(res.body.data.organization).toEqual({
      effectiveAgentUpdateWindow: { days: ['sun'], startUtc: '00:00', endUtc: '06:00', source: 'partner' },
      settings: { agentUpdateWindow: null },
    });
  });
});

describe('GET /orgs/ (the caller’s tenancy context)', () => {
  test('answers the scope, the own partner and a page of visible organizations', async () => {
    const { partnerA, orgA1, orgA2, orgB } = await twoTenants();
    // a viewer reads the partner record, so the context includes it
    const partnerCtx = await rest(app, (await buildUser(app, { partnerId: partnerA.id, role: 'Partner Viewer' })).as).get('/orgs/');
    expect(partnerCtx.status).toBe(200);
    expect(partnerCtx.body.scope).toBe('partner');
    expect(partnerCtx.body.partner).toMatchObject({ id: partnerA.id, name: partnerA.name });
    expect(partnerCtx.body.organizations.data.map((o: any) => o.id).sort()).toEqual([orgA1.id, orgA2.id].sort());
    expect(partnerCtx.body.organizations.pagination).toEqual({ page: 1, limit: 100, total: 2 });

    // a technician may not read the partner record: the context leaves it out
    const technician = await rest(app, (await buildUser(app, { partnerId: partnerA.id, role: 'Partner Technician' })).as).get('/orgs/');
    expect(technician.body).toMatchObject({ scope: 'partner', partner: null, organizations: { pagination: { total: 2 } } });

    const orgCtx = await rest(app, (await buildUser(app, { orgId: orgB.id, role: 'Organization Viewer' })).as).get('/orgs/');
    expect(orgCtx.body).toEqual({
      scope: 'organization',
      partner: null,
      organizations: { data: [expect.objectContaining({ id: orgB.id })], pagination: { page: 1, limit: 100, total: 1 } },
    });

    const systemCtx = await rest(app, platform.as).get(`/orgs/?search=${encodeURIComponent(orgB.name)}`);
    expect(systemCtx.body).toMatchObject({ scope: 'system', partner: null, organizations: { data: [{ id: orgB.id }] } });

    expect((await rest(app).get('/orgs/')).status).toBe(401);
  });
});

describe('tenant isolation', () => {
  // Everything the requests below would need in the caller's own organization: each 404 comes from the tenant, not a missing permission.
  const ORG_AND_SITES: Permission[] = ['organizations:read', 'organizations:write', 'organizations:delete', 'sites:read', 'sites:write', 'sites:delete'];

  test('an organization user cannot list, read, change or delete another organization, its sites or its partner (REST)', async () => {
    const { partnerA, partnerB, orgA1, orgB, siteB } = await twoTenants();
    const api = rest(app, (await buildUser(app, { orgId: orgA1.id, can: ORG_AND_SITES })).as);

    expect((await api.get('/orgs/organizations')).body.data.map((o: any) => o.id)).toEqual([orgA1.id]);
    expect((await api.get(`/orgs/organizations?partnerId=${partnerB.id}`)).body.data).toEqual([]);
    expect((await api.get(`/orgs/sites?orgId=${orgB.id}`)).body).toEqual({ data: [], pagination: { page: 1, limit: 100, total: 0 } });
    expect((await api.get('/orgs/sites')).body.data.map((s: any) => s.orgId)).toEqual([orgA1.id]);

    const notFound = (noun: string) => ({ status: 404, body: { code: 'NOT_FOUND', message: `${noun} not found` } });
    expect(await api.get(`/orgs/organizations/${orgB.id}`)).toMatchObject(notFound('Organization'));
    expect(await api.patch(`/orgs/organizations/${orgB.id}`, { name: 'Mine now' })).toMatchObject(notFound('Organization'));
    expect(await api.delete(`/orgs/organizations/${orgB.id}`)).toMatchObject(notFound('Organization'));
    expect(await api.get(`/orgs/sites/${siteB.id}`)).toMatchObject(notFound('Site'));
    expect(await api.patch(`/orgs/sites/${siteB.id}`, { name: 'Mine now' })).toMatchObject(notFound('Site'));
    expect(await api.delete(`/orgs/sites/${siteB.id}`)).toMatchObject(notFound('Site'));
    expect(await api.post('/orgs/sites', { name: 'Planted', orgId: orgB.id })).toMatchObject(notFound('Organization'));
    // organization users see no partner record, not even their own
    expect(await api.get(`/orgs/partners/${partnerB.id}`)).toMatchObject(notFound('Partner'));
    expect(await api.get(`/orgs/partners/${partnerA.id}`)).toMatchObject(notFound('Partner'));
    expect(await api.patch(`/orgs/partners/${partnerB.id}`, { name: 'x' })).toMatchObject(notFound('Partner'));

    const untouched = rest(app, platform.as);
    expect((await untouched.get(`/orgs/organizations/${orgB.id}`)).body.name).toBe(orgB.name);
    expect((await untouched.get(`/orgs/sites/${siteB.id}`)).body.name).toBe(siteB.name);
    expect((await untouched.get(`/orgs/partners/${partnerB.id}`)).body.name).toBe(partnerB.name);
  });

  test('an organization user cannot reach another organization over GraphQL either', async () => {
    const { partnerB, orgA1, orgB, siteB } = await twoTenants();
    const as = (await buildUser(app, { orgId: orgA1.id, can: ORG_AND_SITES })).as;
    const code = (res: any) => res.body.errors?.[0]?.extensions?.code;

    const list = await gql(app, as, '{ organizations { data { id partner { id } } pagination { total } } sites { data { orgId } } }');
    expect(list.body.data).toEqual({ organizations: { data: [{ id: orgA1.id, partner: null }], pagination: { total: 1 } }, sites: { data: [{ orgId: orgA1.id }] } });

    for (const [query, variables] of [
      ['query ($id: ID!) { organization(id: $id) { id } }', { id: orgB.id }],
      ['mutation ($id: ID!) { updateOrganization(id: $id, input: { name: "Mine now" }) { id } }', { id: orgB.id }],
      ['mutation ($id: ID!) { deleteOrganization(id: $id) }', { id: orgB.id }],
      ['query ($id: ID!) { site(id: $id) { id } }', { id: siteB.id }],
      ['mutation ($id: ID!) { updateSite(id: $id, input: { name: "Mine now" }) { id } }', { id: siteB.id }],
      ['mutation ($id: ID!) { deleteSite(id: $id) }', { id: siteB.id }],
      ['query ($id: ID!) { partner(id: $id) { id } }', { id: partnerB.id }],
      ['mutation ($id: ID!) { createSite(input: { name: "Planted", orgId: $id }) { id } }', { id: orgB.id }],
    ] as const) {
      expect(code(await gql(app, as, query, variables))).toBe('NOT_FOUND');
    }
    expect(await sql(app, 'select name from organization where id = ?', [orgB.id])).toEqual([{ name: orgB.name }]);
    expect(await sql(app, 'select name from site where id = ?', [siteB.id])).toEqual([{ name: siteB.name }]);
  });

  test("a partner user cannot see another partner's organizations", async () => {
    const { partnerA, orgA1, orgA2, orgB, siteB } = await twoTenants();
    const member = await buildUser(app, { partnerId: partnerA.id, can: ['organizations:read', 'organizations:delete', 'sites:read'] });
    const api = rest(app, member.as);
    expect((await api.get('/orgs/organizations')).body.data.map((o: any) => o.id).sort()).toEqual([orgA1.id, orgA2.id].sort());
    expect(await api.get(`/orgs/organizations/${orgB.id}`)).toMatchObject({ status: 404, body: { message: 'Organization not found' } });
    expect((await api.delete(`/orgs/organizations/${orgB.id}`)).status).toBe(404);
    expect((await api.get(`/orgs/sites/${siteB.id}`)).status).toBe(404);

    const res = await gql(app, member.as, 'query ($id: ID!) { organizations { data { id } } organization(id: $id) { id } }', { id: orgB.id });
    expect(res.body.errors?.[0]).toMatchObject({ message: 'Organization not found', extensions: { code: 'NOT_FOUND' } });
  });

  test('a partner user limited to selected organizations sees and changes only those, and their sites', async () => {
    const { partnerA, orgA1, orgA2, siteA1, siteA2 } = await twoTenants();
    const user = await buildUser(app, { partnerId: partnerA.id, can: ['organizations:read', 'organizations:write', 'sites:read', 'sites:write'], orgAccess: 'selected', orgIds: [orgA1.id] });
    const api = rest(app, user.as);
    expect((await api.get('/orgs/organizations')).body.data.map((o: any) => o.id)).toEqual([orgA1.id]);
    expect((await api.get('/orgs/')).body.organizations.data.map((o: any) => o.id)).toEqual([orgA1.id]);
    expect((await api.get('/orgs/sites')).body.data.map((s: any) => s.id)).toEqual([siteA1.id]);
    expect((await api.get(`/orgs/sites?orgId=${orgA2.id}`)).body.data).toEqual([]);
    expect((await api.get(`/orgs/organizations/${orgA2.id}`)).status).toBe(404);
    expect((await api.patch(`/orgs/organizations/${orgA2.id}`, { name: 'x' })).status).toBe(404);
    expect((await api.get(`/orgs/sites/${siteA2.id}`)).status).toBe(404);
    expect((await api.post('/orgs/sites', { name: 'Unselected', orgId: orgA2.id })).status).toBe(404);
    expect((await api.patch(`/orgs/organizations/${orgA1.id}`, { name: 'Selected and renamed' })).status).toBe(200);

    const res = await gql(app, user.as, '{ organizations { data { id } } sites { data { id } } }');
    expect(res.body.data).toEqual({ organizations: { data: [{ id: orgA1.id }] }, sites: { data: [{ id: siteA1.id }] } });
  });
});

describe('partners and organizations over GraphQL', () => {
  test('create, list, read, update and delete, with the partner resolved through the organization', async () => {
    const created = await gql(
      app,
      platform.as,
      `mutation { createPartner(input: { name: "GraphQL MSP", settings: { agentUpdateWindow: { days: [sun], startUtc: "02:00", endUtc: "05:00" } } }) { id name settings { agentUpdateWindow { days } } } }`,
    );
    expect(created.body.errors).toBeUndefined();
    const partnerId = created.body.data.createPartner.id;
    expect(created.body.data.createPartner).toMatchObject({ name: 'GraphQL MSP', settings: { agentUpdateWindow: { days: ['sun'] } } });

    const partnerUser = await buildUser(app, { partnerId, can: ['partners:read', 'partners:write', 'organizations:read', 'organizations:write', 'organizations:delete'] });
    const org = await gql(app, partnerUser.as, `mutation { createOrganization(input: { name: "Org via GraphQL" }) { id partnerId partner { name } effectiveAgentUpdateWindow { source } } }`);
    expect(org.body.data.createOrganization).toMatchObject({ partnerId, partner: { name: 'GraphQL MSP' }, effectiveAgentUpdateWindow: { source: 'partner' } });
    const orgId = org.body.data.createOrganization.id;

    const read = await gql(
      app,
      partnerUser.as,
      `query ($id: ID!) { myPartner { id } partners { data { id } pagination { total } } organization(id: $id) { name } organizations(search: "via graphql") { data { id } pagination { total limit } } tenancy { scope partner { id } organizations { pagination { total } } } }`,
      { id: orgId },
    );
    expect(read.body.data).toEqual({
      myPartner: { id: partnerId },
      partners: { data: [{ id: partnerId }], pagination: { total: 1 } },
      organization: { name: 'Org via GraphQL' },
      organizations: { data: [{ id: orgId }], pagination: { total: 1, limit: 100 } },
      tenancy: { scope: 'partner', partner: { id: partnerId }, organizations: { pagination: { total: 1 } } },
    });

    const updated = await gql(app, partnerUser.as, `mutation ($id: ID!) { updateOrganization(id: $id, input: { contactEmail: "it@org.test" }) { contactEmail } }`, { id: orgId });
    expect(updated.body.data.updateOrganization).toEqual({ contactEmail: 'it@org.test' });
    const renamed = await gql(app, partnerUser.as, `mutation ($id: ID!) { updatePartner(id: $id, input: { name: "GraphQL MSP 2" }) { name } }`, { id: partnerId });
    expect(renamed.body.data.updatePartner).toEqual({ name: 'GraphQL MSP 2' });

    expect((await gql(app, partnerUser.as, `mutation ($id: ID!) { deleteOrganization(id: $id) }`, { id: orgId })).body.data).toEqual({ deleteOrganization: true });
    expect((await gql(app, platform.as, `mutation ($id: ID!) { deletePartner(id: $id) }`, { id: partnerId })).body.data).toEqual({ deletePartner: true });

    expect((await auditOf(app, orgId, AUDIT_COLUMNS)).map((r) => [r.action, r.changes])).toEqual([
      ['organization.create', ['name', 'partnerId']],
      ['organization.update', ['contactEmail']],
      ['organization.delete', []],
    ]);
    expect((await auditOf(app, partnerId, AUDIT_COLUMNS)).map((r) => r.action)).toEqual(['partner.create', 'partner.update', 'partner.delete']);
  });

  test('validation and permission errors carry their codes', async () => {
    const org = await buildOrg(app);
    const empty = await gql(app, platform.as, `mutation { createPartner(input: { name: "" }) { id } }`);
    expect(empty.body.errors?.[0]).toMatchObject({ message: 'name: Too small: expected string to have >=1 characters', extensions: { code: 'VALIDATION_ERROR' } });
    const badTime = await gql(app, platform.as, `mutation ($id: ID!) { updateOrganization(id: $id, input: { settings: { agentUpdateWindow: { days: [mon], startUtc: "9:00", endUtc: "10:00" } } }) { id } }`, {
      id: org.id,
    });
    expect(badTime.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_ERROR', details: [{ path: 'settings.agentUpdateWindow.startUtc' }] });

    const viewer = await buildUser(app, { orgId: org.id, role: 'Organization Viewer' });
    const denied = await gql(app, viewer.as, `mutation ($id: ID!) { updateOrganization(id: $id, input: { name: "nope" }) { id } }`, { id: org.id });
    expect(denied.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const noPartner = await gql(app, viewer.as, '{ myPartner { id } }');
    expect(noPartner.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_ERROR');
  });
});
