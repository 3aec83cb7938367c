import fs from 'node:fs';
import { Site } from '../entities/site.js';
import { Membership } from '../entities/user.js';
import { authenticate } from '../src/auth/authenticate.js';
import { RequestContext } from '../src/auth/context.js';
import { domains } from '../src/domains.js';
import { tenantSql, tenantWhere, type TenantColumns } from '../src/auth/policy.js';
import { requestRows, statement } from '../src/db/prepared.js';
import { createTestApp, type TestApp } from './support/app.js';
import { rest } from './support/clients.js';
import { sql } from './support/db.js';
import { buildOrg, buildPartner, buildSite, buildUser, type BuildUserOptions } from './support/factories.js';
import type { PolicyRows, SeededRole } from './policy/rows.js';

// The role × action table: what each seeded role may do, written out by hand per domain in
// test/policy/<domain>.ts (not derived from the role definitions it checks), one request per
// permission, through the real REST door. Every file there is read: a domain adds its own.

const POLICY_DIR = new URL('./policy/', import.meta.url);
const rowFiles = fs.readdirSync(POLICY_DIR).filter((file) => file.endsWith('.ts') && file !== 'rows.ts');
const ACTIONS: PolicyRows = Object.assign({}, ...(await Promise.all(rowFiles.map(async (file) => ((await import(`./policy/${file}`)) as { rows: PolicyRows }).rows))));
const ROLES: { name: SeededRole; scope: 'organization' | 'partner' }[] = [
  { name: 'Organization Admin', scope: 'organization' },
  { name: 'Organization Technician', scope: 'organization' },
  { name: 'Organization Viewer', scope: 'organization' },
  { name: 'Partner Admin', scope: 'partner' },
  { name: 'Partner Technician', scope: 'partner' },
  { name: 'Partner Viewer', scope: 'partner' },
];

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => {
  await app.stop();
});

test('every domain that declares permissions has its rows in test/policy/', () => {
  const declaring = domains.filter((domain) => Object.keys(domain.permissions ?? {}).length > 0).map((domain) => `${domain.name}.ts`);
  expect(declaring.filter((file) => !rowFiles.includes(file))).toEqual([]);
});

describe.each(ROLES)('$name', ({ name: roleName, scope }) => {
  test.each(Object.keys(ACTIONS))('%s', async (name) => {
    const org = await buildOrg(app);
    const user = await buildUser(app, scope === 'organization' ? { orgId: org.id, role: roleName } : { partnerId: org.partnerId, role: roleName });
    const action = ACTIONS[name]!;
    const { method, path, body } = action.request({ orgId: org.id, partnerId: org.partnerId });
    const api = rest(app, user.as);
    const scopedPath = scope === 'partner' && action.orgQuery ? `${path}${path.includes('?') ? '&' : '?'}orgId=${org.id}` : path;
    const res = method === 'get' || method === 'delete' ? await api[method](scopedPath) : await api[method](path, body);
    if (action.may.includes(roleName)) expect(res.status).toBe(action.ok);
    else expect([res.status, res.body?.code]).toEqual([403, 'FORBIDDEN']);
  });
});

/**
 * The two writings of a list's tenant decision: `tenantWhere` (a MikroORM filter, most lists) and
 * `tenantSql` (SQL for the hand-written statements of the user list). For every kind of caller both
 * select the same rows of the same table, and those are the rows written out here by hand.
 */
describe('tenantWhere and tenantSql select the same rows', () => {
  // Partner P1 holds organizations A1 (sites a1, a1b) and A2 (site a2); partner P2 holds B1 (site b1).
  let places: Record<'P1' | 'P2' | 'A1' | 'A2' | 'B1', string>;
  let sites: Record<'a1' | 'a1b' | 'a2' | 'b1', string>;
  /** every membership made here, by where it is: an organization, a partner's own level, or `system` */
  const memberships = new Map<string, string>();

  async function member(place: keyof typeof places | 'system', options: BuildUserOptions) {
    const built = await buildUser(app, options);
    memberships.set(built.membership.id, place);
    return built;
  }

  beforeAll(async () => {
    const [p1, p2] = [await buildPartner(app), await buildPartner(app)];
    const [a1, a2, b1] = [await buildOrg(app, { partnerId: p1.id }), await buildOrg(app, { partnerId: p1.id }), await buildOrg(app, { partnerId: p2.id })];
    places = { P1: p1.id, P2: p2.id, A1: a1.id, A2: a2.id, B1: b1.id };
    sites = { a1: (await buildSite(app, a1.id)).id, a1b: (await buildSite(app, a1.id)).id, a2: (await buildSite(app, a2.id)).id, b1: (await buildSite(app, b1.id)).id };
    // Bystanders at every level, so each filter has rows to leave out.
    for (const [place, options] of [
      ['A1', { orgId: a1.id }],
      ['A2', { orgId: a2.id }],
      ['B1', { orgId: b1.id }],
      ['P1', { partnerId: p1.id }],
      ['P2', { partnerId: p2.id }],
      ['system', {}],
    ] as const) {
      await member(place, { ...options, can: ['users:read'] });
    }
  });

  type Caller = { place: keyof typeof places | 'system'; orgAccess?: 'selected'; orgIds?: (keyof typeof places)[]; siteIds?: (keyof typeof sites)[] };
  interface Case {
    caller: Caller;
    requestedOrgId?: keyof typeof places;
    /** where the memberships it lists are (membership rows: organization and partner columns) */
    memberships: (keyof typeof places | 'system')[];
    /** the sites it lists (site rows: organization and site columns) */
    sites: (keyof typeof sites)[];
  }
  const ALL_SITES: (keyof typeof sites)[] = ['a1', 'a1b', 'a2', 'b1'];
  const CASES: Record<string, Case> = {
    'a platform user': { caller: { place: 'system' }, memberships: ['A1', 'A2', 'B1', 'P1', 'P2', 'system'], sites: ALL_SITES },
    'a platform user naming an organization': { caller: { place: 'system' }, requestedOrgId: 'B1', memberships: ['B1'], sites: ['b1'] },
    'a partner user (all organizations)': { caller: { place: 'P1' }, memberships: ['A1', 'A2', 'P1'], sites: ['a1', 'a1b', 'a2'] },
    'a partner user naming its organization': { caller: { place: 'P1' }, requestedOrgId: 'A2', memberships: ['A2'], sites: ['a2'] },
    "a partner user naming another partner's organization": { caller: { place: 'P1' }, requestedOrgId: 'B1', memberships: [], sites: [] },
    // The selection names another partner's organization too: it can only narrow the partner's own.
    'a partner user with selected organizations': { caller: { place: 'P1', orgAccess: 'selected', orgIds: ['A1', 'B1'] }, memberships: ['A1', 'P1'], sites: ['a1', 'a1b'] },
    'a partner user naming an organization outside its selection': { caller: { place: 'P1', orgAccess: 'selected', orgIds: ['A1'] }, requestedOrgId: 'A2', memberships: [], sites: [] },
    'an organization user': { caller: { place: 'A1' }, memberships: ['A1'], sites: ['a1', 'a1b'] },
    'an organization user naming another organization': { caller: { place: 'A1' }, requestedOrgId: 'A2', memberships: [], sites: [] },
    'a site-limited organization user': { caller: { place: 'A1', siteIds: ['a1'] }, memberships: ['A1'], sites: ['a1'] },
    'a site-limited organization user naming its organization': { caller: { place: 'A1', siteIds: ['a1'] }, requestedOrgId: 'A1', memberships: ['A1'], sites: ['a1'] },
    'a site-limited organization user naming another organization': { caller: { place: 'A1', siteIds: ['a1'] }, requestedOrgId: 'A2', memberships: [], sites: [] },
  };

  /** The caller's request context, its principal read by `authenticate` as a request's would be. */
  async function contextOf(caller: Caller): Promise<RequestContext> {
    const where = caller.place === 'system' ? {} : caller.place.startsWith('P') ? { partnerId: places[caller.place] } : { orgId: places[caller.place] };
    const built = await member(caller.place, { ...where, can: ['users:read'], orgAccess: caller.orgAccess, orgIds: caller.orgIds?.map((p) => places[p]) });
    if (caller.siteIds) await sql(app, `update membership set site_ids = ?::jsonb where id = ?`, [JSON.stringify(caller.siteIds.map((s) => sites[s])), built.membership.id]);
    const runtime = app.server.runtime;
    return RequestContext.create(runtime, await authenticate(runtime, { authorization: `Bearer ${built.token}` }));
  }

  /** The ids a list of `table` shows under each writing of the filter. */
  async function bothWays(ctx: RequestContext, table: 'membership' | 'site', columns: TenantColumns, sqlColumns: TenantColumns) {
    const entity = table === 'membership' ? Membership : Site;
    const where = await tenantWhere<{ id: string }>(ctx, columns);
    const byWhere = (await ctx.em.fork().find(entity as typeof Site, (where ?? {}) as object, { fields: ['id'] })).map((row) => row.id);
    const condition = await tenantSql(ctx, sqlColumns);
    const bySql = (await requestRows<{ id: string }>(ctx.em, statement(`select t.id from ${table} t where ${condition?.sql ?? 'true'}`), condition?.params ?? [])).map((row) => row.id);
    return { byWhere: byWhere.sort(), bySql: bySql.sort() };
  }

  test.each(Object.entries(CASES))('%s', async (_name, { caller, requestedOrgId, memberships: placesSeen, sites: sitesSeen }) => {
    const ctx = await contextOf(caller);
    const requested = requestedOrgId && places[requestedOrgId];

    const listed = await bothWays(ctx, 'membership', { org: 'orgId', partner: 'partnerId', requestedOrgId: requested }, { org: 't.org_id', partner: 't.partner_id', requestedOrgId: requested });
    expect(listed.bySql).toEqual(listed.byWhere);
    const mine = listed.byWhere.filter((id) => memberships.has(id));
    const expected = [...memberships].filter(([, place]) => placesSeen.includes(place as never)).map(([id]) => id);
    expect(mine.sort()).toEqual(expected.sort());

    const siteRows = await bothWays(ctx, 'site', { org: 'orgId', site: 'id', requestedOrgId: requested }, { org: 't.org_id', site: 't.id', requestedOrgId: requested });
    expect(siteRows.bySql).toEqual(siteRows.byWhere);
    const fixtureSites = new Map(Object.entries(sites).map(([name, id]) => [id, name]));
    expect(siteRows.byWhere.filter((id) => fixtureSites.has(id)).map((id) => fixtureSites.get(id)).sort()).toEqual([...sitesSeen].sort());
  });
});
