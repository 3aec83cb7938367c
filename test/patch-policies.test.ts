import { randomUUID } from 'node:crypto';
import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import { TestClock } from './support/clock.js';
import { sql, statementsOn } from './support/db.js';
import { agentCall, enroll, fleet, type EnrolledAgent } from './support/devices.js';
import { eventually } from './support/eventually.js';
import { patchedFleet as fleetWithPatches, reportPatches } from './support/patches.js';
import { buildOrg, buildSite, buildUser, unique } from './support/factories.js';

const clock = new TestClock();
let app: TestApp;

beforeAll(async () => {
  app = await createTestApp({ start: { clock } });
});
afterAll(async () => {
  await app.stop();
});

const DAY_MS = 86_400_000;
/** The UTC calendar day `days` before the service clock's today. */
const daysAgo = (days: number) => new Date(clock.now().getTime() - days * DAY_MS).toISOString().slice(0, 10);
const patch = (fields: Record<string, unknown> = {}) => ({ source: 'microsoft', externalId: `KB${unique()}`, title: 'Cumulative update', severity: 'critical', status: 'missing', ...fields });
const report = (agent: EnrolledAgent, patches: unknown[]) => reportPatches(app, agent, patches);
const policy = (fields: Record<string, unknown> = {}) => ({
  name: `Policy ${unique()}`,
  targets: {},
  autoApprove: [{ sources: ['microsoft'], severities: ['critical'] }],
  schedule: { type: 'immediate' },
  rebootBehavior: 'if_required',
  ...fields,
});
const eventsOf = (type: string, orgId: string) => sql(app, `select data from outbox_event where type = ? and org_id = ? order by created_at, id`, [type, orgId]);

const patchedFleet = () => fleetWithPatches(app);

/** The organization's patches by externalId: their approval status. */
async function statuses(api: ReturnType<typeof rest>): Promise<Record<string, string>> {
  const res = await api.get('/patches');
  expect(res.status).toBe(200);
  return Object.fromEntries(res.body.data.map((p: any) => [p.externalId, p.approvalStatus]));
}

describe('CRUD', () => {
  test('creates, reads, lists (cursor list, filters), changes and deletes a policy; audited, no webhook events', async () => {
    const { org, api } = await patchedFleet();
    const created = await api.post('/patch-policies', policy({ name: 'Workstations', autoApprove: [{ sources: ['microsoft', 'microsoft'], minAgeDays: 7 }], schedule: { type: 'cron', cron: '0 3 * * 6', timezone: 'Europe/Berlin' } }));
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      orgId: org.id,
      name: 'Workstations',
      enabled: true,
      targets: { siteIds: [], groupIds: [], deviceIds: [] },
      autoApprove: [{ sources: ['microsoft'], minAgeDays: 7 }],
      schedule: { type: 'cron', cron: '0 3 * * 6', timezone: 'Europe/Berlin' },
      rebootBehavior: 'if_required',
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const id = created.body.id;
    expect((await api.get(`/patch-policies/${id}`)).body).toEqual(created.body);
    const disabled = await api.post('/patch-policies', policy({ enabled: false, rebootBehavior: 'never' }));
    expect(disabled.status).toBe(201);

    const all = await api.get('/patch-policies');
    expect(all.status).toBe(200);
    expect(all.body).toEqual({ data: [disabled.body, created.body], nextCursor: null });
    expect((await api.get('/patch-policies?enabled=false')).body.data.map((p: any) => p.id)).toEqual([disabled.body.id]);
    expect((await api.get(`/patch-policies?enabled=true&orgId=${org.id}`)).body.data.map((p: any) => p.id)).toEqual([id]);
    const first = await api.get('/patch-policies?limit=1');
    expect(first.body.data.map((p: any) => p.id)).toEqual([disabled.body.id]);
    expect((await api.get(`/patch-policies?limit=1&cursor=${first.body.nextCursor}`)).body).toEqual({ data: [created.body], nextCursor: null });

    const changed = await api.patch(`/patch-policies/${id}`, { name: 'Servers', schedule: { type: 'immediate' }, rebootBehavior: 'always', enabled: false });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ id, name: 'Servers', schedule: { type: 'immediate' }, rebootBehavior: 'always', enabled: false, autoApprove: created.body.autoApprove });
    expect((await api.patch(`/patch-policies/${id}`, {})).status).toBe(400);

    expect((await api.delete(`/patch-policies/${id}`)).status).toBe(204);
    expect((await api.get(`/patch-policies/${id}`)).status).toBe(404);
    expect((await api.delete(`/patch-policies/${id}`)).status).toBe(404);

    const audit = await sql(app, `select action from audit_log where resource_id = ? order by created_at`, [id]);
    expect(audit.map((r) => r.action)).toEqual(['patch_policy.create', 'patch_policy.update', 'patch_policy.delete']);
    expect(await sql(app, `select type from outbox_event where org_id = ? and type like 'patch_policy%'`, [org.id])).toEqual([]);
  });

  test('validation: bad cron, unknown zone, unknown enums, misplaced schedule fields, duplicate names (409)', async () => {
    const { api } = await patchedFleet();
    const bad = async (body: Record<string, unknown>, path: string, message: RegExp) => {
      const res = await api.post('/patch-policies', body);
      expect([res.status, res.body.code]).toEqual([400, 'VALIDATION_ERROR']);
      expect(res.body.details).toEqual(expect.arrayContaining([expect.objectContaining({ path, message: expect.stringMatching(message) })]));
    };
    await bad(policy({ schedule: { type: 'cron', cron: '61 * * * *', timezone: 'UTC' } }), 'schedule.cron', /invalid cron expression/);
    await bad(policy({ schedule: { type: 'cron', cron: '* * * *', timezone: 'UTC' } }), 'schedule.cron', /five fields/);
    await bad(policy({ schedule: { type: 'cron', cron: '0 3 * * *', timezone: 'Mars/Olympus' } }), 'schedule.timezone', /IANA time zone/);
    await bad(policy({ schedule: { type: 'cron', timezone: 'UTC' } }), 'schedule.cron', /required/);
    await bad(policy({ schedule: { type: 'immediate', cron: '0 3 * * *' } }), 'schedule.cron', /not a field/);
    for (const body of [
      policy({ schedule: { type: 'weekly' } }),
      policy({ rebootBehavior: 'sometimes' }),
      policy({ autoApprove: [{ sources: ['windows'] }] }),
      policy({ autoApprove: [{ severities: ['urgent'] }] }),
      policy({ autoApprove: [{ minAgeDays: -1 }] }),
      policy({ autoApprove: [{ sources: ['microsoft'], extra: true }] }),
      policy({ targets: { siteIds: ['not-a-uuid'] } }),
      { ...policy(), name: '' },
    ]) {
      const res = await api.post('/patch-policies', body);
      expect([res.status, res.body.code]).toEqual([400, 'VALIDATION_ERROR']);
    }
    const { schedule: _s, ...noSchedule } = policy();
    expect((await api.post('/patch-policies', noSchedule)).status).toBe(400);
    expect((await api.get('/patch-policies?enabled=maybe')).status).toBe(400);

    const first = await api.post('/patch-policies', policy({ name: 'Monthly' }));
    expect(first.status).toBe(201);
    const dup = await api.post('/patch-policies', policy({ name: 'Monthly' }));
    expect([dup.status, dup.body.code]).toEqual([409, 'CONFLICT']);
    const other = await api.post('/patch-policies', policy({ name: 'Weekly' }));
    const renamed = await api.patch(`/patch-policies/${other.body.id}`, { name: 'Monthly' });
    expect([renamed.status, renamed.body.code]).toEqual([409, 'CONFLICT']);
    // Another organization may use the name.
    expect((await (await fleet(app)).api.post('/patch-policies', policy({ name: 'Monthly' }))).status).toBe(201);
    const badUpdate = await api.patch(`/patch-policies/${first.body.id}`, { schedule: { type: 'cron', cron: 'nope', timezone: 'UTC' } });
    expect([badUpdate.status, badUpdate.body.code]).toEqual([400, 'VALIDATION_ERROR']);
  });

  test('GraphQL: patchPolicies (a connection), patchPolicy, create, update and delete', async () => {
    const { tech, api } = await patchedFleet();
    const FIELDS = 'id name enabled targets { siteIds groupIds deviceIds } autoApprove { sources severities minAgeDays } schedule { type cron timezone } rebootBehavior';
    const created = await gql(app, tech.as, `mutation($input: CreatePatchPolicyInput!) { createPatchPolicy(input: $input) { ${FIELDS} } }`, {
      input: policy({ name: 'Via GraphQL', autoApprove: [{ severities: ['critical', 'important'] }], schedule: { type: 'cron', cron: '0 2 * * *', timezone: 'America/New_York' } }),
    });
    expect(created.body.errors).toBeUndefined();
    const made = created.body.data.createPatchPolicy;
    expect(made).toEqual({
      id: expect.any(String),
      name: 'Via GraphQL',
      enabled: true,
      targets: { siteIds: [], groupIds: [], deviceIds: [] },
      autoApprove: [{ sources: null, severities: ['critical', 'important'], minAgeDays: null }],
      schedule: { type: 'cron', cron: '0 2 * * *', timezone: 'America/New_York' },
      rebootBehavior: 'if_required',
    });
    expect((await api.get(`/patch-policies/${made.id}`)).body.name).toBe('Via GraphQL');
    const one = await gql(app, tech.as, `query($id: ID!) { patchPolicy(id: $id) { ${FIELDS} } }`, { id: made.id });
    expect(one.body.data.patchPolicy).toEqual(made);
    const list = await gql(app, tech.as, 'query { patchPolicies(first: 10) { totalCount edges { node { id } } pageInfo { hasNextPage } } }');
    expect(list.body.data.patchPolicies).toEqual({ totalCount: 1, edges: [{ node: { id: made.id } }], pageInfo: { hasNextPage: false } });
    const updated = await gql(app, tech.as, 'mutation($id: ID!, $input: UpdatePatchPolicyInput!) { updatePatchPolicy(id: $id, input: $input) { enabled rebootBehavior } }', {
      id: made.id,
      input: { enabled: false, rebootBehavior: 'never' },
    });
    expect(updated.body.data.updatePatchPolicy).toEqual({ enabled: false, rebootBehavior: 'never' });
    const badZone = await gql(app, tech.as, 'mutation($id: ID!, $input: UpdatePatchPolicyInput!) { updatePatchPolicy(id: $id, input: $input) { id } }', {
      id: made.id,
      input: { schedule: { type: 'cron', cron: '0 2 * * *', timezone: 'Nowhere/Special' } },
    });
    expect(badZone.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_ERROR');
    const deleted = await gql(app, tech.as, 'mutation($id: ID!) { deletePatchPolicy(id: $id) }', { id: made.id });
    expect(deleted.body).toEqual({ data: { deletePatchPolicy: true } });
    expect((await api.get(`/patch-policies/${made.id}`)).status).toBe(404);
  });
});

describe('access', () => {
  test('another organization’s policy is 404 on every route, REST and GraphQL; target ids of another organization or outside a limited caller’s sites are 404', async () => {
    const { org, api, a } = await patchedFleet();
    const site = await buildSite(app, org.id);
    const { id } = (await api.post('/patch-policies', policy())).body;
    const stranger = await fleet(app);
    const s = stranger.api;
    for (const res of [await s.get(`/patch-policies/${id}`), await s.patch(`/patch-policies/${id}`, { name: 'Mine' }), await s.delete(`/patch-policies/${id}`), await api.get('/patch-policies/not-a-uuid')]) {
      expect([res.status, res.body.code, res.body.message]).toEqual([404, 'NOT_FOUND', 'Patch policy not found']);
    }
    expect((await s.get('/patch-policies')).body.data).toEqual([]);
    // Another organization's id as a filter finds nothing, as on every list.
    expect((await s.get(`/patch-policies?orgId=${org.id}`)).body).toEqual({ data: [], nextCursor: null });
    for (const [query, variables] of [
      ['query($id: ID!) { patchPolicy(id: $id) { id } }', { id }],
      ['mutation($id: ID!) { updatePatchPolicy(id: $id, input: { name: "Mine" }) { id } }', { id }],
      ['mutation($id: ID!) { deletePatchPolicy(id: $id) }', { id }],
    ] as const) {
      expect((await gql(app, stranger.tech.as, query, variables)).body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    }
    expect((await api.get(`/patch-policies/${id}`)).body.name).not.toBe('Mine');

    // Targets: another organization's site, device or group, or an unknown id, is 404 as everywhere.
    const foreignSite = await buildSite(app, (await buildOrg(app)).id);
    const strangerDevice = (await enroll(app, stranger.key)).deviceId;
    for (const [targets, resource] of [
      [{ siteIds: [foreignSite.id] }, 'Site'],
      [{ deviceIds: [strangerDevice] }, 'Device'],
      [{ groupIds: [randomUUID()] }, 'Group'],
    ] as const) {
      const res = await api.post('/patch-policies', policy({ targets }));
      expect([res.status, res.body.message]).toEqual([404, `${resource} not found`]);
      expect((await api.patch(`/patch-policies/${id}`, { targets })).status).toBe(404);
    }
    expect((await api.post('/patch-policies', policy({ targets: { siteIds: [site.id], deviceIds: [a.deviceId] } }))).status).toBe(201);

    // A user limited to a site: a device of another site is 404; within their site, 403 (a policy's approvals hold organization-wide).
    const [siteA, siteB] = [await buildSite(app, org.id), await buildSite(app, org.id)];
    await sql(app, 'update device set site_id = ? where id = ?', [siteA.id, a.deviceId]);
    const limited = await buildUser(app, { orgId: org.id, role: 'Organization Technician' });
    await sql(app, 'update membership set site_ids = ?::jsonb where id = ?', [JSON.stringify([siteB.id]), limited.membership.id]);
    const l = rest(app, limited.as);
    expect((await l.post('/patch-policies', policy({ targets: { deviceIds: [a.deviceId] } }))).status).toBe(404);
    expect((await l.post('/patch-policies', policy({ targets: { siteIds: [siteA.id] } }))).status).toBe(404);
    expect((await l.post('/patch-policies', policy({ targets: { siteIds: [siteB.id] } }))).status).toBe(403);
    expect((await l.post('/patch-policies', policy())).status).toBe(403);
    expect((await l.delete(`/patch-policies/${id}`)).status).toBe(403);
    expect((await l.get(`/patch-policies/${id}`)).status).toBe(200);
  });

  test('a viewer reads but gets 403 on every write; reading needs patches:read', async () => {
    const { viewer, api } = await patchedFleet();
    const { id } = (await api.post('/patch-policies', policy())).body;
    const v = rest(app, viewer.as);
    expect((await v.get('/patch-policies')).status).toBe(200);
    expect((await v.get(`/patch-policies/${id}`)).status).toBe(200);
    for (const res of [await v.post('/patch-policies', policy()), await v.patch(`/patch-policies/${id}`, { name: 'Viewer’s' }), await v.delete(`/patch-policies/${id}`)]) {
      expect([res.status, res.body.code]).toEqual([403, 'FORBIDDEN']);
    }
    const viaGraphql = await gql(app, viewer.as, 'mutation($id: ID!) { deletePatchPolicy(id: $id) }', { id });
    expect(viaGraphql.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect((await api.get(`/patch-policies/${id}`)).status).toBe(200);
    const devicesOnly = await buildUser(app, { orgId: (await buildOrg(app)).id, can: ['devices:read'] });
    expect((await rest(app, devicesOnly.as).get('/patch-policies')).status).toBe(403);
  });
});

describe('auto-approval', () => {
  test('creating an enabled policy approves the matching pending patches of its targeted devices at once, with its policyId', async () => {
    const { org, api, a, b } = await patchedFleet();
    const match = patch({ externalId: 'match' });
    const deferredOut = patch({ externalId: 'deferred-out' });
    await report(a, [match, deferredOut, patch({ externalId: 'wrong-severity', severity: 'low' }), patch({ externalId: 'wrong-source', source: 'linux' }), patch({ externalId: 'declined' })]);
    await report(b, [patch({ externalId: 'other-device' })]);
    const byExternal = Object.fromEntries((await api.get('/patches')).body.data.map((p: any) => [p.externalId, p.id]));
    expect((await api.post(`/patches/${byExternal.declined}/decline`, {})).status).toBe(200);
    // A deferral that has run out reads as pending: a policy approves it.
    await sql(app, `update patch set approval_status = 'deferred', defer_until = ? where id = ?`, [new Date(clock.now().getTime() - 60_000), byExternal['deferred-out']]);

    const created = await api.post('/patch-policies', policy({ targets: { deviceIds: [a.deviceId] } }));
    expect(created.status).toBe(201);
    expect(await statuses(api)).toEqual({ match: 'approved', 'deferred-out': 'approved', 'wrong-severity': 'pending', 'wrong-source': 'pending', declined: 'declined', 'other-device': 'pending' });
    const approvals = await api.get(`/patches/approvals?status=approved`);
    expect(approvals.body.data.map((d: any) => [d.patchId, d.policyId, d.decidedBy]).sort()).toEqual(
      [
        [byExternal.match, created.body.id, null],
        [byExternal['deferred-out'], created.body.id, null],
      ].sort(),
    );
    expect((await eventsOf('patch.approved', org.id)).map((e) => e.data).sort((x, y) => x.patchId.localeCompare(y.patchId))).toEqual(
      [
        { patchId: byExternal.match, policyId: created.body.id },
        { patchId: byExternal['deferred-out'], policyId: created.body.id },
      ].sort((x, y) => x.patchId.localeCompare(y.patchId)),
    );
    // Saving it again approves nothing twice.
    expect((await api.patch(`/patch-policies/${created.body.id}`, { rebootBehavior: 'always' })).status).toBe(200);
    expect((await api.get('/patches/approvals?status=approved')).body.data).toHaveLength(2);
    expect(await eventsOf('patch.approved', org.id)).toHaveLength(2);
  });

  test('a disabled policy approves nothing, until it is enabled; widening targets by an update approves at once', async () => {
    const { api, a, b } = await patchedFleet();
    await report(a, [patch({ externalId: 'on-a' })]);
    await report(b, [patch({ externalId: 'on-b' })]);
    const { id } = (await api.post('/patch-policies', policy({ enabled: false }))).body;
    await report(a, [patch({ externalId: 'on-a' }), patch({ externalId: 'again-a' })]);
    expect(await statuses(api)).toEqual({ 'on-a': 'pending', 'on-b': 'pending', 'again-a': 'pending' });

    expect((await api.patch(`/patch-policies/${id}`, { enabled: true, targets: { deviceIds: [b.deviceId] } })).status).toBe(200);
    expect(await statuses(api)).toEqual({ 'on-a': 'pending', 'on-b': 'approved', 'again-a': 'pending' });
    expect((await api.patch(`/patch-policies/${id}`, { targets: {} })).status).toBe(200);
    expect(await statuses(api)).toEqual({ 'on-a': 'approved', 'on-b': 'approved', 'again-a': 'approved' });
  });

  test('a report brings pending patches: the enabled policies targeting the device approve what they match, in the report', async () => {
    const { org, api, a, b } = await patchedFleet();
    const site = await buildSite(app, org.id);
    await sql(app, 'update device set site_id = ? where id = ?', [site.id, a.deviceId]);
    const group = await api.post('/groups', { name: `Servers ${unique()}`, type: 'static' });
    expect(group.status).toBe(201);
    const bySite = (await api.post('/patch-policies', policy({ targets: { siteIds: [site.id] } }))).body.id;
    const byGroup = (await api.post('/patch-policies', policy({ targets: { groupIds: [group.body.id] }, autoApprove: [{ sources: ['linux'] }] }))).body.id;
    await api.post('/patch-policies', policy({ enabled: false, autoApprove: [{}] }));

    await report(a, [patch({ externalId: 'a-critical' }), patch({ externalId: 'a-low', severity: 'low' }), patch({ externalId: 'a-linux', source: 'linux' })]);
    // b is outside every enabled policy's targets.
    await report(b, [patch({ externalId: 'b-critical' }), patch({ externalId: 'b-linux', source: 'linux' })]);
    expect(await statuses(api)).toEqual({ 'a-critical': 'approved', 'a-low': 'pending', 'a-linux': 'pending', 'b-critical': 'pending', 'b-linux': 'pending' });

    // b joins the group: its next report approves its Linux patch by the group's policy.
    expect((await api.post(`/groups/${group.body.id}/devices`, { deviceIds: [b.deviceId] })).status).toBe(200);
    await report(b, [patch({ externalId: 'b-critical' }), patch({ externalId: 'b-linux', source: 'linux' })]);
    expect(await statuses(api)).toEqual({ 'a-critical': 'approved', 'a-low': 'pending', 'a-linux': 'pending', 'b-critical': 'pending', 'b-linux': 'approved' });

    const decided = (await api.get('/patches/approvals')).body.data.map((d: any) => [d.policyId, d.decidedBy]);
    expect(decided.sort()).toEqual([[byGroup, null], [bySite, null]].sort());
    const events = (await eventsOf('patch.approved', org.id)).map((e) => e.data.policyId);
    expect(events.sort()).toEqual([byGroup, bySite].sort());
  });

  test('approval is set-based: a report of many matching patches and a policy over many patches each write the approvals in one statement; a running deferral is left alone', async () => {
    const { org, api, a, b } = await patchedFleet();
    await api.post('/patch-policies', policy({ targets: { deviceIds: [a.deviceId] } }));
    const many = Array.from({ length: 40 }, (_, i) => patch({ externalId: `many-${i}` }));
    const onReport = await statementsOn(app, 'patch_approval', () => agentCall(app, a, '/inventory', { patches: many }));
    expect([onReport.result.status, onReport.statements]).toEqual([200, 1]);
    expect((await api.get('/patches?approvalStatus=approved&limit=100')).body.data).toHaveLength(40);

    await report(b, [...Array.from({ length: 30 }, (_, i) => patch({ externalId: `b-${i}` })), patch({ externalId: 'b-deferred' })]);
    const deferred = (await api.get('/patches?search=b-deferred')).body.data[0].id;
    expect((await api.post(`/patches/${deferred}/defer`, { until: new Date(clock.now().getTime() + DAY_MS).toISOString() })).status).toBe(200);
    const onCreate = await statementsOn(app, 'patch_approval', () => api.post('/patch-policies', policy({ targets: { deviceIds: [b.deviceId] } })));
    expect([onCreate.result.status, onCreate.statements]).toEqual([201, 1]);
    expect((await api.get('/patches?approvalStatus=approved&limit=100')).body.data).toHaveLength(70);
    expect((await api.get(`/patches/${deferred}`)).body.approvalStatus).toBe('deferred');
    expect(await eventsOf('patch.approved', org.id)).toHaveLength(70);
  });

  test('minAgeDays: released at least that many days before today (UTC); no release date never matches; aging patches are approved by the hourly due work', async () => {
    const { api, a } = await patchedFleet();
    const { id } = (await api.post('/patch-policies', policy({ autoApprove: [{ severities: ['critical'], minAgeDays: 7 }] }))).body;
    await report(a, [
      patch({ externalId: 'old', releaseDate: daysAgo(10) }),
      patch({ externalId: 'exactly', releaseDate: daysAgo(7) }),
      patch({ externalId: 'young', releaseDate: daysAgo(5) }),
      patch({ externalId: 'undated' }),
      patch({ externalId: 'old-low', severity: 'low', releaseDate: daysAgo(30) }),
    ]);
    expect(await statuses(api)).toEqual({ old: 'approved', exactly: 'approved', young: 'pending', undated: 'pending', 'old-low': 'pending' });

    // Three days later the young patch is old enough: the due work approves it without a report or an edit.
    clock.advance(3 * DAY_MS);
    try {
      await eventually(async () => (await statuses(api)).young === 'approved', 15_000, 'the aged patch to be approved');
      const approvals = (await api.get('/patches/approvals')).body.data;
      expect(approvals.every((d: any) => d.policyId === id && d.decidedBy === null)).toBe(true);
      expect(await statuses(api)).toEqual({ old: 'approved', exactly: 'approved', young: 'approved', undated: 'pending', 'old-low': 'pending' });
    } finally {
      clock.advance(-3 * DAY_MS);
    }
  });
});
