import { randomUUID } from 'node:crypto';
import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest, type As } from './support/clients.js';
import { auditOf } from './support/db.js';
import { agentCall, enroll, fleet, type EnrolledAgent } from './support/devices.js';
import { buildOrg, buildUser, unique, type BuiltUser } from './support/factories.js';

let app: TestApp;
let platform: BuiltUser;
let admin: ReturnType<typeof rest>;

beforeAll(async () => {
  app = await createTestApp();
  platform = await buildUser(app, { role: 'Platform Admin' });
  admin = rest(app, platform.as);
});
afterAll(async () => {
  await app.stop();
});

const SHA = 'A'.repeat(64);
const version = (fields: Record<string, unknown> = {}) => ({
  version: '1.0.0',
  installerUrl: 'https://downloads.example.test/app-1.0.0.msi',
  sha256: SHA,
  silentArgs: '/qn /norestart',
  detection: { type: 'registry', key: 'HKLM\\SOFTWARE\\Example\\App', valueName: 'Version', expectedValue: '1.0.0' },
  ...fields,
});
const entry = (fields: Record<string, unknown> = {}) => ({ name: `App ${unique()}`, vendor: 'Example Corp', versions: [version()], ...fields });

async function create(fields: Record<string, unknown> = {}) {
  const res = await admin.post('/third-party-catalog', entry(fields));
  expect([res.status, res.body?.details]).toEqual([201, undefined]);
  return res.body;
}

const heartbeat = async (agent: EnrolledAgent) => {
  const res = await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0' });
  expect(res.status).toBe(200);
  return res.body.commands as { id: string; type: string; payload: Record<string, any> }[];
};

describe('the third-party catalog', () => {
  test('platform administrators create an entry (201), read, change and delete it; each write is audited', async () => {
    const created = await create({ name: 'Notepad++', vendor: 'Don Ho', versions: [version(), version({ version: '1.1.0', silentArgs: undefined, detection: { type: 'file', path: 'C:\\Program Files\\App\\app.exe', version: '1.1.0' } })] });
    expect(created).toEqual({
      id: expect.any(String),
      name: 'Notepad++',
      vendor: 'Don Ho',
      versions: [
        { version: '1.0.0', installerUrl: 'https://downloads.example.test/app-1.0.0.msi', sha256: 'a'.repeat(64), silentArgs: '/qn /norestart', detection: { type: 'registry', key: 'HKLM\\SOFTWARE\\Example\\App', valueName: 'Version', expectedValue: '1.0.0' } },
        { version: '1.1.0', installerUrl: 'https://downloads.example.test/app-1.0.0.msi', sha256: 'a'.repeat(64), silentArgs: null, detection: { type: 'file', path: 'C:\\Program Files\\App\\app.exe', version: '1.1.0' } },
      ],
      serviceTested: false,
      lastTest: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect((await admin.get(`/third-party-catalog/${created.id}`)).body).toEqual(created);

    const changed = await admin.patch(`/third-party-catalog/${created.id}`, { vendor: 'Notepad++ Team', versions: [version({ version: '2.0.0', detection: { type: 'package', name: 'notepadplusplus' } })] });
    expect(changed.status).toBe(200);
    expect(changed.body).toMatchObject({ vendor: 'Notepad++ Team', versions: [{ version: '2.0.0', detection: { type: 'package', name: 'notepadplusplus' } }] });
    expect((await admin.patch(`/third-party-catalog/${created.id}`, {})).status).toBe(400);

    expect((await admin.delete(`/third-party-catalog/${created.id}`)).status).toBe(204);
    expect([(await admin.get(`/third-party-catalog/${created.id}`)).status, (await admin.get(`/third-party-catalog/${created.id}`)).body]).toEqual([404, { code: 'NOT_FOUND', message: 'Third-party catalog entry not found' }]);
    expect((await admin.delete(`/third-party-catalog/${created.id}`)).status).toBe(404);
    expect((await admin.get(`/third-party-catalog/${randomUUID()}`)).status).toBe(404);
    expect((await admin.get('/third-party-catalog/not-a-uuid')).status).toBe(404);

    expect(await auditOf(app, created.id, ['action', 'changes', 'org_id'])).toEqual([
      { action: 'third_party_catalog.create', changes: ['name', 'vendor', 'versions'], org_id: null },
      { action: 'third_party_catalog.update', changes: ['vendor', 'versions'], org_id: null },
      { action: 'third_party_catalog.delete', changes: [], org_id: null },
    ]);
  });

  test.each([
    ['an http installer URL', { versions: [version({ installerUrl: 'http://downloads.example.test/app.msi' })] }, 'versions.0.installerUrl'],
    ['a short sha256', { versions: [version({ sha256: 'abc' })] }, 'versions.0.sha256'],
    ['a sha256 that is not hex', { versions: [version({ sha256: 'g'.repeat(64) })] }, 'versions.0.sha256'],
    ['an unknown detection type', { versions: [version({ detection: { type: 'msi', productCode: '{x}' } })] }, 'versions.0.detection.type'],
    ['a registry detection without key', { versions: [version({ detection: { type: 'registry', valueName: 'Version' } })] }, 'versions.0.detection.key'],
    ['a file detection with a package name', { versions: [version({ detection: { type: 'file', path: '/opt/app', name: 'app' } })] }, 'versions.0.detection.name'],
    ['a package detection without name', { versions: [version({ detection: { type: 'package' } })] }, 'versions.0.detection.name'],
    ['no versions', { versions: [] }, 'versions'],
    ['the same version twice', { versions: [version(), version()] }, 'versions'],
    ['an unknown field', { homepage: 'https://example.test' }, ''],
  ])('%s is refused (400 VALIDATION_ERROR)', async (_what, fields, path) => {
    const res = await admin.post('/third-party-catalog', entry(fields));
    expect([res.status, res.body.code]).toEqual([400, 'VALIDATION_ERROR']);
    expect(res.body.details.map((d: { path: string }) => d.path)).toContain(path);
  });

  test('the list: newest first in cursor pages, filtered by vendor, serviceTested and search (name or vendor, any case, wildcards literal)', async () => {
    const vendor = `Vendor ${unique()}`;
    const a = await create({ name: `Alpha ${unique()}`, vendor });
    const b = await create({ name: `Beta 100% ${unique()}`, vendor });
    const c = await create({ name: `Gamma ${unique()}`, vendor: `${vendor} Labs` });

    const ofVendor = await admin.get(`/third-party-catalog?vendor=${encodeURIComponent(vendor.toUpperCase())}`);
    expect(ofVendor.status).toBe(200);
    expect(ofVendor.body.data.map((e: { id: string }) => e.id)).toEqual([b.id, a.id]);

    const searched = await admin.get(`/third-party-catalog?search=${encodeURIComponent(vendor.toLowerCase())}`);
    expect(searched.body.data.map((e: { id: string }) => e.id)).toEqual([c.id, b.id, a.id]);
    const literal = await admin.get(`/third-party-catalog?search=${encodeURIComponent('100%')}&vendor=${encodeURIComponent(vendor)}`);
    expect(literal.body.data.map((e: { id: string }) => e.id)).toEqual([b.id]);
    expect((await admin.get(`/third-party-catalog?search=${encodeURIComponent('_')}&vendor=${encodeURIComponent(vendor)}`)).body.data).toEqual([]);

    const first = await admin.get(`/third-party-catalog?search=${encodeURIComponent(vendor)}&limit=2`);
    expect(first.body.data.map((e: { id: string }) => e.id)).toEqual([c.id, b.id]);
    expect(first.body.nextCursor).toEqual(expect.any(String));
    const second = await admin.get(`/third-party-catalog?search=${encodeURIComponent(vendor)}&limit=2&cursor=${first.body.nextCursor}`);
    expect([second.body.data.map((e: { id: string }) => e.id), second.body.nextCursor]).toEqual([[a.id], null]);

    expect((await admin.get(`/third-party-catalog?vendor=${encodeURIComponent(vendor)}&serviceTested=false`)).body.data).toHaveLength(2);
    expect((await admin.get(`/third-party-catalog?vendor=${encodeURIComponent(vendor)}&serviceTested=true`)).body.data).toEqual([]);
    for (const bad of ['serviceTested=yes', 'limit=0', 'sort=name']) {
      const res = await admin.get(`/third-party-catalog?${bad}`);
      expect([res.status, res.body.code]).toEqual([400, 'VALIDATION_ERROR']);
    }
  });

  test('only system-scope callers: organization and partner users are refused 403 on every route, reads too', async () => {
    const existing = await create();
    const org = await buildOrg(app);
    const callers: [string, As][] = [
      ['organization admin', (await buildUser(app, { orgId: org.id, role: 'Organization Admin' })).as],
      ['organization technician', (await buildUser(app, { orgId: org.id, role: 'Organization Technician' })).as],
      ['partner admin', (await buildUser(app, { partnerId: org.partnerId, role: 'Partner Admin' })).as],
    ];
    for (const [who, as] of callers) {
      const api = rest(app, as);
      const answers = [
        await api.get('/third-party-catalog'),
        await api.get(`/third-party-catalog/${existing.id}`),
        await api.post('/third-party-catalog', entry()),
        await api.patch(`/third-party-catalog/${existing.id}`, { vendor: 'Mine' }),
        await api.delete(`/third-party-catalog/${existing.id}`),
        await api.post(`/third-party-catalog/${existing.id}/test`, { version: '1.0.0', deviceId: randomUUID() }),
      ];
      expect([who, answers.map((r) => [r.status, r.body?.code])]).toEqual([who, answers.map(() => [403, 'FORBIDDEN'])]);
      const viaGraphql = await gql(app, as, 'query { thirdPartyCatalog(first: 5) { totalCount } }');
      expect(viaGraphql.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    }
    // A system user without patches:write reads but does not write.
    const reader = rest(app, (await buildUser(app, { can: ['patches:read'] })).as);
    expect((await reader.get(`/third-party-catalog/${existing.id}`)).status).toBe(200);
    expect((await reader.post('/third-party-catalog', entry())).status).toBe(403);
    expect((await admin.get(`/third-party-catalog/${existing.id}`)).body).toEqual(existing);
  });
});

describe('catalog tests', () => {
  test('a test installs the version on the device (install_software); the agent’s result becomes lastTest, a pass serviceTested', async () => {
    const f = await fleet(app);
    const agent = await enroll(app, f.key);
    const created = await create({ versions: [version(), version({ version: '2.0.0', silentArgs: undefined, detection: { type: 'package', name: 'example-app' } })] });

    const queued = await admin.post(`/third-party-catalog/${created.id}/test`, { version: '2.0.0', deviceId: agent.deviceId });
    expect(queued.status).toBe(202);
    expect(queued.body).toEqual({ testId: expect.any(String), status: 'queued' });

    const [command] = await heartbeat(agent);
    expect(command).toMatchObject({
      type: 'install_software',
      payload: {
        testId: queued.body.testId,
        version: '2.0.0',
        installerUrl: 'https://downloads.example.test/app-1.0.0.msi',
        sha256: 'a'.repeat(64),
        silentArgs: null,
        detection: { type: 'package', name: 'example-app' },
      },
    });
    // Not yet answered: untested.
    expect((await admin.get(`/third-party-catalog/${created.id}`)).body).toMatchObject({ serviceTested: false, lastTest: null });

    const answer = await agentCall(app, agent, `/commands/${command!.id}/result`, { status: 'completed', exitCode: 0, result: { installed: true } });
    expect(answer.status).toBe(200);
    const passed = (await admin.get(`/third-party-catalog/${created.id}`)).body;
    expect(passed).toMatchObject({ serviceTested: true, lastTest: { version: '2.0.0', deviceId: agent.deviceId, status: 'passed', testedAt: expect.any(String) } });
    expect((await admin.get(`/third-party-catalog?serviceTested=true&search=${encodeURIComponent(created.name)}`)).body.data.map((e: { id: string }) => e.id)).toEqual([created.id]);

    // A failed test is the last test; the entry stays tested (a pass was seen since its versions changed).
    await admin.post(`/third-party-catalog/${created.id}/test`, { version: '1.0.0', deviceId: agent.deviceId });
    const [second] = await heartbeat(agent);
    expect(second).toMatchObject({ type: 'install_software', payload: { version: '1.0.0', silentArgs: '/qn /norestart', detection: { type: 'registry' } } });
    await agentCall(app, agent, `/commands/${second!.id}/result`, { status: 'failed', exitCode: 1603, stderr: 'Fatal error during installation' });
    expect((await admin.get(`/third-party-catalog/${created.id}`)).body).toMatchObject({ serviceTested: true, lastTest: { version: '1.0.0', status: 'failed' } });

    // New versions: untested again.
    const replaced = await admin.patch(`/third-party-catalog/${created.id}`, { versions: [version({ version: '3.0.0' })] });
    expect(replaced.body).toMatchObject({ serviceTested: false, lastTest: { version: '1.0.0', status: 'failed' } });

    expect((await auditOf(app, created.id, ['action', 'details'])).filter((a) => a.action === 'third_party_catalog.test').map((a) => a.details)).toEqual([
      expect.objectContaining({ version: '2.0.0', deviceId: agent.deviceId, testId: queued.body.testId, commandId: command!.id }),
      expect.objectContaining({ version: '1.0.0', deviceId: agent.deviceId, commandId: second!.id }),
    ]);
    // A pass of a version replaced meanwhile is the last test, and vouches for none of the new versions.
    await admin.post(`/third-party-catalog/${created.id}/test`, { version: '3.0.0', deviceId: agent.deviceId });
    const [third] = await heartbeat(agent);
    await admin.patch(`/third-party-catalog/${created.id}`, { versions: [version({ version: '3.0.0', sha256: 'b'.repeat(64) })] });
    await agentCall(app, agent, `/commands/${third!.id}/result`, { status: 'completed', exitCode: 0 });
    expect((await admin.get(`/third-party-catalog/${created.id}`)).body).toMatchObject({ serviceTested: false, lastTest: { version: '3.0.0', status: 'passed' } });
    // Users cannot queue install_software by hand.
    const byHand = await f.api.post(`/devices/${agent.deviceId}/commands`, { type: 'install_software', payload: {} });
    expect([byHand.status, byHand.body.code]).toEqual([400, 'VALIDATION_ERROR']);
  });

  test('an unknown version is 400; no device named nor configured is 400; an unknown device is 404; THIRD_PARTY_TEST_DEVICE_ID is the default device', async () => {
    const created = await create();
    const f = await fleet(app);
    const agent = await enroll(app, f.key);
    const unknownVersion = await admin.post(`/third-party-catalog/${created.id}/test`, { version: '9.9.9', deviceId: agent.deviceId });
    expect([unknownVersion.status, unknownVersion.body.code]).toEqual([400, 'VALIDATION_ERROR']);
    const noDevice = await admin.post(`/third-party-catalog/${created.id}/test`, { version: '1.0.0' });
    expect([noDevice.status, noDevice.body.code, noDevice.body.message]).toEqual([400, 'VALIDATION_ERROR', 'Name a deviceId: no test device is configured (THIRD_PARTY_TEST_DEVICE_ID)']);
    expect((await admin.post(`/third-party-catalog/${created.id}/test`, { version: '1.0.0', deviceId: randomUUID() })).body).toEqual({ code: 'NOT_FOUND', message: 'Device not found' });
    expect((await admin.post(`/third-party-catalog/${randomUUID()}/test`, { version: '1.0.0', deviceId: agent.deviceId })).status).toBe(404);

    const config = app.server.runtime.config.patching;
    config.thirdPartyTestDeviceId = agent.deviceId;
    try {
      const queued = await admin.post(`/third-party-catalog/${created.id}/test`, { version: '1.0.0' });
      expect(queued.status).toBe(202);
      expect((await heartbeat(agent)).map((c) => [c.type, c.payload.testId])).toEqual([['install_software', queued.body.testId]]);
    } finally {
      config.thirdPartyTestDeviceId = null;
    }
  });
});

describe('GraphQL', () => {
  const fields = 'id name vendor serviceTested lastTest { version status } versions { version installerUrl sha256 silentArgs detection { type key valueName expectedValue path version name } }';

  test('the catalog connection with its filters, one entry, and the create, update, test and delete mutations', async () => {
    const vendor = `GraphQL ${unique()}`;
    const made = await gql(app, platform.as, `mutation($input: CreateThirdPartyCatalogEntryInput!) { createThirdPartyCatalogEntry(input: $input) { ${fields} } }`, {
      input: entry({ name: 'Firefox', vendor, versions: [version({ detection: { type: 'file', path: '/usr/bin/firefox' } })] }),
    });
    expect(made.body.errors).toBeUndefined();
    const created = made.body.data.createThirdPartyCatalogEntry;
    expect(created).toMatchObject({ name: 'Firefox', vendor, serviceTested: false, lastTest: null, versions: [{ version: '1.0.0', detection: { type: 'file', path: '/usr/bin/firefox', key: null, name: null } }] });
    await create({ vendor });

    const list = await gql(app, platform.as, `query($vendor: String) { thirdPartyCatalog(first: 1, vendor: $vendor, serviceTested: false, search: "fire") { totalCount edges { node { id } } pageInfo { hasNextPage } } }`, { vendor });
    expect(list.body.errors).toBeUndefined();
    expect(list.body.data.thirdPartyCatalog).toEqual({ totalCount: 1, edges: [{ node: { id: created.id } }], pageInfo: { hasNextPage: false } });
    const all = await gql(app, platform.as, `query($vendor: String) { thirdPartyCatalog(first: 1, vendor: $vendor) { totalCount pageInfo { hasNextPage } } }`, { vendor });
    expect(all.body.data.thirdPartyCatalog).toEqual({ totalCount: 2, pageInfo: { hasNextPage: true } });

    const one = await gql(app, platform.as, `query($id: ID!) { thirdPartyCatalogEntry(id: $id) { ${fields} } }`, { id: created.id });
    expect(one.body.data.thirdPartyCatalogEntry).toEqual(created);

    const updated = await gql(app, platform.as, `mutation($id: ID!) { updateThirdPartyCatalogEntry(id: $id, input: { name: "Firefox ESR" }) { name } }`, { id: created.id });
    expect(updated.body.data.updateThirdPartyCatalogEntry).toEqual({ name: 'Firefox ESR' });

    const f = await fleet(app);
    const agent = await enroll(app, f.key);
    const tested = await gql(app, platform.as, `mutation($id: ID!, $deviceId: ID) { testThirdPartyCatalogEntry(id: $id, input: { version: "1.0.0", deviceId: $deviceId }) { testId status } }`, { id: created.id, deviceId: agent.deviceId });
    expect(tested.body.data.testThirdPartyCatalogEntry).toEqual({ testId: expect.any(String), status: 'queued' });
    expect((await heartbeat(agent)).map((c) => c.payload.testId)).toEqual([tested.body.data.testThirdPartyCatalogEntry.testId]);

    const bad = await gql(app, platform.as, `mutation($input: CreateThirdPartyCatalogEntryInput!) { createThirdPartyCatalogEntry(input: $input) { id } }`, { input: entry({ versions: [version({ installerUrl: 'ftp://x.test/a' })] }) });
    expect(bad.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_ERROR');

    const deleted = await gql(app, platform.as, `mutation($id: ID!) { deleteThirdPartyCatalogEntry(id: $id) }`, { id: created.id });
    expect(deleted.body.data.deleteThirdPartyCatalogEntry).toBe(true);
    const gone = await gql(app, platform.as, `query($id: ID!) { thirdPartyCatalogEntry(id: $id) { id } }`, { id: created.id });
    expect(gone.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');

    const tech = await buildUser(app, { orgId: f.org.id, role: 'Organization Admin' });
    const refused = await gql(app, tech.as, `mutation($input: CreateThirdPartyCatalogEntryInput!) { createThirdPartyCatalogEntry(input: $input) { id } }`, { input: entry() });
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
  });
});
