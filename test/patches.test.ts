import { randomUUID } from 'node:crypto';
import { DOMAIN_EVENT_TOPIC } from '../src/events/dispatcher.js';
import type { DomainEvent } from '../src/events/types.js';
import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import { TestClock } from './support/clock.js';
import { dispatched, sql, statementsOn } from './support/db.js';
import { listenToDomainEvents } from './support/domain-events.js';
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

const patch = (fields: Record<string, unknown> = {}) => ({ source: 'microsoft', externalId: `KB${unique()}`, title: 'Cumulative update', status: 'missing', ...fields });
const report = (agent: EnrolledAgent, patches: unknown[]) => reportPatches(app, agent, patches);
const eventsOf = (type: string, orgId: string) => sql(app, `select data from outbox_event where type = ? and org_id = ? order by created_at, id`, [type, orgId]);
const ids = (body: { data: { id: string }[] }) => body.data.map((p) => p.id);

const patchedFleet = () => fleetWithPatches(app);

describe('the agents’ patch report', () => {
  test('upserts one patch per organization and (source, externalId), replaces the device’s statuses, refreshes the catalog fields and emits patch.available once', async () => {
    const { org, api, a, b } = await patchedFleet();
    const kb = patch({ externalId: 'KB5030211', kbNumber: 'KB5030211', severity: 'critical', releaseDate: '2024-03-12', vendorOnly: 'ignored' });
    const curl = patch({ source: 'linux', externalId: 'curl-8.5.0', title: 'curl', packageName: 'curl', version: '8.5.0', status: 'installed' });
    await report(a, [kb, curl, { ...curl, status: 'pending_reboot' }]);
    await report(b, [{ ...kb, status: 'failed' }]);

    const list = await api.get('/patches');
    expect(list.status).toBe(200);
    expect(list.body.nextCursor).toBeNull();
    expect(list.body.data).toHaveLength(2);
    const byExternal = Object.fromEntries(list.body.data.map((p: any) => [p.externalId, p]));
    expect(byExternal.KB5030211).toEqual({
      id: expect.any(String),
      orgId: org.id,
      source: 'microsoft',
      externalId: 'KB5030211',
      title: 'Cumulative update',
      severity: 'critical',
      kbNumber: 'KB5030211',
      packageName: null,
      version: null,
      vendor: null,
      releaseDate: '2024-03-12',
      cveIds: [],
      cvssScore: null,
      enrichedAt: null,
      approvalStatus: 'pending',
      deferUntil: null,
      counts: { installed: 0, missing: 1, failed: 1, pendingReboot: 0 },
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    // Listed twice in one report: the last entry counts.
    expect(byExternal['curl-8.5.0']).toMatchObject({ source: 'linux', severity: 'unknown', packageName: 'curl', counts: { installed: 0, missing: 0, failed: 0, pendingReboot: 1 } });
    expect((await eventsOf('patch.available', org.id)).map((e) => e.data).sort((x, y) => x.patchId.localeCompare(y.patchId))).toEqual(
      [{ patchId: byExternal.KB5030211.id }, { patchId: byExternal['curl-8.5.0'].id }].sort((x, y) => x.patchId.localeCompare(y.patchId)),
    );

    // A new report replaces the device's list: curl is gone from a, the KB's title is refreshed; no new event for known patches.
    await report(a, [{ ...kb, title: 'Cumulative update (revised)', status: 'installed' }]);
    const again = (await api.get(`/patches/${byExternal.KB5030211.id}`)).body;
    expect(again).toMatchObject({ id: byExternal.KB5030211.id, title: 'Cumulative update (revised)', counts: { installed: 1, missing: 0, failed: 1, pendingReboot: 0 } });
    expect((await api.get(`/patches/${byExternal['curl-8.5.0'].id}`)).body.counts).toEqual({ installed: 0, missing: 0, failed: 0, pendingReboot: 0 });
    expect(await eventsOf('patch.available', org.id)).toHaveLength(2);

    // Another organization reporting the same KB gets a patch of its own.
    const other = await fleet(app);
    await report(await enroll(app, other.key), [kb]);
    const theirs = (await other.api.get('/patches')).body.data;
    expect(theirs.map((p: any) => [p.externalId, p.orgId])).toEqual([['KB5030211', other.org.id]]);
    expect(theirs[0].id).not.toBe(byExternal.KB5030211.id);

    // An empty list clears the device's statuses.
    await report(b, []);
    expect((await api.get(`/patches/${byExternal.KB5030211.id}`)).body.counts).toEqual({ installed: 1, missing: 0, failed: 0, pendingReboot: 0 });
  });

  test('a wrong item is 400 naming it (unknown source, severity or status, no externalId), and nothing is written', async () => {
    const { api, a } = await patchedFleet();
    for (const [item, path] of [
      [patch({ source: 'windows' }), 'patches.0.source'],
      [patch({ severity: 'urgent' }), 'patches.0.severity'],
      [patch({ status: 'gone' }), 'patches.0.status'],
      [{ source: 'custom', title: 'x', status: 'missing' }, 'patches.0.externalId'],
      [patch({ releaseDate: '2024-02-30' }), 'patches.0.releaseDate'],
    ] as const) {
      const res = await agentCall(app, a, '/inventory', { patches: [item] });
      expect([res.status, res.body.code, res.body.details?.[0]?.path]).toEqual([400, 'VALIDATION_ERROR', path]);
    }
    expect((await api.get('/patches')).body.data).toEqual([]);
  });
});

describe('reading patches', () => {
  test('filters (source, severity, approvalStatus, search, deviceId with deviceStatus, orgId), cursor pages, and GraphQL answers the same', async () => {
    const { org, tech, api, a, b } = await patchedFleet();
    await report(a, [
      patch({ externalId: 'KB1', kbNumber: 'KB5000001', title: 'Security update for Windows', severity: 'critical' }),
      patch({ externalId: 'KB2', title: 'Feature 50%_off pack', severity: 'low', status: 'installed' }),
      patch({ source: 'linux', externalId: 'openssl-3.0.13', title: 'OpenSSL', packageName: 'OpenSSL-libs', severity: 'important' }),
    ]);
    await report(b, [patch({ source: 'third_party', externalId: 'chrome-120', title: 'Google Chrome', vendor: 'Google', version: '120.0', status: 'failed' })]);
    const externals = async (query: string) => (await api.get(`/patches?${query}`)).body.data.map((p: any) => p.externalId).sort();

    expect(await externals('source=linux')).toEqual(['openssl-3.0.13']);
    expect(await externals('severity=critical')).toEqual(['KB1']);
    expect(await externals('search=openssl')).toEqual(['openssl-3.0.13']);
    expect(await externals('search=kb50000')).toEqual(['KB1']);
    expect(await externals('search=ssl-LIBS')).toEqual(['openssl-3.0.13']);
    // LIKE wildcards are matched literally.
    expect(await externals('search=50%25_off')).toEqual(['KB2']);
    expect(await externals('search=%25')).toEqual(['KB2']);
    expect(await externals(`orgId=${org.id}&source=third_party`)).toEqual(['chrome-120']);
    expect(await externals('approvalStatus=approved')).toEqual([]);
    expect(await externals('approvalStatus=pending')).toHaveLength(4);

    const onA = (await api.get(`/patches?deviceId=${a.deviceId}`)).body.data;
    expect(onA.map((p: any) => [p.externalId, p.deviceStatus]).sort()).toEqual([
      ['KB1', 'missing'],
      ['KB2', 'installed'],
      ['openssl-3.0.13', 'missing'],
    ]);
    expect((await api.get('/patches')).body.data.every((p: any) => !('deviceStatus' in p))).toBe(true);

    // Cursor pages: newest first, every patch once.
    const first = await api.get('/patches?limit=3');
    expect([first.status, first.body.data.length, typeof first.body.nextCursor]).toEqual([200, 3, 'string']);
    const second = await api.get(`/patches?limit=3&cursor=${first.body.nextCursor}`);
    expect([second.body.data.length, second.body.nextCursor]).toEqual([1, null]);
    expect(new Set([...ids(first.body), ...ids(second.body)]).size).toBe(4);
    expect((await api.get('/patches?limit=501')).status).toBe(400);
    expect((await api.get('/patches?limit=0')).status).toBe(400);
    expect((await api.get('/patches?cursor=nonsense')).status).toBe(400);

    // GraphQL: the same filters, as a connection.
    const PATCHES = `query($first: Int, $after: String, $deviceId: ID, $source: PatchSource) { patches(first: $first, after: $after, deviceId: $deviceId, source: $source) {
      edges { cursor node { id externalId deviceStatus approvalStatus counts { installed missing failed pendingReboot } } } pageInfo { hasNextPage endCursor } totalCount } }`;
    const page1 = await gql(app, tech.as, PATCHES, { first: 3 });
    expect(page1.body.errors).toBeUndefined();
    expect(page1.body.data.patches.edges.map((e: any) => e.node.id)).toEqual(ids(first.body));
    expect([page1.body.data.patches.pageInfo.hasNextPage, page1.body.data.patches.totalCount]).toEqual([true, 4]);
    const page2 = await gql(app, tech.as, PATCHES, { first: 3, after: page1.body.data.patches.pageInfo.endCursor });
    expect(page2.body.data.patches.edges.map((e: any) => e.node.id)).toEqual(ids(second.body));
    const viaDevice = await gql(app, tech.as, PATCHES, { deviceId: b.deviceId, source: 'third_party' });
    expect(viaDevice.body.data.patches.edges.map((e: any) => [e.node.externalId, e.node.deviceStatus])).toEqual([['chrome-120', 'failed']]);
  });

  test('a patch’s devices are those the caller sees: a user limited to a site sees only that site’s devices', async () => {
    const { org, api, a, b } = await patchedFleet();
    const [siteA, siteB] = [await buildSite(app, org.id), await buildSite(app, org.id)];
    await sql(app, 'update device set site_id = ? where id = ?', [siteA.id, a.deviceId]);
    await sql(app, 'update device set site_id = ? where id = ?', [siteB.id, b.deviceId]);
    const kb = patch();
    await report(a, [kb]);
    await report(b, [{ ...kb, status: 'installed' }]);
    const [{ id }] = (await api.get('/patches')).body.data;
    const [hostA, hostB] = [(await api.get(`/devices/${a.deviceId}`)).body.hostname, (await api.get(`/devices/${b.deviceId}`)).body.hostname];

    const whole = await api.get(`/patches/${id}`);
    expect(whole.status).toBe(200);
    expect(whole.body.devices).toEqual([
      { deviceId: a.deviceId, hostname: hostA, status: 'missing' },
      { deviceId: b.deviceId, hostname: hostB, status: 'installed' },
    ]);
    const limited = await buildUser(app, { orgId: org.id, role: 'Organization Technician' });
    await sql(app, 'update membership set site_ids = ?::jsonb where id = ?', [JSON.stringify([siteB.id]), limited.membership.id]);
    const seen = await rest(app, limited.as).get(`/patches/${id}`);
    expect(seen.body.devices).toEqual([{ deviceId: b.deviceId, hostname: hostB, status: 'installed' }]);
    // Its counts are of their site's devices too, in the detail and the list.
    expect(whole.body.counts).toEqual({ installed: 1, missing: 1, failed: 0, pendingReboot: 0 });
    expect(seen.body.counts).toEqual({ installed: 1, missing: 0, failed: 0, pendingReboot: 0 });
    expect((await rest(app, limited.as).get('/patches')).body.data.map((p: any) => p.counts)).toEqual([seen.body.counts]);
    const missingOf = async (as: ReturnType<typeof rest>) => (await as.get('/patches/sources')).body.data.find((s: any) => s.source === kb.source).missingCount;
    expect([await missingOf(api), await missingOf(rest(app, limited.as))]).toEqual([1, 0]);
    // A device of another site is not theirs to filter by.
    expect((await rest(app, limited.as).get(`/patches?deviceId=${a.deviceId}`)).status).toBe(404);
    const viaGraphql = await gql(app, limited.as, 'query($id: ID!) { patch(id: $id) { id devices { deviceId hostname status } } }', { id });
    expect(viaGraphql.body.data.patch).toEqual({ id, devices: seen.body.devices });
    // A decision holds for the whole organization: theirs to read, not to make.
    for (const res of [await rest(app, limited.as).post(`/patches/${id}/approve`, {}), await rest(app, limited.as).post('/patches/bulk-approve', { patchIds: [id] })]) {
      expect([res.status, res.body.code]).toEqual([403, 'FORBIDDEN']);
    }
    expect((await api.get(`/patches/${id}`)).body.approvalStatus).toBe('pending');
  });

  test('a page costs a fixed number of statements, however many patches it holds (counts in one aggregate for the page)', async () => {
    const { tech, api, a, b } = await patchedFleet();
    const many = Array.from({ length: 60 }, (_, i) => patch({ externalId: `KB${String(i).padStart(3, '0')}`, status: i % 2 ? 'installed' : 'missing' }));
    await report(a, many);
    await report(b, many.slice(0, 10));
    // One patch.available per new patch, written in one statement per batch.
    expect((await eventsOf('patch.available', a.orgId)).length).toBe(60);
    // The dispatcher hands them on like any other event.
    const [last] = await sql(app, `select id from outbox_event where type = 'patch.available' and org_id = ? order by created_at desc, id desc limit 1`, [a.orgId]);
    await dispatched(app, last.id);
    for (const [path, expected] of [
      ['/patches?limit=60', 1],
      [`/patches?limit=60&deviceId=${b.deviceId}`, 2],
    ] as const) {
      const { result, statements } = await statementsOn(app, 'patch_device_status', () => api.get(path));
      expect([path, result.body.data.length, statements]).toEqual([path, path.includes('deviceId') ? 10 : 60, expected]);
    }
    const { result, statements } = await statementsOn(app, 'patch_device_status', () => gql(app, tech.as, '{ patches(first: 60) { edges { node { id counts { missing } } } } }'));
    expect([result.body.data.patches.edges.length, statements]).toEqual([60, 1]);
  });

  test('sources: every source with its patch and missing counts', async () => {
    const { api, tech, a, b } = await patchedFleet();
    await report(a, [patch(), patch({ status: 'installed' }), patch({ source: 'apple', externalId: 'macOS-14.2' })]);
    await report(b, [patch({ source: 'apple', externalId: 'macOS-14.2', status: 'installed' })]);
    const expected = [
      { source: 'microsoft', patchCount: 2, missingCount: 1 },
      { source: 'apple', patchCount: 1, missingCount: 1 },
      { source: 'linux', patchCount: 0, missingCount: 0 },
      { source: 'third_party', patchCount: 0, missingCount: 0 },
      { source: 'custom', patchCount: 0, missingCount: 0 },
    ];
    expect((await api.get('/patches/sources')).body).toEqual({ data: expected });
    expect((await gql(app, tech.as, '{ patchSources { data { source patchCount missingCount } } }')).body.data.patchSources.data).toEqual(expected);
  });
});

describe('approvals', () => {
  test('approve, decline and defer answer the patch; a deferral past its time reads as pending; each is audited and listed; approval emits patch.approved', async () => {
    const { org, tech, api, a } = await patchedFleet();
    await report(a, [patch({ externalId: 'KB-A' }), patch({ externalId: 'KB-B' })]);
    const byExternal = Object.fromEntries((await api.get('/patches')).body.data.map((p: any) => [p.externalId, p.id]));
    const [kbA, kbB] = [byExternal['KB-A'], byExternal['KB-B']];

    const approved = await api.post(`/patches/${kbA}/approve`, { note: 'tested on the pilot ring' });
    expect([approved.status, approved.body.id, approved.body.approvalStatus, approved.body.deferUntil]).toEqual([200, kbA, 'approved', null]);
    expect((await eventsOf('patch.approved', org.id)).map((e) => e.data)).toEqual([{ patchId: kbA, policyId: null }]);
    // Approving again changes nothing and publishes nothing.
    expect((await api.post(`/patches/${kbA}/approve`, {})).body.approvalStatus).toBe('approved');
    expect(await eventsOf('patch.approved', org.id)).toHaveLength(1);

    const declined = await api.post(`/patches/${kbB}/decline`, {});
    expect([declined.status, declined.body.approvalStatus]).toEqual([200, 'declined']);

    const past = await api.post(`/patches/${kbB}/defer`, { until: new Date(clock.now().getTime() - 60_000).toISOString() });
    expect([past.status, past.body.code]).toEqual([400, 'VALIDATION_ERROR']);
    expect((await api.post(`/patches/${kbB}/defer`, {})).status).toBe(400);
    const until = new Date(clock.now().getTime() + 3_600_000).toISOString();
    const deferred = await api.post(`/patches/${kbB}/defer`, { until, note: 'after the freeze' });
    expect([deferred.status, deferred.body.approvalStatus, deferred.body.deferUntil]).toEqual([200, 'deferred', until]);
    expect(ids((await api.get('/patches?approvalStatus=deferred')).body)).toEqual([kbB]);

    // An hour and a minute later the deferral has run out: pending again, on every read.
    clock.advance(3_660_000);
    try {
      expect((await api.get(`/patches/${kbB}`)).body).toMatchObject({ approvalStatus: 'pending', deferUntil: null });
      expect(ids((await api.get('/patches?approvalStatus=pending')).body)).toEqual([kbB]);
      expect((await api.get('/patches?approvalStatus=deferred')).body.data).toEqual([]);
    } finally {
      clock.advance(-3_660_000);
    }

    const history = await api.get('/patches/approvals');
    expect(history.status).toBe(200);
    expect(history.body.data.map((d: any) => [d.patchId, d.status])).toEqual([
      [kbB, 'deferred'],
      [kbB, 'declined'],
      [kbA, 'approved'],
    ]);
    expect(history.body.data[2]).toEqual({ id: expect.any(String), patchId: kbA, status: 'approved', decidedBy: tech.user.id, policyId: null, decidedAt: expect.any(String), note: 'tested on the pilot ring' });
    expect((await api.get(`/patches/approvals?patchId=${kbB}&status=declined`)).body.data.map((d: any) => d.status)).toEqual(['declined']);
    const paged = await api.get('/patches/approvals?limit=2');
    expect([paged.body.data.length, typeof paged.body.nextCursor]).toEqual([2, 'string']);
    expect((await api.get(`/patches/approvals?limit=2&cursor=${paged.body.nextCursor}`)).body).toEqual({ data: [history.body.data[2]], nextCursor: null });
    const viaGraphql = await gql(app, tech.as, '{ patchApprovals(first: 10) { edges { node { id patchId status decidedBy policyId decidedAt note } } } }');
    expect(viaGraphql.body.data.patchApprovals.edges.map((e: any) => e.node)).toEqual(history.body.data);

    const audit = await sql(app, `select action from audit_log where resource_id = ? and result = 'success' order by seq`, [kbB]);
    expect(audit.map((r) => r.action)).toEqual(['patch.decline', 'patch.defer']);
    expect((await sql(app, `select action from audit_log where resource_id = ? and result = 'success'`, [kbA])).map((r) => r.action)).toEqual(['patch.approve']);
  });

  test('the GraphQL mutations do the same', async () => {
    const { tech, api, a } = await patchedFleet();
    await report(a, [patch(), patch(), patch()]);
    const [p1, p2, p3] = ids((await api.get('/patches')).body);
    const approve = await gql(app, tech.as, 'mutation($id: ID!) { approvePatch(id: $id) { id approvalStatus } }', { id: p1 });
    expect(approve.body.data.approvePatch).toEqual({ id: p1, approvalStatus: 'approved' });
    const decline = await gql(app, tech.as, 'mutation($id: ID!) { declinePatch(id: $id, input: { note: "no" }) { approvalStatus } }', { id: p2 });
    expect(decline.body.data.declinePatch).toEqual({ approvalStatus: 'declined' });
    const until = new Date(clock.now().getTime() + 86_400_000).toISOString();
    const defer = await gql(app, tech.as, 'mutation($id: ID!, $until: DateTime!) { deferPatch(id: $id, input: { until: $until }) { approvalStatus deferUntil } }', { id: p3, until });
    expect(defer.body.data.deferPatch).toEqual({ approvalStatus: 'deferred', deferUntil: until });
    const pastDefer = await gql(app, tech.as, 'mutation($id: ID!, $until: DateTime!) { deferPatch(id: $id, input: { until: $until }) { approvalStatus } }', { id: p3, until: '2000-01-01T00:00:00Z' });
    expect(pastDefer.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_ERROR');
    const bulk = await gql(app, tech.as, 'mutation($ids: [String!]!) { bulkApprovePatches(input: { patchIds: $ids }) { approved failed { patchId code message } } }', { ids: [p2, 'nope'] });
    expect(bulk.body.data.bulkApprovePatches).toEqual({ approved: [p2], failed: [{ patchId: 'nope', code: 'NOT_FOUND', message: 'Patch not found' }] });
  });

  test('bulk approval approves what the caller may and reports unknown and foreign ids as NOT_FOUND', async () => {
    const { org, api, a } = await patchedFleet();
    await report(a, [patch(), patch()]);
    const [p1, p2] = ids((await api.get('/patches')).body);
    const other = await fleet(app);
    await report(await enroll(app, other.key), [patch()]);
    const [foreign] = ids((await other.api.get('/patches')).body);
    const unknownId = randomUUID();
    const res = await api.post('/patches/bulk-approve', { patchIds: [p1, unknownId, foreign, p2, p1, 'not-a-uuid'] });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      approved: [p1, p2],
      failed: [
        { patchId: unknownId, code: 'NOT_FOUND', message: 'Patch not found' },
        { patchId: foreign, code: 'NOT_FOUND', message: 'Patch not found' },
        { patchId: 'not-a-uuid', code: 'NOT_FOUND', message: 'Patch not found' },
      ],
    });
    expect((await eventsOf('patch.approved', org.id)).map((e) => e.data.patchId).sort()).toEqual([p1, p2].sort());
    expect((await other.api.get(`/patches/${foreign}`)).body.approvalStatus).toBe('pending');
    expect((await api.post('/patches/bulk-approve', { patchIds: [] })).status).toBe(400);
  });
});

describe('access', () => {
  test('another organization’s patch is 404 on every route, REST and GraphQL; a malformed id is 404', async () => {
    const { api, a } = await patchedFleet();
    await report(a, [patch()]);
    const [id] = ids((await api.get('/patches')).body);
    const stranger = await fleet(app);
    const s = stranger.api;
    const until = new Date(clock.now().getTime() + 3_600_000).toISOString();
    for (const res of [
      await s.get(`/patches/${id}`),
      await s.post(`/patches/${id}/approve`, {}),
      await s.post(`/patches/${id}/decline`, {}),
      await s.post(`/patches/${id}/defer`, { until }),
      await api.get('/patches/not-a-uuid'),
      await api.post('/patches/not-a-uuid/approve', {}),
    ]) {
      expect([res.status, res.body.code, res.body.message]).toEqual([404, 'NOT_FOUND', 'Patch not found']);
    }
    expect((await s.get(`/patches?deviceId=${a.deviceId}`)).status).toBe(404);
    expect((await s.get('/patches')).body.data).toEqual([]);
    expect((await s.get(`/patches/approvals?patchId=${id}`)).body.data).toEqual([]);
    expect((await s.get('/patches/sources')).body.data.every((x: any) => x.patchCount === 0)).toBe(true);
    for (const op of [
      ['query($id: ID!) { patch(id: $id) { id } }', {}],
      ['mutation($id: ID!) { approvePatch(id: $id) { id } }', {}],
      ['mutation($id: ID!) { declinePatch(id: $id) { id } }', {}],
      ['mutation($id: ID!, $until: DateTime!) { deferPatch(id: $id, input: { until: $until }) { id } }', { until }],
    ] as const) {
      const res = await gql(app, stranger.tech.as, op[0], { id, ...op[1] });
      expect(res.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    }
    expect((await api.get(`/patches/${id}`)).body.approvalStatus).toBe('pending');
  });

  test('a viewer reads but gets 403 on every write; unknown enum values are 400', async () => {
    const { viewer, api, a } = await patchedFleet();
    await report(a, [patch()]);
    const [id] = ids((await api.get('/patches')).body);
    const v = rest(app, viewer.as);
    expect((await v.get('/patches')).status).toBe(200);
    expect((await v.get(`/patches/${id}`)).status).toBe(200);
    expect((await v.get('/patches/approvals')).status).toBe(200);
    const until = new Date(clock.now().getTime() + 3_600_000).toISOString();
    for (const res of [
      await v.post(`/patches/${id}/approve`, {}),
      await v.post(`/patches/${id}/decline`, {}),
      await v.post(`/patches/${id}/defer`, { until }),
      await v.post('/patches/bulk-approve', { patchIds: [id] }),
    ]) {
      expect([res.status, res.body.code]).toEqual([403, 'FORBIDDEN']);
    }
    const viaGraphql = await gql(app, viewer.as, 'mutation($id: ID!) { approvePatch(id: $id) { id } }', { id });
    expect(viaGraphql.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect((await api.get(`/patches/${id}`)).body.approvalStatus).toBe('pending');

    for (const query of ['source=windows', 'severity=urgent', 'approvalStatus=maybe']) {
      const res = await api.get(`/patches?${query}`);
      expect([res.status, res.body.code]).toEqual([400, 'VALIDATION_ERROR']);
    }
    expect((await api.get('/patches/approvals?status=maybe')).status).toBe(400);
    expect((await api.post(`/patches/${id}/approve`, { note: 'x', extra: 1 })).status).toBe(400);
    // Reading needs patches:read.
    const devicesOnly = await buildUser(app, { orgId: (await buildOrg(app)).id, can: ['devices:read'] });
    expect((await rest(app, devicesOnly.as).get('/patches')).status).toBe(403);
  });
});

test('domainEvents delivers patch events to the organization’s patch readers only', async () => {
  const { org, api, a } = await patchedFleet();
  const reader = await buildUser(app, { orgId: org.id, can: ['organizations:read', 'devices:read', 'patches:read'] });
  const bystander = await buildUser(app, { orgId: org.id, can: ['organizations:read', 'devices:read'] });
  const { received, dispose } = await listenToDomainEvents(app, [reader, bystander], ['patch.available', 'device.updated']);
  try {
    const published: DomainEvent[] = [];
    app.server.runtime.pubsub.on(DOMAIN_EVENT_TOPIC, (event) => void published.push(event as DomainEvent));

    await report(a, [patch()]);
    const [{ id: patchId }] = (await api.get('/patches')).body.data;
    await eventually(() => published.some((e) => e.type === 'patch.available'), 10_000, 'the patch event on the instance');
    // A device event after it, which both may see: once it has arrived, the patch event was decided before it.
    expect((await api.patch(`/devices/${a.deviceId}`, { tags: ['patched'] })).status).toBe(200);
    await eventually(() => [...received.values()].every((events) => events.some((e) => e.type === 'device.updated')), 10_000, 'the device event');
    expect(received.get(reader.user.id)!.map((e) => [e.type, e.data.patchId ?? e.data.deviceId])).toEqual([
      ['patch.available', patchId],
      ['device.updated', a.deviceId],
    ]);
    expect(received.get(bystander.user.id)!.map((e) => e.type)).toEqual(['device.updated']);
  } finally {
    await dispose();
  }
});
