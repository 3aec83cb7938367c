import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import { agentCall, enroll, fleet } from './support/devices.js';
import { createTestDatabase } from './support/database.js';
import { sql, statementsOn } from './support/db.js';
import { buildOrg, buildUser } from './support/factories.js';

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => {
  await app.stop();
});

describe('device inventory', () => {
  test('each part lands in its own rows, replaces the last report of that part only, and reads back through GET /devices/:id/inventory', async () => {
    const { org, key } = await fleet(app);
    const agent = await enroll(app, key, 'inv');
    const reader = rest(app, (await buildUser(app, { orgId: org.id, can: ['devices:read', 'software:read'] })).as);
    const empty = await reader.get(`/devices/${agent.deviceId}/inventory`);
    expect([empty.status, empty.body]).toEqual([200, { deviceId: agent.deviceId, software: [], network: [], reportedAt: null }]);

    const report = {
      hardware: { cpu: 'x' },
      software: [
        { name: 'curl', version: '8.5.0', publisher: 'curl project', installDate: '20240131', vendorField: 'ignored' },
        { name: '7zip', version: null, installDate: '2023-05-02T10:00:00Z' },
      ],
      // The patches part belongs to the patching domain (test/patches.test.ts).
      patches: [{ source: 'microsoft', externalId: 'KB1', title: 'Cumulative update', severity: 'critical', status: 'installed' }],
      network: { eth0: { mac: '02:00:00:00:00:01', ipv4: '10.0.0.5' } },
    };
    expect((await agentCall(app, agent, '/inventory', report)).status).toBe(200);
    const read = await reader.get(`/devices/${agent.deviceId}/inventory`);
    expect(read.status).toBe(200);
    expect(read.body).toEqual({
      deviceId: agent.deviceId,
      software: [
        { name: '7zip', version: null, publisher: null, installDate: '2023-05-02' },
        { name: 'curl', version: '8.5.0', publisher: 'curl project', installDate: '2024-01-31' },
      ],
      network: [{ name: 'eth0', mac: '02:00:00:00:00:01', ipv4: ['10.0.0.5'], ipv6: [] }],
      reportedAt: expect.any(String),
    });
    // Hardware is the device's own hardwareInfo.
    expect((await reader.get(`/devices/${agent.deviceId}`)).body.hardwareInfo).toEqual({ cpu: 'x' });

    // A software report replaces the software rows; the network, not sent, stays.
    expect((await agentCall(app, agent, '/inventory', { software: [{ name: 'git', version: '2.43' }] })).status).toBe(200);
    const after = (await reader.get(`/devices/${agent.deviceId}/inventory`)).body;
    expect(after.software).toEqual([{ name: 'git', version: '2.43', publisher: null, installDate: null }]);
    expect(after.network).toEqual(read.body.network);

    // GraphQL answers the same; one statement per part, however many rows.
    const readerUser = await buildUser(app, { orgId: org.id, can: ['devices:read', 'software:read'] });
    const INVENTORY = 'query($d: ID!) { deviceInventory(deviceId: $d) { deviceId software { name version publisher installDate } network { name mac ipv4 ipv6 } reportedAt } }';
    expect((await gql(app, readerUser.as, INVENTORY, { d: agent.deviceId })).body.data?.deviceInventory).toEqual(after);
    const many = Array.from({ length: 60 }, (_, i) => ({ name: `pkg-${String(i).padStart(2, '0')}`, version: '1' }));
    expect((await agentCall(app, agent, '/inventory', { software: many })).status).toBe(200);
    const { result, statements } = await statementsOn(app, 'device_software', () => reader.get(`/devices/${agent.deviceId}/inventory`));
    expect([result.body.software.length, statements]).toEqual([60, 1]);
  });

  test('parts are checked by their owners (400 naming the item), an unknown part is refused, and nothing is written', async () => {
    const { org, key } = await fleet(app);
    const agent = await enroll(app, key, 'bad-inv');
    const reader = rest(app, (await buildUser(app, { orgId: org.id, can: ['devices:read'] })).as);
    const refused = await agentCall(app, agent, '/inventory', { hardware: { cpu: 'y' }, software: [{ name: 'ok' }, { version: '1' }] });
    expect([refused.status, refused.body.code, refused.body.details]).toEqual([400, 'VALIDATION_ERROR', [{ path: 'software.1.name', message: expect.any(String) }]]);
    expect((await agentCall(app, agent, '/inventory', { software: [{ name: 'x', installDate: '2023-02-30' }] })).body.details).toEqual([
      { path: 'software.0.installDate', message: expect.stringContaining('date') },
    ]);
    expect((await agentCall(app, agent, '/inventory', { drivers: [] })).status).toBe(400);
    expect((await reader.get(`/devices/${agent.deviceId}/inventory`)).body).toMatchObject({ software: [], reportedAt: null });
    expect((await reader.get(`/devices/${agent.deviceId}`)).body.hardwareInfo).toBeNull();
  });

  test("another organization's device is 404, and reading needs devices:read", async () => {
    const { key } = await fleet(app);
    const agent = await enroll(app, key, 'private');
    const other = await buildOrg(app);
    const stranger = rest(app, (await buildUser(app, { orgId: other.id, can: ['devices:read'] })).as);
    expect((await stranger.get(`/devices/${agent.deviceId}/inventory`)).status).toBe(404);
    const viaGraphql = await gql(app, (await buildUser(app, { orgId: other.id, can: ['devices:read'] })).as, 'query($d: ID!) { deviceInventory(deviceId: $d) { deviceId } }', { d: agent.deviceId });
    expect(viaGraphql.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const { org: own } = await fleet(app);
    const none = rest(app, (await buildUser(app, { orgId: own.id, can: ['alerts:read'] })).as);
    expect((await none.get(`/devices/${agent.deviceId}/inventory`)).status).toBe(404);
  });
});

test('the owned_inventory migration moves reported JSON into rows and hardware into hardwareInfo (and back down)', async () => {
  const db = await createTestDatabase();
  const scratch = await createTestApp({ databaseUrl: db.url });
  try {
    const { org, key } = await fleet(scratch);
    const { deviceId } = await enroll(scratch, key, 'legacy');
    const migrator = scratch.server.runtime.orm.getMigrator();
    await migrator.down({ to: 'Migration20261129020913_alert_sources' });
    const json = (value: unknown) => JSON.stringify(value);
    await sql(scratch, 'insert into device_inventory (device_id, hardware, software, patches, network, updated_at) values (?, ?::jsonb, ?::jsonb, ?::jsonb, ?::jsonb, now())', [
      deviceId,
      json({ cpu: 'x' }),
      json([{ name: 'curl', version: '8', installDate: '20240131' }, { name: 'odd', installDate: '2023-02-30' }, 'junk', { version: 'no name' }]),
      json([{ id: 'KB1', title: 'Update', installed: true }]),
      json({ eth0: { mac: '02:00:00:00:00:01', ipv4: '10.0.0.1' } }),
    ]);
    await migrator.up();
    const reader = rest(scratch, (await buildUser(scratch, { orgId: org.id, can: ['devices:read', 'software:read'] })).as);
    expect((await reader.get(`/devices/${deviceId}/inventory`)).body).toMatchObject({
      software: [
        { name: 'curl', version: '8', publisher: null, installDate: '2024-01-31' },
        { name: 'odd', version: null, publisher: null, installDate: null },
      ],
      network: [{ name: 'eth0', mac: '02:00:00:00:00:01', ipv4: ['10.0.0.1'], ipv6: [] }],
    });
    expect((await reader.get(`/devices/${deviceId}`)).body.hardwareInfo).toEqual({ cpu: 'x' });
    await migrator.down({ to: 'Migration20261129020913_alert_sources' });
    const [back] = await sql(scratch, 'select software, patches from device_inventory where device_id = ?', [deviceId]);
    expect(back.software).toHaveLength(2);
    // The patching migration dropped the inventory's patch rows (docs/decisions.md): none come back.
    expect(back.patches).toBeNull();
  } finally {
    await scratch.stop();
    await db.drop();
  }
});
