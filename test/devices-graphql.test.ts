import crypto from 'node:crypto';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { DOMAIN_EVENT_TOPIC } from '../src/events/dispatcher.js';
import type { DomainEvent } from '../src/events/types.js';
import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import { TestClock } from './support/clock.js';
import { sql, statementsOn } from './support/db.js';
import { eventually } from './support/eventually.js';
import { agentCall, agentInfo, enroll, fleet as devicesFleet } from './support/devices.js';
import { buildOrg, buildSite, buildUser, type BuiltUser } from './support/factories.js';

// The GraphQL side of devices, enrollment keys and agent versions; REST (test/devices.test.ts) is the reference.

/** Reads and live updates: what a dashboard viewer holds. */
const READ = ['devices:read'] as const;
/** A technician's device work; each test takes the least it needs. */
const WORK = ['devices:read', 'devices:write', 'devices:execute', 'devices:delete'] as const;

/** An organization with a technician holding exactly `WORK` and an enrollment key. */
const fleet = (app: TestApp) => devicesFleet(app, { user: { can: [...WORK] } });

/** A GraphQL call that must succeed; answers its data. */
async function ok(app: TestApp, user: BuiltUser, query: string, variables?: Record<string, unknown>): Promise<any> {
  const res = await gql(app, user.as, query, variables);
  expect(res.body.errors).toBeUndefined();
  return res.body.data;
}

/** A GraphQL call that must fail; answers its error codes. */
async function refused(app: TestApp, user: BuiltUser, query: string, variables?: Record<string, unknown>): Promise<string[]> {
  const res = await gql(app, user.as, query, variables);
  expect(res.body.errors).toBeDefined();
  return res.body.errors!.map((e) => e.extensions?.code ?? e.message);
}

// ── subscriptions ───────────────────────────────────────────────────────────────────────────────

interface Live<T> {
  items: T[];
  errors: { message: string; extensions?: { code?: string } }[];
}

const clients: Client[] = [];

/**
 * A graphql-ws subscription as `user` on `app`; resolves once the instance holds it (it then receives
 * everything published from then on), or once the subscribe has been refused.
 */
async function subscribe<T>(app: TestApp, user: BuiltUser, query: string, variables: Record<string, unknown> = {}): Promise<Live<T>> {
  const client = createClient({ url: `${app.url.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${user.token}` }, retryAttempts: 0 });
  clients.push(client);
  const live: Live<T> = { items: [], errors: [] };
  const before = app.subscriptions(DOMAIN_EVENT_TOPIC);
  client.subscribe(
    { query, variables },
    {
      next: (msg) => {
        if (msg.errors) live.errors.push(...(msg.errors as Live<T>['errors']));
        else live.items.push(Object.values(msg.data as Record<string, T>)[0]!);
      },
      error: (error) => void live.errors.push({ message: String(error) }),
      complete: () => {},
    },
  );
  await eventually(() => app.subscriptions(DOMAIN_EVENT_TOPIC) > before || live.errors.length > 0, 10_000, 'the subscription to be live or refused');
  return live;
}

/** Records the domain events an instance has published to its subscriptions, so a test knows one has gone past. */
function publishedOn(app: TestApp): DomainEvent[] {
  const seen: DomainEvent[] = [];
  app.server.runtime.pubsub.on(DOMAIN_EVENT_TOPIC, (event) => void seen.push(event as DomainEvent));
  return seen;
}

const STATUS = 'subscription($orgId: ID) { deviceStatusChanged(orgId: $orgId) { deviceId orgId hostname status previousStatus lastSeenAt } }';
const COMMANDS = 'subscription($deviceId: ID!) { commandUpdated(deviceId: $deviceId) { id deviceId orgId type status exitCode stdout sentAt completedAt } }';
const DECOMMISSION = 'mutation($id: ID!) { decommissionDevice(id: $id) }';

// ── queries and mutations ───────────────────────────────────────────────────────────────────────

describe('queries and mutations', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await createTestApp();
  });
  afterAll(async () => {
    await app.stop();
  });

  const PAGE = `query($first: Int, $after: String, $sort: DeviceSort, $sortDir: SortDirection, $includeDecommissioned: Boolean) {
    devices(first: $first, after: $after, sort: $sort, sortDir: $sortDir, includeDecommissioned: $includeDecommissioned) {
      edges { cursor node { id hostname status } } pageInfo { hasNextPage endCursor }
    }
  }`;

  test('connection pages visit every device exactly once, for each sort and direction; edges resume where they stand; totalCount on request', async () => {
    const { org, tech, key } = await fleet(app);
    const viewer = await buildUser(app, { orgId: org.id, can: [...READ] });
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push((await enroll(app, key, `host-${String(i).padStart(2, '0')}`)).deviceId);
    // A provisioned device is pending: its view shows no lastSeenAt/enrolledAt, its cursor still sorts it.
    const provisioned = await ok(app, tech, 'mutation { provisionDevice(input: { hostname: "spare" }) { deviceId enrollmentKey } }');
    ids.push(provisioned.provisionDevice.deviceId);

    for (const sort of ['hostname', 'lastSeen', 'enrolled']) {
      for (const sortDir of ['asc', 'desc']) {
        const seen: string[] = [];
        let after: string | null = null;
        let pages = 0;
        do {
          const data: any = await ok(app, viewer, PAGE, { first: 3, after, sort, sortDir });
          const { edges, pageInfo } = data.devices;
          seen.push(...edges.map((e: { node: { id: string } }) => e.node.id));
          expect(pageInfo.endCursor).toBe(edges.at(-1)?.cursor ?? null);
          after = pageInfo.hasNextPage ? pageInfo.endCursor : null;
          pages++;
        } while (after);
        expect([sort, sortDir, seen.length, new Set(seen).size]).toEqual([sort, sortDir, ids.length, ids.length]);
        expect(new Set(seen)).toEqual(new Set(ids));
        expect(pages).toBe(3);
      }
    }

    // Any edge's cursor continues right after it, as REST's nextCursor does.
    const all = (await ok(app, viewer, PAGE, { first: 8, sort: 'lastSeen', sortDir: 'desc' })).devices.edges;
    const rest4 = (await ok(app, viewer, PAGE, { first: 4, after: all[3].cursor, sort: 'lastSeen', sortDir: 'desc' })).devices.edges;
    expect(rest4.map((e: any) => e.node.id)).toEqual(all.slice(4).map((e: any) => e.node.id));
    const restPage = await rest(app, viewer.as).get('/devices?limit=3&sort=hostname');
    const continued = (await ok(app, viewer, PAGE, { first: 3, after: restPage.body.nextCursor })).devices.edges;
    expect(continued.map((e: any) => e.node.hostname)).toEqual(['host-03', 'host-04', 'host-05']);
    expect(await refused(app, viewer, PAGE, { first: 3, after: all[0].cursor, sort: 'hostname' })).toEqual(['VALIDATION_ERROR']);
    expect(await refused(app, viewer, PAGE, { first: 1001 })).toEqual(['VALIDATION_ERROR']);

    const counted = await ok(app, viewer, '{ devices(first: 2, status: pending) { totalCount edges { node { id status enrolledAt lastSeenAt } } } all: devices(first: 1) { totalCount } }');
    expect(counted.devices).toEqual({ totalCount: 1, edges: [{ node: { id: provisioned.provisionDevice.deviceId, status: 'pending', enrolledAt: null, lastSeenAt: null } }] });
    expect(counted.all.totalCount).toBe(8);

    // Decommissioned devices are left out unless asked for.
    expect(await ok(app, tech, DECOMMISSION, { id: ids[0] })).toEqual({ decommissionDevice: true });
    expect((await ok(app, viewer, '{ devices { totalCount } }')).devices.totalCount).toBe(7);
    const withRetired = await ok(app, viewer, PAGE, { first: 50, includeDecommissioned: true });
    expect(withRetired.devices.edges.find((e: any) => e.node.id === ids[0]).node.status).toBe('decommissioned');
  });

  test('device(id) answers its commands; a list of devices reads every device’s commands together', async () => {
    const { org, tech, key } = await fleet(app);
    const viewer = await buildUser(app, { orgId: org.id, can: [...READ] });
    const a = await enroll(app, key, 'cmd-a');
    const b = await enroll(app, key, 'cmd-b');
    const queue = (deviceId: string, type: string, payload?: Record<string, unknown>) =>
      ok(app, tech, 'mutation($deviceId: ID!, $input: DeviceCommandInput!) { queueDeviceCommand(deviceId: $deviceId, input: $input) { id deviceId type status payload } }', {
        deviceId,
        input: { type, payload },
      });
    const first = (await queue(a.deviceId, 'collect_logs', { since: 'today' })).queueDeviceCommand;
    expect(first).toMatchObject({ deviceId: a.deviceId, type: 'collect_logs', status: 'pending', payload: { since: 'today' } });
    await queue(a.deviceId, 'reboot');
    await queue(a.deviceId, 'refresh_inventory');
    await queue(b.deviceId, 'reboot');

    const one = await ok(app, viewer, 'query($id: ID!) { device(id: $id) { id hostname status commands(limit: 2) { data { type status } pagination { page limit total } } } }', { id: a.deviceId });
    expect(one.device).toEqual({
      id: a.deviceId,
      hostname: 'cmd-a',
      status: 'online',
      commands: { data: [{ type: 'refresh_inventory', status: 'pending' }, { type: 'reboot', status: 'pending' }], pagination: { page: 1, limit: 2, total: 3 } },
    });
    const second = await ok(app, viewer, 'query($id: ID!) { device(id: $id) { commands(limit: 2, page: 2) { data { id } pagination { total } } } }', { id: a.deviceId });
    expect(second.device.commands).toEqual({ data: [{ id: first.id }], pagination: { total: 3 } });

    await enroll(app, key, 'cmd-c');
    const { result: list, statements } = await statementsOn(app, 'device_command', () =>
      ok(app, viewer, '{ devices(sort: hostname) { edges { node { hostname commands(limit: 5, status: pending) { data { deviceId type } pagination { total } } } } } }'),
    );
    expect(list.devices.edges.map((e: any) => [e.node.hostname, e.node.commands.pagination.total, e.node.commands.data.map((c: any) => c.type)])).toEqual([
      ['cmd-a', 3, ['refresh_inventory', 'reboot', 'collect_logs']],
      ['cmd-b', 1, ['reboot']],
      ['cmd-c', 0, []],
    ]);
    // Totals, ranked ids, rows: three queries for the whole list, not some per device.
    expect(statements).toBe(3);
    expect(list.devices.edges.every((e: any) => e.node.commands.data.every((c: any) => c.deviceId === (e.node.hostname === 'cmd-a' ? a.deviceId : b.deviceId)))).toBe(true);

    // A viewer reads but does not act; a second refresh_inventory is refused as over REST.
    expect(await refused(app, viewer, 'mutation($id: ID!) { queueDeviceCommand(deviceId: $id, input: { type: "reboot" }) { id } }', { id: a.deviceId })).toEqual(['FORBIDDEN']);
    expect(await refused(app, tech, 'mutation($id: ID!) { queueDeviceCommand(deviceId: $id, input: { type: "refresh_inventory" }) { id } }', { id: a.deviceId })).toEqual(['ALREADY_PENDING']);
    expect(await refused(app, tech, 'mutation($id: ID!) { queueDeviceCommand(deviceId: $id, input: { type: "Not A Name" }) { id } }', { id: a.deviceId })).toEqual(['VALIDATION_ERROR']);
    // Payloads nested past 64 levels, or over 64 KiB, are refused as over REST, in bulk too.
    let deep: Record<string, unknown> = {};
    for (let i = 0; i < 100; i++) deep = { n: deep };
    const QUEUE = 'mutation($id: ID!, $p: JSONObject) { queueDeviceCommand(deviceId: $id, input: { type: "collect_logs", payload: $p }) { id } }';
    const BULK = 'mutation($id: ID!, $p: JSONObject) { bulkDeviceCommands(input: { deviceIds: [$id], type: "collect_logs", payload: $p }) { commands { id } } }';
    for (const payload of [deep, { script: 'x'.repeat(70_000) }]) {
      expect(await refused(app, tech, QUEUE, { id: b.deviceId, p: payload })).toEqual(['VALIDATION_ERROR']);
      expect(await refused(app, tech, BULK, { id: b.deviceId, p: payload })).toEqual(['VALIDATION_ERROR']);
    }
    expect((await ok(app, viewer, 'query($id: ID!) { device(id: $id) { commands { pagination { total } } } }', { id: b.deviceId })).device.commands.pagination.total).toBe(1);
    expect(await refused(app, viewer, '{ devices(after: "\' or 1=1 --") { totalCount } }')).toEqual(['VALIDATION_ERROR']);
  });

  test('update, auto-update, move, bulk commands and decommission call the same services as REST', async () => {
    const { org, tech, key } = await fleet(app);
    const site = await buildSite(app, org.id);
    const agent = await enroll(app, key, 'mutable');
    const other = await enroll(app, key, 'other');

    const updated = await ok(app, tech, 'mutation($id: ID!, $input: UpdateDeviceInput!) { updateDevice(id: $id, input: $input) { tags siteId } }', {
      id: agent.deviceId,
      input: { tags: ['web', 'prod', 'web'], siteId: site.id },
    });
    expect(updated.updateDevice).toEqual({ tags: ['prod', 'web'], siteId: site.id });
    expect((await ok(app, tech, '{ devices(tag: "web") { edges { node { id } } } }')).devices.edges).toEqual([{ node: { id: agent.deviceId } }]);
    expect((await ok(app, tech, 'query($s: [ID!]) { devices(siteIds: $s) { edges { node { id } } } }', { s: [site.id] })).devices.edges).toEqual([{ node: { id: agent.deviceId } }]);
    // null clears the site, as in a PATCH body.
    expect((await ok(app, tech, 'mutation($id: ID!) { updateDevice(id: $id, input: { siteId: null }) { siteId } }', { id: agent.deviceId })).updateDevice).toEqual({ siteId: null });

    const autoUpdate = await ok(app, tech, 'mutation($id: ID!) { setDeviceAutoUpdate(id: $id, input: { enabled: false }) { autoUpdate } }', { id: agent.deviceId });
    expect(autoUpdate.setDeviceAutoUpdate).toEqual({ autoUpdate: false });

    const bulk = await ok(app, tech, 'mutation($input: BulkDeviceCommandsInput!) { bulkDeviceCommands(input: $input) { commands { deviceId type } skipped { deviceId reason } failed { deviceId code } } }', {
      input: { deviceIds: [agent.deviceId, other.deviceId, crypto.randomUUID()], type: 'refresh_inventory' },
    });
    expect(bulk.bulkDeviceCommands.commands).toHaveLength(2);
    expect(bulk.bulkDeviceCommands.failed).toEqual([{ deviceId: expect.any(String), code: 'NOT_FOUND' }]);

    const sibling = await buildOrg(app, { partnerId: org.partnerId });
    const partnerTech = await buildUser(app, { partnerId: org.partnerId, can: ['devices:write'] });
    const moved = await ok(app, partnerTech, 'mutation($id: ID!, $orgId: ID!) { moveDevice(id: $id, input: { orgId: $orgId }) { orgId siteId } }', { id: other.deviceId, orgId: sibling.id });
    expect(moved.moveDevice).toEqual({ orgId: sibling.id, siteId: null });
    expect(await refused(app, tech, 'query($id: ID!) { device(id: $id) { id } }', { id: other.deviceId })).toEqual(['NOT_FOUND']);

    expect(await refused(app, await buildUser(app, { orgId: org.id, can: ['devices:read', 'devices:write'] }), DECOMMISSION, { id: agent.deviceId })).toEqual(['FORBIDDEN']);
    expect(await ok(app, tech, DECOMMISSION, { id: agent.deviceId })).toEqual({ decommissionDevice: true });
    expect((await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0' })).status).toBe(401);
    expect(await refused(app, tech, 'mutation($id: ID!) { queueDeviceCommand(deviceId: $id, input: { type: "reboot" }) { id } }', { id: agent.deviceId })).toEqual(['DEVICE_DECOMMISSIONED']);
  });

  test('enrollment keys: list, read, rotate and delete; the key is shown only when made', async () => {
    const { org, tech } = await fleet(app);
    const viewer = await buildUser(app, { orgId: org.id, can: [...READ] });
    const made = await ok(app, tech, 'mutation($input: CreateEnrollmentKeyInput!) { createEnrollmentKey(input: $input) { id key orgId siteId status } }', { input: { name: 'Made here' } });
    expect(made.createEnrollmentKey).toMatchObject({ orgId: org.id, siteId: null, status: 'active', key: expect.stringMatching(/^enr_/) });
    const key: string = made.createEnrollmentKey.key;
    const listed = await ok(app, viewer, '{ enrollmentKeys { data { id prefix usageCount status } pagination { total } } }');
    expect(listed.enrollmentKeys.pagination.total).toBe(2);
    const [{ id, prefix }] = listed.enrollmentKeys.data;
    expect(id).toBe(made.createEnrollmentKey.id);
    expect(key.startsWith(`enr_${prefix}_`)).toBe(true);
    expect((await ok(app, viewer, 'query($id: ID!) { enrollmentKey(id: $id) { id name } }', { id })).enrollmentKey).toEqual({ id, name: 'Made here' });
    expect(await refused(app, viewer, 'mutation($id: ID!) { rotateEnrollmentKey(id: $id) { key } }', { id })).toEqual(['FORBIDDEN']);

    const rotated = (await ok(app, tech, 'mutation($id: ID!) { rotateEnrollmentKey(id: $id) { id key prefix } }', { id })).rotateEnrollmentKey;
    expect(rotated.id).toBe(id);
    expect(rotated.key).not.toBe(key);
    expect((await rest(app).post('/agents/enroll', { enrollmentKey: key, ...agentInfo('old-key') })).status).toBe(401);
    await enroll(app, rotated.key, 'new-key');
    expect(await ok(app, tech, 'mutation($id: ID!) { deleteEnrollmentKey(id: $id) }', { id })).toEqual({ deleteEnrollmentKey: true });
    expect(await refused(app, viewer, 'query($id: ID!) { enrollmentKey(id: $id) { id } }', { id })).toEqual(['NOT_FOUND']);
  });

  test('agent versions: registered builds and the current upgrade targets; promoting is for platform administrators', async () => {
    const org = await buildOrg(app);
    const viewer = await buildUser(app, { orgId: org.id, can: [...READ] });
    const row = (version: string, promoted: boolean) =>
      sql(
        app,
        `insert into agent_version (id, created_at, updated_at, version, component, os, arch, asset_name, url, checksum, prerelease, published_at, promoted_at)
         values (gen_random_uuid(), now(), now(), ?, 'agent', 'linux', 'amd64', 'rmm-agent-linux-amd64', 'https://example.test/a', ?, false, now(), ${promoted ? 'now()' : 'null'})`,
        [version, 'a'.repeat(64)],
      );
    await row('1.2.0', true);
    await row('1.3.0', false);
    const data = await ok(app, viewer, '{ agentVersions(promoted: true) { data { version component os arch promotedAt } pagination { total } } latestAgentVersions { version } }');
    expect(data.agentVersions).toEqual({ data: [{ version: '1.2.0', component: 'agent', os: 'linux', arch: 'amd64', promotedAt: expect.any(String) }], pagination: { total: 1 } });
    expect(data.latestAgentVersions).toEqual([{ version: '1.2.0' }]);
    expect(await refused(app, viewer, 'mutation { promoteAgentVersion(input: { version: "1.3.0" }) { promoted } }')).toEqual(['FORBIDDEN']);
  });

  test("another organization's device is NOT_FOUND, absent from lists and untouchable; a site-limited user sees its sites only", async () => {
    const mine = await fleet(app);
    const theirs = await fleet(app);
    const foreign = await enroll(app, theirs.key, 'foreign');
    const own = await enroll(app, mine.key, 'own');
    const me = mine.tech;
    const id = { id: foreign.deviceId };
    expect(await refused(app, me, 'query($id: ID!) { device(id: $id) { id } }', id)).toEqual(['NOT_FOUND']);
    const visible = await ok(app, me, 'query($orgs: [ID!]) { all: devices { edges { node { id } } } theirs: devices(orgIds: $orgs) { edges { node { id } } totalCount } }', { orgs: [theirs.org.id] });
    expect(visible.all.edges).toEqual([{ node: { id: own.deviceId } }]);
    expect(visible.theirs).toEqual({ edges: [], totalCount: 0 });
    for (const mutation of [
      'mutation($id: ID!) { updateDevice(id: $id, input: { tags: ["x"] }) { id } }',
      'mutation($id: ID!) { setDeviceAutoUpdate(id: $id, input: { enabled: false }) { id } }',
      'mutation($id: ID!) { queueDeviceCommand(deviceId: $id, input: { type: "reboot" }) { id } }',
      `mutation($id: ID!) { moveDevice(id: $id, input: { orgId: "${mine.org.id}" }) { id } }`,
      DECOMMISSION,
    ]) {
      expect([mutation, await refused(app, me, mutation, id)]).toEqual([mutation, ['NOT_FOUND']]);
    }
    const bulk = await ok(app, me, 'mutation($id: ID!) { bulkDeviceCommands(input: { deviceIds: [$id], type: "reboot" }) { commands { id } failed { code } } }', id);
    expect(bulk.bulkDeviceCommands).toEqual({ commands: [], failed: [{ code: 'NOT_FOUND' }] });
    expect((await ok(app, theirs.tech, 'query($id: ID!) { device(id: $id) { status tags autoUpdate commands { pagination { total } } } }', id)).device).toEqual({
      status: 'online',
      tags: [],
      autoUpdate: true,
      commands: { pagination: { total: 0 } },
    });
    expect(await refused(app, me, `mutation { createEnrollmentKey(input: { name: "x", orgId: "${theirs.org.id}" }) { id } }`)).toEqual(['NOT_FOUND']);

    const siteA = await buildSite(app, mine.org.id);
    const siteB = await buildSite(app, mine.org.id);
    const withSites = await ok(app, me, 'mutation($a: ID, $b: ID) { a: createEnrollmentKey(input: { name: "A", siteId: $a }) { key } b: createEnrollmentKey(input: { name: "B", siteId: $b }) { key } }', {
      a: siteA.id,
      b: siteB.id,
    });
    const inA = await enroll(app, withSites.a.key, 'in-a');
    const inB = await enroll(app, withSites.b.key, 'in-b');
    const limited = await buildUser(app, { orgId: mine.org.id, can: [...READ] });
    await sql(app, `update membership set site_ids = ?::jsonb where id = ?`, [JSON.stringify([siteA.id]), limited.membership.id]);
    expect((await ok(app, limited, '{ devices { edges { node { id } } totalCount } }')).devices).toEqual({ edges: [{ node: { id: inA.deviceId } }], totalCount: 1 });
    expect(await refused(app, limited, 'query($id: ID!) { device(id: $id) { id } }', { id: inB.deviceId })).toEqual(['NOT_FOUND']);
  });
});

// ── live updates ────────────────────────────────────────────────────────────────────────────────

describe('subscriptions, across two instances on one database', () => {
  let app: TestApp;
  let peer: TestApp;
  const clock = new TestClock();
  beforeAll(async () => {
    // Devices silent for 5 s go offline; the sweep runs every second, on whichever instance takes the job.
    const env = { DEVICE_OFFLINE_AFTER_SECONDS: '5' };
    app = await createTestApp({ env, start: { clock } });
    peer = await createTestApp({ env, start: { clock }, databaseUrl: app.databaseUrl });
  });
  afterAll(async () => {
    await Promise.all(clients.splice(0).map((client) => client.dispose()));
    await peer.stop();
    await app.stop();
  });

  test('commandUpdated follows a command from the mutation through the heartbeat to its result, on the other instance, within a second', async () => {
    const { org, tech, key } = await fleet(app);
    const viewer = await buildUser(app, { orgId: org.id, can: [...READ] });
    const agent = await enroll(app, key, 'runner');
    const live = await subscribe<any>(peer, viewer, COMMANDS, { deviceId: agent.deviceId });
    expect(live.errors).toEqual([]);

    const queued = await ok(app, tech, 'mutation($id: ID!) { queueDeviceCommand(deviceId: $id, input: { type: "collect_logs", payload: { since: "today" } }) { id } }', { id: agent.deviceId });
    const commandId = queued.queueDeviceCommand.id;
    await eventually(() => live.items.length === 1, 10_000, 'the queued command');
    expect(live.items[0]).toMatchObject({ id: commandId, deviceId: agent.deviceId, orgId: org.id, type: 'collect_logs', status: 'pending', sentAt: null });

    let started = Date.now();
    const beat = await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0' });
    expect(beat.body.commands).toEqual([{ id: commandId, type: 'collect_logs', payload: { since: 'today' } }]);
    await eventually(() => live.items.length === 2, 10_000, 'the command sent');
    expect(Date.now() - started).toBeLessThan(1000);
    expect(live.items[1]).toMatchObject({ id: commandId, status: 'sent', sentAt: expect.any(String), completedAt: null });

    started = Date.now();
    expect((await agentCall(app, agent, `/commands/${commandId}/result`, { status: 'completed', exitCode: 0, stdout: 'up 3 days' })).status).toBe(200);
    await eventually(() => live.items.length === 3, 10_000, 'the command completed');
    expect(Date.now() - started).toBeLessThan(1000);
    expect(live.items[2]).toMatchObject({ id: commandId, status: 'completed', exitCode: 0, stdout: 'up 3 days', completedAt: expect.any(String) });
    expect(live.errors).toEqual([]);
  });

  test('cancelDeviceCommand cancels a command; commandUpdated reports it; a finished command is CONFLICT', async () => {
    const { org, tech, key } = await fleet(app);
    const viewer = await buildUser(app, { orgId: org.id, can: [...READ] });
    const agent = await enroll(app, key, 'cancelled');
    const live = await subscribe<any>(peer, viewer, COMMANDS, { deviceId: agent.deviceId });
    const queued = await ok(app, tech, 'mutation($id: ID!) { queueDeviceCommand(deviceId: $id, input: { type: "reboot" }) { id } }', { id: agent.deviceId });
    const CANCEL = 'mutation($d: ID!, $c: ID!) { cancelDeviceCommand(deviceId: $d, commandId: $c) { id status completedAt } }';
    const vars = { d: agent.deviceId, c: queued.queueDeviceCommand.id };
    expect(await refused(app, viewer, CANCEL, vars)).toEqual(['FORBIDDEN']);
    expect((await ok(app, tech, CANCEL, vars)).cancelDeviceCommand).toEqual({ id: vars.c, status: 'cancelled', completedAt: expect.any(String) });
    await eventually(() => live.items.some((item) => item.status === 'cancelled'), 10_000, 'the cancellation');
    expect(live.items.map((item) => item.status)).toEqual(['pending', 'cancelled']);
    expect(await refused(app, tech, CANCEL, vars)).toEqual(['CONFLICT']);
  });

  test('deviceStatusChanged: offline through the sweep, online through a heartbeat, delivered by the other instance', async () => {
    const { org, key } = await fleet(app);
    const viewer = await buildUser(app, { orgId: org.id, can: [...READ] });
    const live = await subscribe<any>(peer, viewer, STATUS, { orgId: org.id });
    expect(live.errors).toEqual([]);
    const agent = await enroll(app, key, 'quiet');
    await eventually(() => live.items.some((c) => c.deviceId === agent.deviceId), 10_000, 'the enrollment');
    expect(live.items.filter((c) => c.deviceId === agent.deviceId)).toEqual([
      { deviceId: agent.deviceId, orgId: org.id, hostname: 'quiet', status: 'online', previousStatus: null, lastSeenAt: expect.any(String) },
    ]);

    clock.advance(6_000);
    await eventually(() => live.items.filter((c) => c.deviceId === agent.deviceId).length === 2, 15_000, 'the sweep');
    expect(live.items.filter((c) => c.deviceId === agent.deviceId)[1]).toEqual({ deviceId: agent.deviceId, orgId: org.id, hostname: 'quiet', status: 'offline', previousStatus: 'online', lastSeenAt: expect.any(String) });

    const started = Date.now();
    expect((await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0' })).status).toBe(200);
    await eventually(() => live.items.filter((c) => c.deviceId === agent.deviceId).length === 3, 10_000, 'the heartbeat');
    expect(Date.now() - started).toBeLessThan(1000);
    expect(live.items.filter((c) => c.deviceId === agent.deviceId)[2]).toMatchObject({ status: 'online', previousStatus: 'offline' });
    expect(live.errors).toEqual([]);
  });

  test("a subscriber never receives another organization's changes, nor those of sites it is not limited to; subscribing to another's device or organization is NOT_FOUND", async () => {
    const siteOrg = await buildOrg(app);
    const [siteA, siteB] = [await buildSite(app, siteOrg.id), await buildSite(app, siteOrg.id)];
    const mine = await fleet(app);
    const theirs = await fleet(app);
    const own = await enroll(app, mine.key, 'own');
    const foreign = await enroll(app, theirs.key, 'foreign');

    const viewer = await buildUser(app, { orgId: mine.org.id, can: [...READ] });
    const everything = await subscribe<any>(peer, viewer, STATUS);
    const commands = await subscribe<any>(peer, viewer, COMMANDS, { deviceId: own.deviceId });
    const deniedDevice = await subscribe<any>(peer, viewer, COMMANDS, { deviceId: foreign.deviceId });
    const deniedOrg = await subscribe<any>(peer, viewer, STATUS, { orgId: theirs.org.id });
    expect(deniedDevice.errors).toEqual([expect.objectContaining({ message: 'Device not found', extensions: expect.objectContaining({ code: 'NOT_FOUND' }) })]);
    expect(deniedOrg.errors).toEqual([expect.objectContaining({ message: 'Organization not found', extensions: expect.objectContaining({ code: 'NOT_FOUND' }) })]);

    // The other organization's changes go past first: once the peer has published them to its
    // subscriptions, they sit ahead of our own in the subscriber's queue, which is read in order.
    const published = publishedOn(peer);
    const wentPast = (type: string, deviceId: string) => () => published.some((e) => e.type === type && (e.data as { deviceId: string }).deviceId === deviceId);
    await ok(app, theirs.tech, 'mutation($id: ID!) { queueDeviceCommand(deviceId: $id, input: { type: "reboot" }) { id } }', { id: foreign.deviceId });
    expect(await ok(app, theirs.tech, DECOMMISSION, { id: foreign.deviceId })).toEqual({ decommissionDevice: true });
    await eventually(wentPast('device.command_updated', foreign.deviceId), 10_000, 'the foreign command on the peer');
    await eventually(wentPast('device.decommissioned', foreign.deviceId), 10_000, 'the foreign decommissioning on the peer');
    await ok(app, mine.tech, 'mutation($id: ID!) { queueDeviceCommand(deviceId: $id, input: { type: "reboot" }) { id } }', { id: own.deviceId });
    // Decommissioning cancels the command: it is seen pending, then cancelled.
    await eventually(() => commands.items.length > 0, 10_000, 'our own command');
    expect(await ok(app, mine.tech, DECOMMISSION, { id: own.deviceId })).toEqual({ decommissionDevice: true });
    await eventually(() => everything.items.some((c) => c.deviceId === own.deviceId && c.status === 'decommissioned'), 10_000, 'our own decommissioning');
    expect(everything.items.every((c) => c.orgId === mine.org.id)).toBe(true);
    expect(everything.items.filter((c) => c.deviceId === foreign.deviceId)).toEqual([]);
    await eventually(() => commands.items.some((c) => c.status === 'cancelled'), 10_000, 'our own command cancelled');
    expect(commands.items.map((c) => [c.deviceId, c.type, c.status])).toEqual([
      [own.deviceId, 'reboot', 'pending'],
      [own.deviceId, 'reboot', 'cancelled'],
    ]);

    // A user limited to site A: a change in site B goes past first, then one in site A arrives alone.
    const tech = await buildUser(app, { orgId: siteOrg.id, can: [...WORK] });
    const keyFor = async (siteId: string) =>
      (await ok(app, tech, 'mutation($s: ID) { createEnrollmentKey(input: { name: "site", siteId: $s }) { key } }', { s: siteId })).createEnrollmentKey.key as string;
    const inA = await enroll(app, await keyFor(siteA.id), 'in-a');
    const inB = await enroll(app, await keyFor(siteB.id), 'in-b');
    const limited = await buildUser(app, { orgId: siteOrg.id, can: [...READ] });
    await sql(app, `update membership set site_ids = ?::jsonb where id = ?`, [JSON.stringify([siteA.id]), limited.membership.id]);
    const siteLive = await subscribe<any>(peer, limited, STATUS, { orgId: siteOrg.id });
    const siteDenied = await subscribe<any>(peer, limited, COMMANDS, { deviceId: inB.deviceId });
    expect(siteDenied.errors).toEqual([expect.objectContaining({ extensions: expect.objectContaining({ code: 'NOT_FOUND' }) })]);
    expect(await ok(app, tech, DECOMMISSION, { id: inB.deviceId })).toEqual({ decommissionDevice: true });
    await eventually(wentPast('device.decommissioned', inB.deviceId), 10_000, 'the site B change on the peer');
    expect(await ok(app, tech, DECOMMISSION, { id: inA.deviceId })).toEqual({ decommissionDevice: true });
    const retiredA = await eventually(() => siteLive.items.find((c) => c.deviceId === inA.deviceId && c.status === 'decommissioned'), 10_000, 'the site A change');
    expect(siteLive.items.filter((c) => c.deviceId === inB.deviceId)).toEqual([]);
    // Online, unless the real-time sweep took it offline meanwhile (5 s of silence).
    expect(retiredA).toEqual({ deviceId: inA.deviceId, orgId: siteOrg.id, hostname: 'in-a', status: 'decommissioned', previousStatus: expect.stringMatching(/^(online|offline)$/), lastSeenAt: expect.any(String) });
  });
});
