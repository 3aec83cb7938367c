import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest, type As } from './support/clients.js';
import { auditOf, dispatched, sql } from './support/db.js';
import { eventually } from './support/eventually.js';
import { agentCall, enroll, fleet } from './support/devices.js';
import { buildOrg, buildSite, buildUser, type BuiltUser } from './support/factories.js';

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => {
  await app.stop();
});

async function createGroup(as: As, body: Record<string, unknown>): Promise<{ id: string; deviceCount: number; [k: string]: unknown }> {
  const res = await rest(app, as).post('/groups', body);
  expect([res.status, res.body.message]).toEqual([201, undefined]);
  return res.body;
}

const memberIds = async (as: As, groupId: string): Promise<string[]> => {
  const res = await rest(app, as).get(`/groups/${groupId}/devices?limit=500`);
  expect(res.status).toBe(200);
  return (res.body.data as { id: string }[]).map((d) => d.id).sort();
};

/** The membership log oldest first, as `hostname action reason` lines (entries written together sorted). */
async function logLines(as: As, groupId: string): Promise<string[]> {
  const res = await rest(app, as).get(`/groups/${groupId}/membership-log?limit=500`);
  expect(res.status).toBe(200);
  const entries = (res.body.data as { hostname: string; action: string; reason: string; createdAt: string }[]).reverse();
  return entries
    .map((e, i) => ({ line: `${e.hostname} ${e.action} ${e.reason}`, at: e.createdAt, i }))
    .sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : a.line < b.line ? -1 : a.line > b.line ? 1 : 0))
    .map((e) => e.line);
}

/** Waits until the group holds exactly `expected` (the outbox subscriber has caught up). */
async function eventuallyMembers(as: As, groupId: string, expected: string[], what: string): Promise<void> {
  const want = [...expected].sort();
  await eventually(async () => JSON.stringify(await memberIds(as, groupId)) === JSON.stringify(want), 15_000, what);
}

/** The newest event about a device, and its dispatch: whatever the subscribers wrote for it is committed then. */
async function latestEventDispatched(deviceId: string): Promise<string> {
  const [row] = await sql(app, `select id from outbox_event where data->>'deviceId' = ? order by created_at desc limit 1`, [deviceId]);
  await dispatched(app, row.id);
  return row.id;
}

/** Runs `work`, counting the SQL statements this instance sends that match `pattern`. */
async function countingStatements(pattern: RegExp, work: () => Promise<void>): Promise<number> {
  const connection = app.server.runtime.orm.em.getDriver().getConnection() as unknown as { execute: (query: unknown, ...rest: unknown[]) => Promise<unknown> };
  const execute = connection.execute;
  let count = 0;
  connection.execute = function (this: unknown, query: unknown, ...rest: unknown[]) {
    if (pattern.test(String(typeof query === 'object' && query && 'sql' in query ? (query as { sql: string }).sql : query))) count++;
    return execute.call(this, query, ...rest);
  };
  try {
    await work();
    return count;
  } finally {
    connection.execute = execute;
  }
}

describe('static groups', () => {
  test('a technician adds and removes devices by hand; every join and leave is logged and audited', async () => {
    const { api, tech, key, org } = await fleet(app);
    const a = await enroll(app, key, 'static-a');
    const b = await enroll(app, key, 'static-b');
    const group = await createGroup(tech.as, { name: 'Servers', type: 'static', description: 'by hand' });
    expect(group).toMatchObject({ orgId: org.id, siteId: null, name: 'Servers', description: 'by hand', type: 'static', filter: null, deviceCount: 0 });

    const added = await api.post(`/groups/${group.id}/devices`, { deviceIds: [a.deviceId, b.deviceId, a.deviceId] });
    expect(added.status).toBe(200);
    expect({ ...added.body, added: added.body.added.sort() }).toEqual({ added: [a.deviceId, b.deviceId].sort(), alreadyMembers: [], deviceCount: 2 });
    const again = await api.post(`/groups/${group.id}/devices`, { deviceIds: [a.deviceId] });
    expect(again.body).toEqual({ added: [], alreadyMembers: [a.deviceId], deviceCount: 2 });
    expect(await memberIds(tech.as, group.id)).toEqual([a.deviceId, b.deviceId].sort());
    expect((await api.get(`/groups/${group.id}`)).body.deviceCount).toBe(2);

    expect((await api.delete(`/groups/${group.id}/devices/${a.deviceId}`)).status).toBe(204);
    const gone = await api.delete(`/groups/${group.id}/devices/${a.deviceId}`);
    expect([gone.status, gone.body.message]).toEqual([404, 'Group member not found']);
    expect(await memberIds(tech.as, group.id)).toEqual([b.deviceId]);
    expect(await logLines(tech.as, group.id)).toEqual(['static-a joined manual', 'static-b joined manual', 'static-a left manual']);
    const filtered = await api.get(`/groups/${group.id}/membership-log?action=left`);
    expect(filtered.body.data.map((e: { deviceId: string; actorId: string }) => [e.deviceId, e.actorId])).toEqual([[a.deviceId, tech.user.id]]);

    // Dynamic-only operations are refused on a static group.
    expect((await api.post(`/groups/${group.id}/preview`, {})).status).toBe(400);
    expect((await api.post(`/groups/${group.id}/devices/${b.deviceId}/pin`, {})).status).toBe(400);
    expect((await api.patch(`/groups/${group.id}`, { filter: { osTypes: ['linux'] } })).status).toBe(400);

    expect((await auditOf(app, group.id, ['action'])).map((r) => r.action)).toEqual([
      'device_group.create',
      'device_group.member.add',
      'device_group.member.remove',
    ]);
    expect((await api.delete(`/groups/${group.id}`)).status).toBe(204);
    expect((await api.get(`/groups/${group.id}`)).status).toBe(404);
    expect((await api.get(`/devices/${b.deviceId}`)).status).toBe(200);
  });

  test("only devices of the group's organization and site may join (400); devices the caller cannot see are 404", async () => {
    const { api, tech, key, org } = await fleet(app);
    const siteA = await buildSite(app, org.id);
    const siteB = await buildSite(app, org.id);
    const keyA = await api.post('/enrollment-keys', { name: 'A', siteId: siteA.id });
    const keyB = await api.post('/enrollment-keys', { name: 'B', siteId: siteB.id });
    const inA = await enroll(app, keyA.body.key, 'in-a');
    const inB = await enroll(app, keyB.body.key, 'in-b');
    const siteless = await enroll(app, key, 'no-site');
    const group = await createGroup(tech.as, { name: 'Site A', type: 'static', siteId: siteA.id });

    const wrongSite = await api.post(`/groups/${group.id}/devices`, { deviceIds: [inA.deviceId, inB.deviceId, siteless.deviceId] });
    expect(wrongSite.status).toBe(400);
    expect(wrongSite.body.message).toContain("Only devices of the group's organization and site can join this group");
    expect(wrongSite.body.details.deviceIds.sort()).toEqual([inB.deviceId, siteless.deviceId].sort());
    expect(await memberIds(tech.as, group.id)).toEqual([]);

    // A sibling organization's device, visible to a partner technician, is in the wrong organization.
    const sibling = await buildOrg(app, { partnerId: org.partnerId });
    const partnerTech = await buildUser(app, { partnerId: org.partnerId, role: 'Partner Technician' });
    const siblingKey = await rest(app, partnerTech.as).post('/enrollment-keys', { name: 'S', orgId: sibling.id });
    const foreign = await enroll(app, siblingKey.body.key, 'sibling-device');
    const orgWide = await createGroup(tech.as, { name: 'Everything', type: 'static' });
    const wrongOrg = await rest(app, partnerTech.as).post(`/groups/${orgWide.id}/devices`, { deviceIds: [foreign.deviceId] });
    expect([wrongOrg.status, wrongOrg.body.message]).toEqual([400, `Only devices of the group's organization can join this group: ${foreign.deviceId}`]);
    // The organization's own technician cannot see that device at all.
    const unseen = await api.post(`/groups/${orgWide.id}/devices`, { deviceIds: [inA.deviceId, foreign.deviceId] });
    expect([unseen.status, unseen.body.message]).toEqual([404, 'Device not found']);
    expect(await memberIds(tech.as, orgWide.id)).toEqual([]);

  });
});

describe('dynamic groups', () => {
  test('membership follows the filter on create and update, and follows devices as they change', async () => {
    const { api, tech, key } = await fleet(app);
    const web1 = await enroll(app, key, 'web-01');
    const web2 = await enroll(app, key, 'WEB-02', { osType: 'windows' });
    const db = await enroll(app, key, 'db-01');
    await api.patch(`/devices/${web1.deviceId}`, { tags: ['prod', 'web'] });

    const group = await createGroup(tech.as, { name: 'Web', type: 'dynamic', filter: { hostname: 'web-*' } });
    expect(group).toMatchObject({ type: 'dynamic', filter: { hostname: 'web-*' }, deviceCount: 2 });
    expect(await memberIds(tech.as, group.id)).toEqual([web1.deviceId, web2.deviceId].sort());

    // Narrowing the filter recomputes at once: the Windows machine leaves.
    const linuxWeb = await api.patch(`/groups/${group.id}`, { filter: { hostname: 'web-*', osTypes: ['linux'] } });
    expect(linuxWeb.body).toMatchObject({ deviceCount: 1, filter: { hostname: 'web-*', osTypes: ['linux'] } });
    expect(await memberIds(tech.as, group.id)).toEqual([web1.deviceId]);

    // Tags: a device joins when it gets the tag (through the outbox subscriber) and leaves when it loses it.
    const tagged = await createGroup(tech.as, { name: 'Prod web', type: 'dynamic', filter: { tags: { all: ['prod', 'web'] } } });
    expect(tagged.deviceCount).toBe(1);
    await api.patch(`/devices/${db.deviceId}`, { tags: ['web', 'prod', 'db'] });
    await eventuallyMembers(tech.as, tagged.id, [web1.deviceId, db.deviceId], 'db-01 to join by its tags');
    await api.patch(`/devices/${db.deviceId}`, { tags: ['db'] });
    await eventuallyMembers(tech.as, tagged.id, [web1.deviceId], 'db-01 to leave by its tags');

    // Status: an update in progress takes the device out of an "online" group until it is back.
    const online = await createGroup(tech.as, { name: 'Online', type: 'dynamic', filter: { statuses: ['online'] } });
    expect(online.deviceCount).toBe(3);
    expect((await agentCall(app, web1, '/update-status', { state: 'started', toVersion: '1.1.0' })).status).toBe(200);
    await eventuallyMembers(tech.as, online.id, [web2.deviceId, db.deviceId], 'the updating device to leave');
    expect((await agentCall(app, web1, '/heartbeat', { agentVersion: '1.1.0' })).status).toBe(200);
    await eventuallyMembers(tech.as, online.id, [web1.deviceId, web2.deviceId, db.deviceId], 'the updated device to come back');

    // Agent version, read when the device's next event comes.
    const current = await createGroup(tech.as, { name: 'Current agent', type: 'dynamic', filter: { agentVersions: ['1.1.0'] } });
    expect(await memberIds(tech.as, current.id)).toEqual([web1.deviceId]);

    // Decommissioning takes a device out of every group, static ones too.
    const byHand = await createGroup(tech.as, { name: 'By hand', type: 'static' });
    await api.post(`/groups/${byHand.id}/devices`, { deviceIds: [web1.deviceId] });
    expect((await api.delete(`/devices/${web1.deviceId}`)).status).toBe(204);
    await eventuallyMembers(tech.as, online.id, [web2.deviceId, db.deviceId], 'the decommissioned device to leave');
    await eventuallyMembers(tech.as, byHand.id, [], 'the decommissioned device to leave the static group');
    expect(await logLines(tech.as, byHand.id)).toEqual(['web-01 joined manual', 'web-01 left device_decommissioned']);
    expect(await logLines(tech.as, online.id)).toEqual([
      'WEB-02 joined filter',
      'db-01 joined filter',
      'web-01 joined filter',
      'web-01 left filter',
      'web-01 joined filter',
      'web-01 left device_decommissioned',
    ]);
    expect(await logLines(tech.as, tagged.id)).toEqual(['web-01 joined filter', 'db-01 joined filter', 'db-01 left filter', 'web-01 left device_decommissioned']);
    expect(await logLines(tech.as, group.id)).toEqual(['WEB-02 joined filter', 'web-01 joined filter', 'WEB-02 left filter', 'web-01 left device_decommissioned']);
  });

  test('an event handled again changes nothing (subscribers run at least once)', async () => {
    const { api, tech, key } = await fleet(app);
    const device = await enroll(app, key, 'twice');
    const group = await createGroup(tech.as, { name: 'Tagged', type: 'dynamic', filter: { tags: { any: ['x', 'y'] } } });
    await api.patch(`/devices/${device.deviceId}`, { tags: ['y'] });
    await eventuallyMembers(tech.as, group.id, [device.deviceId], 'the device to join');
    const eventId = await latestEventDispatched(device.deviceId);
    const before = await logLines(tech.as, group.id);
    await sql(app, `update outbox_event set dispatched_at = null where id = ?`, [eventId]);
    await dispatched(app, eventId);
    expect(await logLines(tech.as, group.id)).toEqual(before);
    expect(before).toEqual(['twice joined filter']);
  });

  test('a dispatcher batch of device events is reconciled together, in a few statements however many devices and groups', async () => {
    const { api, tech, key } = await fleet(app);
    const name = (i: number) => `batch-${String(i).padStart(2, '0')}`;
    const devices = await Promise.all(Array.from({ length: 30 }, (_, i) => enroll(app, key, name(i))));
    const ids = (...indexes: number[]) => indexes.map((i) => devices[i]!.deviceId).sort();
    const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);
    const groups = {
      blue: await createGroup(tech.as, { name: 'Blue', type: 'dynamic', filter: { tags: { any: ['blue'] } } }),
      blueAndBig: await createGroup(tech.as, { name: 'Blue and big', type: 'dynamic', filter: { tags: { all: ['blue', 'big'] } } }),
      teens: await createGroup(tech.as, { name: 'Teens', type: 'dynamic', filter: { hostname: 'batch-1?' } }),
      online: await createGroup(tech.as, { name: 'Online', type: 'dynamic', filter: { statuses: ['online'] } }),
      mixed: await createGroup(tech.as, { name: 'Mixed', type: 'dynamic', filter: { hostname: 'BATCH-0', tags: { any: ['big', 'none'] }, statuses: ['online', 'updating'], osTypes: ['linux'] } }),
      byHand: await createGroup(tech.as, { name: 'By hand', type: 'static' }),
    };
    await api.post(`/groups/${groups.byHand.id}/devices`, { deviceIds: ids(13, 20) });
    expect(await memberIds(tech.as, groups.teens.id)).toEqual(ids(...range(10, 20)));
    const events = await sql(app, `select distinct on (data->>'deviceId') id from outbox_event where data->>'deviceId' in (?) order by data->>'deviceId', created_at desc`, [ids(...range(0, 30))]);
    for (const { id } of events) await dispatched(app, id);

    // The devices change behind the service's back, then their last events come round again, all in one batch.
    await sql(app, `update device set tags = '["blue"]' where id in (?)`, [ids(...range(5, 10))]);
    await sql(app, `update device set tags = '["big", "blue"]' where id in (?)`, [ids(...range(0, 5))]);
    await sql(app, `update device set hostname = 'renamed-10' where id = ?`, ids(10));
    await sql(app, `update device set status = 'offline' where id = ?`, ids(11));
    await sql(app, `update device set status = 'decommissioned' where id = ?`, ids(13));
    const statements = await countingStatements(/\bdevice_group|\bgroup_id\b/, async () => {
      await sql(app, `update outbox_event set dispatched_at = null where id in (?)`, [events.map((e) => e.id)]);
      for (const { id } of events) await dispatched(app, id);
    });

    expect(await memberIds(tech.as, groups.blue.id)).toEqual(ids(...range(0, 10)));
    expect(await memberIds(tech.as, groups.blueAndBig.id)).toEqual(ids(...range(0, 5)));
    expect(await memberIds(tech.as, groups.teens.id)).toEqual(ids(11, 12, 14, 15, 16, 17, 18, 19));
    expect(await memberIds(tech.as, groups.online.id)).toEqual(ids(...range(0, 30).filter((i) => i !== 11 && i !== 13)));
    expect(await memberIds(tech.as, groups.mixed.id)).toEqual(ids(...range(0, 5)));
    expect(await memberIds(tech.as, groups.byHand.id)).toEqual(ids(20));
    const teensLog = await logLines(tech.as, groups.teens.id);
    expect([teensLog.slice(0, 10), teensLog.slice(10).sort()]).toEqual([range(10, 20).map((i) => `${name(i)} joined filter`), ['batch-13 left device_decommissioned', 'renamed-10 left filter']]);
    // Handled one event at a time, the same work takes over a hundred statements.
    expect(statements).toBeLessThanOrEqual(10);
  });

  test('a device moved to another organization leaves its groups (device_moved) and joins the new one’s', async () => {
    const { tech, key, org } = await fleet(app);
    const sibling = await buildOrg(app, { partnerId: org.partnerId });
    const partnerTech = await buildUser(app, { partnerId: org.partnerId, role: 'Partner Technician' });
    const device = await enroll(app, key, 'mover');
    const here = await createGroup(tech.as, { name: 'Linux', type: 'dynamic', filter: { osTypes: ['linux'] } });
    const byHand = await createGroup(tech.as, { name: 'Pinned', type: 'static' });
    await rest(app, tech.as).post(`/groups/${byHand.id}/devices`, { deviceIds: [device.deviceId] });
    const there = await createGroup(partnerTech.as, { orgId: sibling.id, name: 'Linux', type: 'dynamic', filter: { osTypes: ['linux'] } });
    expect(here.deviceCount).toBe(1);
    expect(there.deviceCount).toBe(0);

    expect((await rest(app, partnerTech.as).post(`/devices/${device.deviceId}/move-org`, { orgId: sibling.id })).status).toBe(200);
    await eventuallyMembers(partnerTech.as, there.id, [device.deviceId], 'the moved device to join its new organization’s group');
    await eventuallyMembers(tech.as, here.id, [], 'the moved device to leave');
    expect(await memberIds(tech.as, byHand.id)).toEqual([]);
    expect(await logLines(tech.as, here.id)).toEqual(['mover joined filter', 'mover left device_moved']);
    expect(await logLines(tech.as, byHand.id)).toEqual(['mover joined manual', 'mover left device_moved']);
  });

  test('a device moved to another site leaves groups of its former site', async () => {
    const { api, tech, org } = await fleet(app);
    const siteA = await buildSite(app, org.id);
    const siteB = await buildSite(app, org.id);
    const keyA = await api.post('/enrollment-keys', { name: 'A', siteId: siteA.id });
    const device = await enroll(app, keyA.body.key, 'roamer');
    const siteGroup = await createGroup(tech.as, { name: 'A', type: 'dynamic', siteId: siteA.id, filter: {} });
    const bySiteFilter = await createGroup(tech.as, { name: 'B by filter', type: 'dynamic', filter: { siteIds: [siteB.id] } });
    expect([siteGroup.deviceCount, bySiteFilter.deviceCount]).toEqual([1, 0]);
    await api.patch(`/devices/${device.deviceId}`, { siteId: siteB.id });
    await eventuallyMembers(tech.as, bySiteFilter.id, [device.deviceId], 'the device to join by its new site');
    await eventuallyMembers(tech.as, siteGroup.id, [], 'the device to leave its former site’s group');
    expect(await logLines(tech.as, siteGroup.id)).toEqual(['roamer joined filter', 'roamer left device_moved']);
  });
});

describe('preview and pins', () => {
  test('preview answers what a filter would hold, with its pins, and changes nothing', async () => {
    const { api, tech, key } = await fleet(app);
    const a = await enroll(app, key, 'pre-a');
    const b = await enroll(app, key, 'pre-b', { osType: 'macos' });
    const c = await enroll(app, key, 'other-c');
    const group = await createGroup(tech.as, { name: 'Pre', type: 'dynamic', filter: { hostname: 'pre' } });
    expect(await memberIds(tech.as, group.id)).toEqual([a.deviceId, b.deviceId].sort());

    const own = await api.post(`/groups/${group.id}/preview`, {});
    expect(own.status).toBe(200);
    expect(own.body).toMatchObject({ count: 2, joining: 0, leaving: 0 });
    expect(own.body.devices.map((d: { hostname: string }) => d.hostname)).toEqual(['pre-a', 'pre-b']);

    const tried = await api.post(`/groups/${group.id}/preview`, { filter: { osTypes: ['linux'] }, limit: 1 });
    expect(tried.body).toMatchObject({ count: 2, joining: 1, leaving: 1 });
    expect(tried.body.devices.map((d: { hostname: string }) => d.hostname)).toEqual(['other-c']);
    // Nothing changed.
    expect(await memberIds(tech.as, group.id)).toEqual([a.deviceId, b.deviceId].sort());
    expect((await api.get(`/groups/${group.id}`)).body.filter).toEqual({ hostname: 'pre' });

    // Pins count in the preview.
    await api.post(`/groups/${group.id}/devices/${c.deviceId}/pin`, { mode: 'include' });
    await api.post(`/groups/${group.id}/devices/${a.deviceId}/pin`, { mode: 'exclude' });
    const pinned = await api.post(`/groups/${group.id}/preview`, {});
    expect(pinned.body.devices.map((d: { hostname: string }) => d.hostname)).toEqual(['other-c', 'pre-b']);
    expect(pinned.body).toMatchObject({ count: 2, joining: 0, leaving: 0 });
  });

  test('pins keep a device in or out whatever the filter says; unpinning hands it back to the filter', async () => {
    const { api, tech, key } = await fleet(app);
    const inside = await enroll(app, key, 'lin-1');
    const outside = await enroll(app, key, 'win-1', { osType: 'windows' });
    const group = await createGroup(tech.as, { name: 'Linux', type: 'dynamic', filter: { osTypes: ['linux'] } });
    const pin = (deviceId: string, body: unknown) => api.post(`/groups/${group.id}/devices/${deviceId}/pin`, body);

    const included = await pin(outside.deviceId, {});
    expect(included.body).toEqual({ groupId: group.id, deviceId: outside.deviceId, member: true, source: 'pin', pin: 'include', joinedAt: expect.any(String) });
    const excluded = await pin(inside.deviceId, { mode: 'exclude' });
    expect(excluded.body).toMatchObject({ member: false, source: null, pin: 'exclude' });
    expect(await memberIds(tech.as, group.id)).toEqual([outside.deviceId]);

    // The filter changing does not move pinned devices.
    await api.patch(`/groups/${group.id}`, { filter: { osTypes: ['linux', 'windows'] } });
    expect(await memberIds(tech.as, group.id)).toEqual([outside.deviceId]);
    await api.patch(`/devices/${inside.deviceId}`, { tags: ['touched'] });
    await latestEventDispatched(inside.deviceId);
    expect(await memberIds(tech.as, group.id)).toEqual([outside.deviceId]);

    // Pinning again the same way changes nothing; unpinning lets the filter decide.
    expect((await pin(outside.deviceId, { mode: 'include' })).body.pin).toBe('include');
    const unpinnedOut = await api.delete(`/groups/${group.id}/devices/${outside.deviceId}/pin`);
    expect(unpinnedOut.body).toMatchObject({ member: true, source: 'filter', pin: null });
    await api.patch(`/groups/${group.id}`, { filter: { osTypes: ['linux'] } });
    const unpinnedIn = await api.delete(`/groups/${group.id}/devices/${inside.deviceId}/pin`);
    expect(unpinnedIn.body).toMatchObject({ member: true, source: 'filter', pin: null, joinedAt: expect.any(String) });
    expect((await api.delete(`/groups/${group.id}/devices/${inside.deviceId}/pin`)).body).toMatchObject({ member: true, pin: null });
    expect(await memberIds(tech.as, group.id)).toEqual([inside.deviceId]);

    expect(await logLines(tech.as, group.id)).toEqual([
      'lin-1 joined filter',
      'win-1 joined pin',
      'lin-1 left pin',
      'win-1 left filter',
      'lin-1 joined unpin',
    ]);
    expect((await auditOf(app, group.id, ['action'])).map((r) => r.action)).toEqual([
      'device_group.create',
      'device_group.pin',
      'device_group.pin',
      'device_group.update',
      'device_group.unpin',
      'device_group.update',
      'device_group.unpin',
    ]);
    // Static-group operations are refused on a dynamic group.
    expect((await api.post(`/groups/${group.id}/devices`, { deviceIds: [outside.deviceId] })).status).toBe(400);
    expect((await api.delete(`/groups/${group.id}/devices/${inside.deviceId}`)).status).toBe(400);
  });

  test('a pin outlives decommissioning: the device enrolled again is back under it', async () => {
    const { api, tech, key } = await fleet(app);
    const device = await enroll(app, key, 'returning', { machineId: 'machine-r' });
    const group = await createGroup(tech.as, { name: 'All', type: 'dynamic', filter: {} });
    await api.post(`/groups/${group.id}/devices/${device.deviceId}/pin`, { mode: 'include' });
    expect((await api.delete(`/devices/${device.deviceId}`)).status).toBe(204);
    await eventuallyMembers(tech.as, group.id, [], 'the decommissioned device to leave');
    const back = await enroll(app, key, 'returning', { machineId: 'machine-r' });
    expect(back.deviceId).toBe(device.deviceId);
    await eventuallyMembers(tech.as, group.id, [device.deviceId], 'the re-enrolled device to rejoin by its pin');
    expect(await logLines(tech.as, group.id)).toEqual(['returning joined filter', 'returning left device_decommissioned', 'returning joined pin']);
  });
});

describe('device list and tags', () => {
  test('GET /devices?groupIds= lists members of any of the groups; groups the caller cannot see add nothing', async () => {
    const { api, tech, key } = await fleet(app);
    const a = await enroll(app, key, 'g-a');
    const b = await enroll(app, key, 'g-b', { osType: 'windows' });
    await enroll(app, key, 'g-c', { osType: 'macos' });
    const linux = await createGroup(tech.as, { name: 'Linux', type: 'dynamic', filter: { osTypes: ['linux'] } });
    const byHand = await createGroup(tech.as, { name: 'Hand', type: 'static' });
    await api.post(`/groups/${byHand.id}/devices`, { deviceIds: [b.deviceId] });
    const ids = async (query: string) => {
      const res = await api.get(`/devices?${query}`);
      expect(res.status).toBe(200);
      return (res.body.devices as { id: string }[]).map((d) => d.id).sort();
    };
    expect(await ids(`groupIds=${linux.id}`)).toEqual([a.deviceId]);
    expect(await ids(`groupIds=${linux.id},${byHand.id}`)).toEqual([a.deviceId, b.deviceId].sort());
    expect(await ids(`groupIds=${byHand.id}&page=1`)).toEqual([b.deviceId]);

    const other = await fleet(app);
    await enroll(app, other.key, 'theirs');
    const theirs = await createGroup(other.tech.as, { name: 'All', type: 'dynamic', filter: {} });
    expect(theirs.deviceCount).toBe(1);
    expect(await ids(`groupIds=${theirs.id}`)).toEqual([]);
    expect(await ids(`groupIds=${theirs.id},${linux.id}`)).toEqual([a.deviceId]);
    expect((await api.get('/devices?groupIds=not-a-uuid')).status).toBe(400);
  });

  test('GET /tags counts the tags of visible devices; GET /tags/devices lists devices carrying them', async () => {
    const { api, key, org } = await fleet(app);
    const a = await enroll(app, key, 't-a');
    const b = await enroll(app, key, 't-b');
    const c = await enroll(app, key, 't-c');
    await api.patch(`/devices/${a.deviceId}`, { tags: ['web', 'prod'] });
    await api.patch(`/devices/${b.deviceId}`, { tags: ['web', 'staging'] });
    await api.patch(`/devices/${c.deviceId}`, { tags: ['Database'] });
    const other = await fleet(app);
    const foreign = await enroll(app, other.key, 'foreign');
    await other.api.patch(`/devices/${foreign.deviceId}`, { tags: ['web', 'secret-project'] });

    const tags = await api.get('/tags');
    expect(tags.status).toBe(200);
    expect(tags.body).toEqual({
      data: [
        { tag: 'Database', deviceCount: 1 },
        { tag: 'prod', deviceCount: 1 },
        { tag: 'staging', deviceCount: 1 },
        { tag: 'web', deviceCount: 2 },
      ],
      pagination: { page: 1, limit: 100, total: 4 },
    });
    expect((await api.get('/tags?search=DATA')).body.data).toEqual([{ tag: 'Database', deviceCount: 1 }]);
    expect((await api.get('/tags?search=%25')).body.data).toEqual([]);
    expect((await api.get('/tags?limit=2&page=2')).body).toMatchObject({ data: [{ tag: 'staging' }, { tag: 'web' }], pagination: { total: 4 } });
    expect((await api.get(`/tags?orgId=${other.org.id}`)).body.data).toEqual([]);
    expect((await api.get(`/tags?orgId=${org.id}`)).body.pagination.total).toBe(4);

    const hostnames = async (query: string) => ((await api.get(`/tags/devices?${query}`)).body.data as { hostname: string }[]).map((d) => d.hostname);
    expect(await hostnames('tag=web')).toEqual(['t-a', 't-b']);
    expect(await hostnames('tags=prod,Database')).toEqual(['t-a', 't-c']);
    expect(await hostnames('tag=secret-project')).toEqual([]);
    const missing = await api.get('/tags/devices');
    expect([missing.status, missing.body.code]).toEqual([400, 'VALIDATION_ERROR']);

    // Decommissioned devices carry no tags in use.
    await api.delete(`/devices/${c.deviceId}`);
    expect((await api.get('/tags')).body.data.map((t: { tag: string }) => t.tag)).toEqual(['prod', 'staging', 'web']);
  });
});

describe('access', () => {
  test("another organization's groups and devices are 404 on every route", async () => {
    const mine = await fleet(app);
    const theirs = await fleet(app);
    const myDevice = await enroll(app, mine.key, 'mine');
    const theirDevice = await enroll(app, theirs.key, 'theirs');
    const theirGroup = await createGroup(theirs.tech.as, { name: 'Theirs', type: 'dynamic', filter: {} });
    const theirStatic = await createGroup(theirs.tech.as, { name: 'Theirs by hand', type: 'static' });
    const myGroup = await createGroup(mine.tech.as, { name: 'Mine', type: 'dynamic', filter: {} });
    const myStatic = await createGroup(mine.tech.as, { name: 'Mine by hand', type: 'static' });
    const api = mine.api;

    const foreignGroup = [
      api.get(`/groups/${theirGroup.id}`),
      api.patch(`/groups/${theirGroup.id}`, { name: 'Stolen' }),
      api.delete(`/groups/${theirGroup.id}`),
      api.get(`/groups/${theirGroup.id}/devices`),
      api.post(`/groups/${theirStatic.id}/devices`, { deviceIds: [myDevice.deviceId] }),
      api.delete(`/groups/${theirStatic.id}/devices/${theirDevice.deviceId}`),
      api.post(`/groups/${theirGroup.id}/preview`, {}),
      api.post(`/groups/${theirGroup.id}/devices/${myDevice.deviceId}/pin`, {}),
      api.delete(`/groups/${theirGroup.id}/devices/${theirDevice.deviceId}/pin`),
      api.get(`/groups/${theirGroup.id}/membership-log`),
      api.get('/groups/not-a-uuid'),
    ];
    for (const res of await Promise.all(foreignGroup)) expect([res.status, res.body.message]).toEqual([404, 'Group not found']);

    const foreignDevice = [
      api.post(`/groups/${myStatic.id}/devices`, { deviceIds: [theirDevice.deviceId] }),
      api.delete(`/groups/${myStatic.id}/devices/${theirDevice.deviceId}`),
      api.post(`/groups/${myGroup.id}/devices/${theirDevice.deviceId}/pin`, {}),
      api.delete(`/groups/${myGroup.id}/devices/${theirDevice.deviceId}/pin`),
    ];
    for (const res of await Promise.all(foreignDevice)) expect([res.status, res.body.message]).toEqual([404, 'Device not found']);

    expect((await api.get('/groups')).body.data.map((g: { id: string }) => g.id).sort()).toEqual([myGroup.id, myStatic.id].sort());
    expect((await api.get(`/groups?orgId=${theirs.org.id}`)).body.data).toEqual([]);
    expect((await api.post('/groups', { orgId: theirs.org.id, name: 'Sneaky', type: 'static' })).status).toBe(404);
    // Filters naming another organization's site, tried or saved, are 404 too.
    const theirSite = await buildSite(app, theirs.org.id);
    for (const res of await Promise.all([
      api.post(`/groups/${myGroup.id}/preview`, { filter: { siteIds: [theirSite.id] } }),
      api.patch(`/groups/${myGroup.id}`, { filter: { siteIds: [theirSite.id] } }),
      api.post('/groups', { name: 'Peek', type: 'dynamic', filter: { siteIds: [theirSite.id] } }),
    ])) {
      expect([res.status, res.body.message]).toEqual([404, 'Site not found']);
    }
    expect((await rest(app, theirs.tech.as).get(`/groups/${theirGroup.id}`)).body).toMatchObject({ name: 'Theirs', deviceCount: 1 });
    expect(await memberIds(theirs.tech.as, theirGroup.id)).toEqual([theirDevice.deviceId]);
  });

  test('reading needs devices:read, writing devices:write', async () => {
    const { tech, key, org } = await fleet(app);
    const device = await enroll(app, key, 'perm');
    const group = await createGroup(tech.as, { name: 'Perm', type: 'dynamic', filter: {} });
    const reader = rest(app, (await buildUser(app, { orgId: org.id, can: ['devices:read'] })).as);
    expect((await reader.get(`/groups/${group.id}`)).status).toBe(200);
    expect((await reader.get('/groups')).body.data).toHaveLength(1);
    expect((await reader.get(`/groups/${group.id}/devices`)).body.data).toHaveLength(1);
    expect((await reader.get(`/groups/${group.id}/membership-log`)).status).toBe(200);
    expect((await reader.post(`/groups/${group.id}/preview`, {})).status).toBe(200);
    expect((await reader.get('/tags')).status).toBe(200);
    for (const res of await Promise.all([
      reader.post('/groups', { name: 'No', type: 'static' }),
      reader.patch(`/groups/${group.id}`, { name: 'No' }),
      reader.delete(`/groups/${group.id}`),
      reader.post(`/groups/${group.id}/devices/${device.deviceId}/pin`, {}),
      reader.delete(`/groups/${group.id}/devices/${device.deviceId}/pin`),
    ])) {
      expect([res.status, res.body.code]).toEqual([403, 'FORBIDDEN']);
    }
    const nobody = rest(app, (await buildUser(app, { orgId: org.id, can: ['sites:read'] })).as);
    expect((await nobody.get('/groups')).status).toBe(403);
    expect((await nobody.get('/tags')).status).toBe(403);
  });

  test('a user limited to some sites sees and manages only groups of those sites', async () => {
    const { api, tech, org } = await fleet(app);
    const siteA = await buildSite(app, org.id);
    const siteB = await buildSite(app, org.id);
    const keyA = await api.post('/enrollment-keys', { name: 'A', siteId: siteA.id });
    const keyB = await api.post('/enrollment-keys', { name: 'B', siteId: siteB.id });
    const inA = await enroll(app, keyA.body.key, 'site-a');
    const inB = await enroll(app, keyB.body.key, 'site-b');
    await api.patch(`/devices/${inA.deviceId}`, { tags: ['a-only'] });
    await api.patch(`/devices/${inB.deviceId}`, { tags: ['b-only'] });
    const orgWide = await createGroup(tech.as, { name: 'Everything', type: 'dynamic', filter: {} });
    const groupB = await createGroup(tech.as, { name: 'B', type: 'static', siteId: siteB.id });

    const limited: BuiltUser = await buildUser(app, { orgId: org.id, role: 'Organization Technician' });
    await sql(app, `update membership set site_ids = ?::jsonb where id = ?`, [JSON.stringify([siteA.id]), limited.membership.id]);
    const mine = rest(app, limited.as);
    expect((await mine.post('/groups', { name: 'Anywhere', type: 'static' })).status).toBe(403);
    expect((await mine.post('/groups', { name: 'Theirs', type: 'static', siteId: siteB.id })).status).toBe(404);
    expect((await mine.post('/groups', { name: 'Peek', type: 'dynamic', siteId: siteA.id, filter: { siteIds: [siteB.id] } })).status).toBe(404);
    const groupA = await createGroup(limited.as, { name: 'A', type: 'dynamic', siteId: siteA.id, filter: {} });
    expect(groupA.deviceCount).toBe(1);

    expect((await mine.get('/groups')).body.data.map((g: { id: string }) => g.id)).toEqual([groupA.id]);
    for (const id of [orgWide.id, groupB.id]) {
      expect((await mine.get(`/groups/${id}`)).status).toBe(404);
      expect((await mine.get(`/groups/${id}/devices`)).status).toBe(404);
      expect((await mine.get(`/groups/${id}/membership-log`)).status).toBe(404);
      expect((await mine.patch(`/groups/${id}`, { name: 'Mine now' })).status).toBe(404);
    }
    expect((await mine.post(`/groups/${groupA.id}/devices/${inB.deviceId}/pin`, {})).status).toBe(404);
    expect(await memberIds(limited.as, groupA.id)).toEqual([inA.deviceId]);
    // An org-wide group they cannot see adds nothing to their device list.
    expect((await mine.get(`/devices?groupIds=${orgWide.id}`)).body.devices).toEqual([]);
    expect((await mine.get(`/devices?groupIds=${groupA.id}`)).body.devices.map((d: { id: string }) => d.id)).toEqual([inA.deviceId]);
    expect((await mine.get('/tags')).body.data).toEqual([{ tag: 'a-only', deviceCount: 1 }]);
    expect((await mine.get('/tags/devices?tag=b-only')).body.data).toEqual([]);
  });
});

describe('hostile input', () => {
  test('filters are typed: regular expressions, operators, unknown criteria and huge lists are 400', async () => {
    const { api, key } = await fleet(app);
    await enroll(app, key, 'web-01');
    const refused = async (body: unknown, path = '/groups') => {
      const res = await api.post(path, body);
      expect({ body, status: res.status, code: res.body.code }).toEqual({ body, status: 400, code: 'VALIDATION_ERROR' });
      return res.body.message as string;
    };
    const dynamic = (filter: unknown) => ({ name: `G ${Math.random()}`, type: 'dynamic', filter });
    expect(await refused(dynamic({ hostname: '^web-\\d+$' }))).toContain('filter.hostname: may hold letters, digits');
    for (const hostname of ['(web|db)', 'web-[0-9]', 'web%', "web' or 1=1 --", 'a'.repeat(256), '']) await refused(dynamic({ hostname }));
    await refused(dynamic({ hostname: { $ne: null } }));
    await refused(dynamic({ osTypes: [{ $ne: null }] }));
    await refused(dynamic({ osTypes: ['beos'] }));
    await refused(dynamic({ osTypes: [] }));
    await refused(dynamic({ statuses: ['decommissioned'] }));
    await refused(dynamic({ tags: { any: Array.from({ length: 1000 }, (_, i) => `t${i}`) } }));
    await refused(dynamic({ tags: { none: ['x'] } }));
    await refused(dynamic({ siteIds: ['not-a-uuid'] }));
    await refused(dynamic({ $where: 'true' }));
    await refused(dynamic({ hostnameRegex: 'web.*' }));
    await refused({ ...dynamic({}), id: crypto.randomUUID() });
    await refused({ ...dynamic({}), type: 'smart' });
    await refused({ name: 'No filter', type: 'dynamic' });
    await refused({ name: 'Static with filter', type: 'static', filter: {} });
    const huge = await api.post('/groups', dynamic({ agentVersions: Array.from({ length: 100_000 }, () => '1.0.0') }));
    expect([400, 413]).toContain(huge.status);

    // A glob matches literally apart from its wildcards: "_" and "." are not wildcards.
    const literal = await api.post('/groups', dynamic({ hostname: 'web_0?' }));
    expect(literal.body.deviceCount).toBe(0);
    const wildcard = await api.post('/groups', dynamic({ hostname: 'WEB-0?' }));
    expect(wildcard.body.deviceCount).toBe(1);
    const dotted = await api.post('/groups', dynamic({ hostname: 'web.*' }));
    expect(dotted.body.deviceCount).toBe(0);

    const named = await api.post('/groups', { name: 'Twice', type: 'static' });
    expect(named.status).toBe(201);
    const twice = await api.post('/groups', { name: 'Twice', type: 'static' });
    expect([twice.status, twice.body]).toEqual([409, { code: 'CONFLICT', message: 'A group with this name already exists in the organization' }]);
    const renamed = await api.post('/groups', { name: 'Once', type: 'static' });
    expect((await api.patch(`/groups/${renamed.body.id}`, { name: 'Twice' })).body.message).toBe('A group with this name already exists in the organization');
    // Racing for one name: one wins, the others get the same 409.
    const racing = await Promise.all(Array.from({ length: 6 }, () => api.post('/groups', { name: 'Raced', type: 'dynamic', filter: {} })));
    expect(racing.map((r) => [r.status, r.body.message]).sort()).toEqual([
      [201, undefined],
      ...Array.from({ length: 5 }, () => [409, 'A group with this name already exists in the organization']),
    ]);
    await refused({ filter: { hostname: '.*' }, extra: true }, `/groups/${named.body.id}/preview`);
    const unknownPatch = await api.patch(`/groups/${named.body.id}`, { type: 'dynamic' });
    expect(unknownPatch.status).toBe(400);
    expect((await api.post(`/groups/${named.body.id}/devices`, { deviceIds: [] })).status).toBe(400);
    expect((await api.post(`/groups/${named.body.id}/devices`, { deviceIds: ['x'] })).status).toBe(400);
    expect((await api.get('/groups?type=smart')).status).toBe(400);
    expect((await api.get('/groups?orgId[$ne]=x')).status).toBe(400);
    expect((await api.get(`/groups/${named.body.id}/membership-log?reason=whatever`)).status).toBe(400);
    // Lists page at most 500 rows.
    for (const path of [`/groups/${named.body.id}/devices?limit=100000`, `/groups/${named.body.id}/membership-log?limit=-1`, '/groups?limit=501', '/tags?page=0']) {
      const res = await api.get(path);
      expect({ path, status: res.status, code: res.body.code }).toEqual({ path, status: 400, code: 'VALIDATION_ERROR' });
    }
  });
});

describe('GraphQL', () => {
  test('groups, pins and the membership log through GraphQL, with the same rules', async () => {
    const { tech, key } = await fleet(app);
    const linux = await enroll(app, key, 'gql-lin');
    const win = await enroll(app, key, 'gql-win', { osType: 'windows' });
    const created = await gql(
      app,
      tech.as,
      `mutation ($input: CreateGroupInput!) { createGroup(input: $input) { id type deviceCount filter { osTypes hostname tags { any all } } } }`,
      { input: { name: 'Linux', type: 'dynamic', filter: { osTypes: ['linux'], tags: null } } },
    );
    expect(created.body.errors).toBeUndefined();
    const group = created.body.data.createGroup;
    expect(group).toMatchObject({ type: 'dynamic', deviceCount: 1, filter: { osTypes: ['linux'], hostname: null, tags: null } });

    const pinned = await gql(app, tech.as, `mutation ($id: ID!, $d: ID!) { pinGroupDevice(id: $id, deviceId: $d) { member source pin } }`, { id: group.id, d: win.deviceId });
    expect(pinned.body.data?.pinGroupDevice).toEqual({ member: true, source: 'pin', pin: 'include' });
    const read = await gql(
      app,
      tech.as,
      `query ($id: ID!) {
        groups { data { id name } pagination { total } }
        group(id: $id) { deviceCount }
        groupDevices(id: $id) { data { hostname } }
        groupMembershipLog(id: $id) { data { hostname action reason } }
        tags { data { tag } }
      }`,
      { id: group.id },
    );
    expect(read.body.errors).toBeUndefined();
    expect(read.body.data.groups).toEqual({ data: [{ id: group.id, name: 'Linux' }], pagination: { total: 1 } });
    expect(read.body.data.group.deviceCount).toBe(2);
    expect(read.body.data.groupDevices.data.map((d: { hostname: string }) => d.hostname)).toEqual(['gql-lin', 'gql-win']);
    expect(read.body.data.tags).toEqual({ data: [] });
    expect(read.body.data.groupMembershipLog.data.map((e: { hostname: string; reason: string }) => `${e.hostname} ${e.reason}`).sort()).toEqual(['gql-lin filter', 'gql-win pin']);

    const preview = await gql(app, tech.as, `mutation ($id: ID!) { previewGroup(id: $id, input: { filter: { osTypes: [windows] } }) { count joining leaving } }`, { id: group.id });
    expect(preview.body.data?.previewGroup).toEqual({ count: 1, joining: 0, leaving: 1 });
    const hostile = await gql(app, tech.as, `mutation ($id: ID!) { previewGroup(id: $id, input: { filter: { hostname: "^gql.*$" } }) { count } }`, { id: group.id });
    expect(hostile.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_ERROR');

    const other = await fleet(app);
    const foreign = await gql(app, other.tech.as, `query ($id: ID!) { group(id: $id) { id } }`, { id: group.id });
    expect(foreign.body.errors?.[0]).toMatchObject({ message: 'Group not found', extensions: { code: 'NOT_FOUND' } });
    const removed = await gql(app, tech.as, `mutation ($id: ID!) { deleteGroup(id: $id) }`, { id: group.id });
    expect(removed.body.data?.deleteGroup).toBe(true);
    expect((await rest(app, tech.as).get(`/devices/${linux.deviceId}`)).status).toBe(200);
  });
});
