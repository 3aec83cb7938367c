import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import { auditOf, sql } from './support/db.js';
import { buildOrg, buildPartner, buildSite, buildUser, type BuiltUser } from './support/factories.js';

let app: TestApp;
let platform: BuiltUser;

beforeAll(async () => {
  app = await createTestApp();
  platform = await buildUser(app, { can: ['sites:write'] });
});
afterAll(async () => {
  await app.stop();
});

const AUDIT_COLUMNS = ['action', 'resource_type', 'org_id', 'partner_id', 'actor_id', 'changes'];

/** An organization user whose membership is limited to `siteIds`, holding every site permission (and reading the organization). */
async function siteLimitedUser(orgId: string, siteIds: string[]): Promise<BuiltUser> {
  const user = await buildUser(app, { orgId, can: ['sites:read', 'sites:write', 'sites:delete', 'organizations:read'] });
  await sql(app, `update membership set site_ids = ?::jsonb where id = ?`, [JSON.stringify(siteIds), user.membership.id]);
  return user;
}

describe('sites over REST', () => {
  test('an organization user creates a site in their organization, then reads, updates and deletes it, each change audited with an event', async () => {
    const org = await buildOrg(app);
    const member = await buildUser(app, { orgId: org.id, can: ['sites:read', 'sites:write', 'sites:delete'] });
    const api = rest(app, member.as);
    const created = await api.post('/orgs/sites', { name: 'Head office', timezone: 'Europe/Paris' });
    expect(created.status).toBe(201);
    const id = created.body.id;
    expect(created.body).toEqual({
      id: expect.any(String),
      orgId: org.id,
      name: 'Head office',
      timezone: 'Europe/Paris',
      address: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect((await api.get(`/orgs/sites/${id}`)).body).toEqual(created.body);
    const patched = await api.patch(`/orgs/sites/${id}`, { address: '1 Rue de Rivoli, Paris', timezone: 'Europe/Paris' });
    expect(patched.body).toMatchObject({ address: '1 Rue de Rivoli, Paris', timezone: 'Europe/Paris' });
    expect((await api.delete(`/orgs/sites/${id}`)).status).toBe(204);
    expect(await api.get(`/orgs/sites/${id}`)).toMatchObject({ status: 404, body: { message: 'Site not found' } });

    const row = { resource_type: 'site', org_id: org.id, partner_id: org.partnerId, actor_id: member.user.id };
    expect(await auditOf(app, id, AUDIT_COLUMNS)).toEqual([
      { ...row, action: 'site.create', changes: ['name', 'timezone', 'orgId'] },
      { ...row, action: 'site.update', changes: ['address'] },
      { ...row, action: 'site.delete', changes: [] },
    ]);
    const events = await sql(app, `select type, org_id, data from outbox_event where data->>'siteId' = ? order by created_at`, [id]);
    expect(events).toEqual([
      { type: 'site.created', org_id: org.id, data: { siteId: id, orgId: org.id, name: 'Head office', changes: ['name', 'timezone', 'orgId'] } },
      { type: 'site.updated', org_id: org.id, data: { siteId: id, orgId: org.id, name: 'Head office', changes: ['address'] } },
      { type: 'site.deleted', org_id: org.id, data: { siteId: id, orgId: org.id, name: 'Head office' } },
    ]);
  });

  test('partner and platform callers must name the organization', async () => {
    const org = await buildOrg(app);
    const partnerTech = rest(app, (await buildUser(app, { partnerId: org.partnerId, role: 'Partner Technician' })).as);
    expect(await partnerTech.post('/orgs/sites', { name: 'Where?' })).toMatchObject({ status: 400, body: { code: 'VALIDATION_ERROR', message: 'Organization context required' } });
    const created = await partnerTech.post('/orgs/sites', { name: 'Branch', orgId: org.id });
    expect(created).toMatchObject({ status: 201, body: { orgId: org.id, timezone: 'UTC' } });
    expect((await rest(app, platform.as).post('/orgs/sites', { name: 'Depot', orgId: org.id })).status).toBe(201);
    expect((await rest(app, platform.as).post('/orgs/sites', { name: 'Ghost', orgId: '00000000-0000-4000-8000-00000000dead' })).status).toBe(404);
  });

  test('invalid input is a 400 VALIDATION_ERROR; a site cannot be moved to another organization', async () => {
    const org = await buildOrg(app);
    const site = await buildSite(app, org.id);
    const api = rest(app, (await buildUser(app, { orgId: org.id, can: ['sites:read', 'sites:write'] })).as);
    const cases: [unknown, string][] = [
      [{ name: '' }, 'name'],
      [{ name: 'Ok', timezone: 'Mars/Olympus_Mons' }, 'timezone'],
      [{ name: 'Ok', orgId: 'not-a-uuid' }, 'orgId'],
      [{ name: 'Ok', id: site.id }, ''],
    ];
    for (const [body, path] of cases) {
      const res = await api.post('/orgs/sites', body);
      expect(res).toMatchObject({ status: 400, body: { code: 'VALIDATION_ERROR' } });
      expect(res.body.details[0].path).toBe(path);
    }
    const moved = await api.patch(`/orgs/sites/${site.id}`, { orgId: (await buildOrg(app)).id });
    expect(moved).toMatchObject({ status: 400, body: { code: 'VALIDATION_ERROR' } });
    expect((await api.get(`/orgs/sites/${site.id}`)).body.orgId).toBe(org.id);
  });

  test('the list filters by organization and name, and pages', async () => {
    const partner = await buildPartner(app);
    const org1 = await buildOrg(app, { partnerId: partner.id });
    const org2 = await buildOrg(app, { partnerId: partner.id });
    await buildSite(app, org1.id, { name: 'North' });
    await buildSite(app, org1.id, { name: 'South' });
    await buildSite(app, org2.id, { name: 'North annex' });
    const api = rest(app, (await buildUser(app, { partnerId: partner.id, role: 'Partner Viewer' })).as);
    const names = async (q: string) => (await api.get(`/orgs/sites?${q}`)).body.data.map((s: any) => s.name);
    expect(await names('')).toEqual(['North', 'North annex', 'South']);
    expect(await names(`orgId=${org1.id}`)).toEqual(['North', 'South']);
    expect(await names('search=north')).toEqual(['North', 'North annex']);
    expect((await api.get('/orgs/sites?limit=2&page=2')).body).toEqual({ data: [expect.objectContaining({ name: 'South' })], pagination: { page: 2, limit: 2, total: 3 } });
    expect((await api.get('/orgs/sites?orgId=nope')).status).toBe(400);
  });

  test('organization users limited to some sites see and change only those, and cannot create sites', async () => {
    const org = await buildOrg(app);
    const mine = await buildSite(app, org.id, { name: 'Mine' });
    const other = await buildSite(app, org.id, { name: 'Not mine' });
    const user = await siteLimitedUser(org.id, [mine.id]);
    const api = rest(app, user.as);
    expect((await api.get('/orgs/sites')).body).toEqual({ data: [expect.objectContaining({ id: mine.id })], pagination: { page: 1, limit: 100, total: 1 } });
    expect((await api.get(`/orgs/sites/${mine.id}`)).status).toBe(200);
    expect(await api.get(`/orgs/sites/${other.id}`)).toMatchObject({ status: 404, body: { message: 'Site not found' } });
    expect((await api.patch(`/orgs/sites/${other.id}`, { name: 'Taken' })).status).toBe(404);
    expect((await api.delete(`/orgs/sites/${other.id}`)).status).toBe(404);
    expect(await api.post('/orgs/sites', { name: 'New' })).toMatchObject({ status: 403, body: { message: 'Users limited to some sites cannot create sites' } });
    expect((await api.patch(`/orgs/sites/${mine.id}`, { name: 'Mine, renamed' })).body.name).toBe('Mine, renamed');

    const res = await gql(app, user.as, '{ sites { data { id } } }');
    expect(res.body.data).toEqual({ sites: { data: [{ id: mine.id }] } });
    expect(await sql(app, 'select name from site where id = ?', [other.id])).toEqual([{ name: 'Not mine' }]);
  });

  test('viewers and technicians cannot change sites', async () => {
    const org = await buildOrg(app);
    const site = await buildSite(app, org.id);
    for (const role of ['Organization Viewer', 'Organization Technician']) {
      const api = rest(app, (await buildUser(app, { orgId: org.id, role })).as);
      expect((await api.get(`/orgs/sites/${site.id}`)).status).toBe(200);
      expect(await api.post('/orgs/sites', { name: 'New' })).toMatchObject({ status: 403, body: { code: 'FORBIDDEN' } });
      expect(await api.patch(`/orgs/sites/${site.id}`, { name: 'Changed' })).toMatchObject({ status: 403, body: { code: 'FORBIDDEN' } });
      expect(await api.delete(`/orgs/sites/${site.id}`)).toMatchObject({ status: 403, body: { code: 'FORBIDDEN' } });
    }
    expect(await sql(app, 'select name from site where id = ?', [site.id])).toEqual([{ name: site.name }]);
  });
});

describe('sites over GraphQL', () => {
  test('create, list, read, update and delete, with the organization resolved through the site', async () => {
    const org = await buildOrg(app);
    const member = await buildUser(app, { orgId: org.id, can: ['sites:read', 'sites:write', 'sites:delete', 'organizations:read'] });
    const created = await gql(app, member.as, `mutation { createSite(input: { name: "Lab", timezone: "America/New_York" }) { id orgId timezone organization { id name } } }`);
    expect(created.body.errors).toBeUndefined();
    const site = created.body.data.createSite;
    expect(site).toMatchObject({ orgId: org.id, timezone: 'America/New_York', organization: { id: org.id, name: org.name } });

    const read = await gql(app, member.as, `query ($id: ID!, $orgId: ID!) { site(id: $id) { name } sites(orgId: $orgId, limit: 5) { data { id } pagination { limit total } } }`, {
      id: site.id,
      orgId: org.id,
    });
    expect(read.body.data).toEqual({ site: { name: 'Lab' }, sites: { data: [{ id: site.id }], pagination: { limit: 5, total: 1 } } });

    const updated = await gql(app, member.as, `mutation ($id: ID!) { updateSite(id: $id, input: { name: "Lab 2", address: null }) { name address } }`, { id: site.id });
    expect(updated.body.data.updateSite).toEqual({ name: 'Lab 2', address: null });
    // GraphQL cannot mark a field "optional but not null": a null name means "not given", as over REST
    const nulled = await gql(app, member.as, `mutation ($id: ID!) { updateSite(id: $id, input: { name: null }) { name createdAt } }`, { id: site.id });
    expect(nulled.body.data.updateSite).toEqual({ name: 'Lab 2', createdAt: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/) });
    expect((await gql(app, member.as, `mutation ($id: ID!) { deleteSite(id: $id) }`, { id: site.id })).body.data).toEqual({ deleteSite: true });
    expect((await auditOf(app, site.id, AUDIT_COLUMNS)).map((r) => [r.action, r.changes])).toEqual([
      ['site.create', ['name', 'timezone', 'orgId']],
      ['site.update', ['name']],
      ['site.delete', []],
    ]);
  });

  test('a user limited to some sites sees only those, and other sites and other tenants\' sites are 404', async () => {
    const org = await buildOrg(app);
    const mine = await buildSite(app, org.id, { name: 'A' });
    const other = await buildSite(app, org.id, { name: 'B' });
    const stranger = await buildSite(app, (await buildOrg(app)).id, { name: 'Elsewhere' });
    const user = await siteLimitedUser(org.id, [mine.id]);
    const list = await gql(app, user.as, `query ($orgId: ID!) { sites(orgId: $orgId) { data { id } pagination { total } } }`, { orgId: org.id });
    expect(list.body.data).toEqual({ sites: { data: [{ id: mine.id }], pagination: { total: 1 } } });
    expect((await gql(app, user.as, `query ($id: ID!) { site(id: $id) { name organization { id } } }`, { id: mine.id })).body.data).toEqual({ site: { name: 'A', organization: { id: org.id } } });
    for (const id of [other.id, stranger.id, 'not-a-uuid']) {
      const res = await gql(app, user.as, `query ($id: ID!) { site(id: $id) { id } }`, { id });
      expect(res.body.errors?.[0]).toMatchObject({ message: 'Site not found', extensions: { code: 'NOT_FOUND' } });
      const deleted = await gql(app, user.as, `mutation ($id: ID!) { deleteSite(id: $id) }`, { id });
      expect(deleted.body.errors?.[0]).toMatchObject({ message: 'Site not found', extensions: { code: 'NOT_FOUND' } });
    }
    // An unlimited member of the organization still gets 404 for another tenant's site, and an empty list for its organization.
    const unlimited = rest(app, (await buildUser(app, { orgId: org.id, role: 'Organization Viewer' })).as);
    expect(await unlimited.get(`/orgs/sites/${stranger.id}`)).toMatchObject({ status: 404, body: { message: 'Site not found' } });
    expect((await unlimited.get(`/orgs/sites?orgId=${stranger.orgId}`)).body.pagination.total).toBe(0);
    expect((await unlimited.get('/orgs/sites')).body.data.map((s: { id: string }) => s.id).sort()).toEqual([mine.id, other.id].sort());
  });

  test('errors carry their codes', async () => {
    const org = await buildOrg(app);
    const member = await buildUser(app, { orgId: org.id, can: ['sites:write'] });
    const bad = await gql(app, member.as, `mutation { createSite(input: { name: "X", timezone: "Nowhere/Land" }) { id } }`);
    expect(bad.body.errors?.[0]?.extensions).toMatchObject({ code: 'VALIDATION_ERROR', details: [{ path: 'timezone' }] });
    const partnerTech = await buildUser(app, { partnerId: org.partnerId, role: 'Partner Technician' });
    const noOrg = await gql(app, partnerTech.as, `mutation { createSite(input: { name: "X" }) { id } }`);
    expect(noOrg.body.errors?.[0]).toMatchObject({ message: 'Organization context required', extensions: { code: 'VALIDATION_ERROR' } });
    const viewer = await buildUser(app, { orgId: org.id, role: 'Organization Viewer' });
    const denied = await gql(app, viewer.as, `mutation { createSite(input: { name: "X" }) { id } }`);
    expect(denied.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });
});
