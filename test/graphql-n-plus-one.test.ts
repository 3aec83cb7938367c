import { RequestContext } from '../src/auth/context.js';
import { endSuppressions } from '../src/services/alerts/alerts.js';
import { createTestApp, type TestApp } from './support/app.js';
import { gql } from './support/clients.js';
import { sql, statementsOn } from './support/db.js';
import { raiseAlert } from './support/alert-events.js';
import { agentCall, enroll, fleet } from './support/devices.js';
import { buildOrg, buildPartner, buildSite, buildUser, type BuiltUser } from './support/factories.js';

/**
 * A dashboard's devices page reads each device's organization, site, last heartbeat, open alerts and groups. Every
 * relation resolves through request-scoped DataLoaders, so the statements a page sends do not grow
 * with its size: a page of 50 costs what a page of 5 does, table by table.
 */

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => {
  await app.stop();
});

const TABLES = ['device', 'organization', 'partner', 'site', 'device_group', 'device_group_member', 'device_command', 'alert'] as const;

const dashboard = (first: number) => `{
  devices(first: ${first}, sort: hostname) {
    totalCount
    pageInfo { hasNextPage endCursor }
    edges { cursor node {
      id hostname status lastSeenAt tags openAlertsCount
      organization { id name status }
      site { id name timezone }
      groups(first: 10) { totalCount edges { node { id name type deviceCount } } }
      commands(first: 3) { totalCount edges { node { id type status } } }
    } }
  }
}`;

/** The page, and the statements it sent per table (each counted by `statementsOn`, nested). */
async function measure(viewer: BuiltUser, first: number): Promise<{ data: any; statements: Record<string, number> }> {
  const statements: Record<string, number> = {};
  const run = async (tables: readonly string[]): Promise<any> => {
    if (tables.length === 0) {
      const res = await gql(app, viewer.as, dashboard(first));
      expect(res.body.errors).toBeUndefined();
      return res.body.data;
    }
    const [table, ...rest] = tables;
    const { result, statements: n } = await statementsOn(app, table!, () => run(rest));
    statements[table!] = n;
    return result;
  };
  return { data: await run(TABLES), statements };
}

test('a devices page with organization, site, last heartbeat, groups and commands costs the same statements for 5 devices as for 50', async () => {
  const { org, api, key } = await fleet(app);
  const sites = [await buildSite(app, org.id, { name: 'North' }), await buildSite(app, org.id, { name: 'South' })];
  const agents = [];
  for (let i = 0; i < 50; i++) agents.push(await enroll(app, key, `host-${String(i).padStart(2, '0')}`));
  await sql(app, `update device set site_id = case when hostname < 'host-25' then ?::uuid when hostname < 'host-45' then ?::uuid end, tags = '["prod"]' where org_id = ?`, [sites[0]!.id, sites[1]!.id, org.id]);
  await agentCall(app, agents[0]!, '/heartbeat', { agentVersion: '1.0.0' });
  for (const name of ['Servers', 'Laptops']) {
    const group = await api.post('/groups', { name, type: 'static' });
    expect(group.status).toBe(201);
    const added = await api.post(`/groups/${group.body.id}/devices`, { deviceIds: agents.filter((_, i) => name === 'Servers' || i % 2 === 0).map((a) => a.deviceId) });
    expect(added.status).toBe(200);
  }
  for (const severity of ['critical', 'low'] as const) await raiseAlert(app, { orgId: org.id, deviceId: agents[0]!.deviceId, severity });
  await raiseAlert(app, { orgId: org.id, deviceId: agents[1]!.deviceId, severity: 'high' });
  const viewer = await buildUser(app, { orgId: org.id, can: ['devices:read', 'organizations:read', 'sites:read', 'alerts:read'] });

  const small = await measure(viewer, 5);
  const large = await measure(viewer, 50);

  expect(small.data.devices.edges).toHaveLength(5);
  expect(large.data.devices.edges).toHaveLength(50);
  const first = large.data.devices.edges[0].node;
  expect(first).toMatchObject({
    hostname: 'host-00',
    tags: ['prod'],
    openAlertsCount: 2,
    organization: { id: org.id, name: org.name },
    site: { id: sites[0]!.id, name: 'North' },
    groups: { totalCount: 2, edges: [{ node: { name: 'Laptops', type: 'static', deviceCount: 25 } }, { node: { name: 'Servers', type: 'static', deviceCount: 50 } }] },
  });
  expect(Date.parse(first.lastSeenAt)).not.toBeNaN();
  expect(large.data.devices.edges[1].node.groups.edges.map((e: any) => e.node.name)).toEqual(['Servers']);
  expect(large.data.devices.edges.slice(1, 3).map((e: any) => e.node.openAlertsCount)).toEqual([1, 0]);
  expect(large.data.devices.edges[44].node.site.name).toBe('South');
  expect(large.data.devices.edges[49].node.site).toBeNull();

  // The same statements, table by table, whatever the page size: none is sent per device.
  expect(large.statements).toEqual(small.statements);
  for (const table of ['organization', 'site', 'device_group', 'device_group_member', 'device_command', 'alert']) expect(large.statements[table]).toBeGreaterThan(0);
  for (const table of TABLES) expect(large.statements[table]).toBeLessThanOrEqual(3);
});

test("a partner's sites with their organization, and its organizations with their partner: one statement per relation, whatever the page", async () => {
  const partner = await buildPartner(app);
  const orgs = [];
  for (let i = 0; i < 6; i++) {
    const org = await buildOrg(app, { partnerId: partner.id, name: `Customer ${i}` });
    orgs.push(org);
    await buildSite(app, org.id, { name: `Site ${i}` });
  }
  const viewer = await buildUser(app, { partnerId: partner.id, can: ['partners:read', 'organizations:read', 'sites:read'] });
  const read = async (first: number) => {
    const query = `{ sites(first: ${first}) { edges { node { name organization { id name } } } } organizations(first: ${first}) { edges { node { name partner { id } } } } }`;
    const { result: orgStatements, statements: onOrganization } = await statementsOn(app, 'organization', () =>
      statementsOn(app, 'partner', async () => {
        const res = await gql(app, viewer.as, query);
        expect(res.body.errors).toBeUndefined();
        return res.body.data;
      }),
    );
    return { data: orgStatements.result, onOrganization, onPartner: orgStatements.statements };
  };
  const small = await read(2);
  const large = await read(6);
  expect(large.data.sites.edges).toHaveLength(6);
  expect(large.data.sites.edges.every((e: any) => e.node.organization.name === e.node.name.replace('Site', 'Customer'))).toBe(true);
  expect(large.data.organizations.edges.every((e: any) => e.node.partner.id === partner.id)).toBe(true);
  expect([large.onOrganization, large.onPartner]).toEqual([small.onOrganization, small.onPartner]);
});

test('only the request’s own statements are counted: the background due check reading the same table meanwhile is not', async () => {
  const { org } = await fleet(app);
  const viewer = await buildUser(app, { orgId: org.id, can: ['alerts:read'] });
  const summary = () => gql(app, viewer.as, '{ alertSummary { total } }');
  const alone = await statementsOn(app, 'alert', summary);
  // The alerts job's tick (suppressions that ended) runs while the request is answered, on the same ORM connection.
  const beside = await statementsOn(app, 'alert', async () => (await Promise.all([summary(), endSuppressions(RequestContext.system(app.server.runtime, 'test: the due check'))]))[0]);
  expect([alone.result.body.errors, beside.result.body.errors]).toEqual([undefined, undefined]);
  expect([alone.statements, beside.statements]).toEqual([1, 1]);
});
