import { compareVersions } from '../src/services/shared/versions.js';
import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import { sql } from './support/db.js';
import { agentCall, enroll, fleet, type EnrolledAgent } from './support/devices.js';
import { buildSite, buildUser, unique } from './support/factories.js';

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => {
  await app.stop();
});

/** An organization with a technician (software:*), a viewer and two enrolled devices. */
async function softwareFleet() {
  const f = await fleet(app);
  const viewer = await buildUser(app, { orgId: f.org.id, role: 'Organization Viewer' });
  const a = await enroll(app, f.key, `a-${unique()}`);
  const b = await enroll(app, f.key, `b-${unique()}`);
  return { ...f, viewer, reader: rest(app, viewer.as), a, b };
}

const installer = (osType: string, fields: Record<string, unknown> = {}) => ({ osType, url: `https://downloads.example.test/${osType}/app`, sha256: 'AB'.repeat(32), ...fields });

async function reportSoftware(agent: EnrolledAgent, software: unknown[]): Promise<void> {
  const res = await agentCall(app, agent, '/inventory', { software });
  expect([res.status, res.body?.details]).toEqual([200, undefined]);
}

async function heartbeat(agent: EnrolledAgent): Promise<{ id: string; type: string; payload: Record<string, unknown> }[]> {
  const res = await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0' });
  expect(res.status).toBe(200);
  return res.body.commands;
}

const expectError = (res: { status: number; body: any }, status: number, code: string) => expect([res.status, res.body.code]).toEqual([status, code]);

test('versions compare by their dotted numbers', () => {
  const sign = (a: string, b: string) => Math.sign(compareVersions(a, b));
  expect([sign('1.10.0', '1.9.2'), sign('1.2', '1.2.0'), sign('2.0.0', '10.0'), sign('1.0.1', '1.0.1-1'), sign('124.0.6367.91', '124.0.6367.201')]).toEqual([1, 0, -1, -1, -1]);
  expect(sign('99999999999999999999.1', '99999999999999999999.0')).toBe(1);
  // A text tag past the other's last part is a pre-release.
  expect([sign('2.0.0-rc1', '2.0.0'), sign('2.0', '2.0.0-beta'), sign('2.0.0-rc2', '2.0.0-rc1'), sign('2.0.0-rc1', '1.9')]).toEqual([-1, 1, 1, 1]);
});

describe('the software catalog', () => {
  test('technicians create, read, change and delete packages; viewers read and get 403 on writes; names are unique per organization', async () => {
    const { org, api, reader } = await softwareFleet();
    const created = await api.post('/software/catalog', { name: 'Firefox', vendor: 'Mozilla', category: 'browser', description: 'A web browser' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({
      id: expect.any(String),
      orgId: org.id,
      name: 'Firefox',
      vendor: 'Mozilla',
      category: 'browser',
      description: 'A web browser',
      latestVersion: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const id = created.body.id;
    expectError(await api.post('/software/catalog', { name: 'Firefox', vendor: 'Other', category: 'browser' }), 409, 'CONFLICT');
    expectError(await api.post('/software/catalog', { name: 'X', vendor: 'Y' }), 400, 'VALIDATION_ERROR');
    expectError(await reader.post('/software/catalog', { name: 'Chrome', vendor: 'Google', category: 'browser' }), 403, 'FORBIDDEN');

    expect((await reader.get(`/software/catalog/${id}`)).body).toEqual(created.body);
    const changed = await api.patch(`/software/catalog/${id}`, { category: 'web', description: null });
    expect([changed.status, changed.body.category, changed.body.description]).toEqual([200, 'web', null]);
    expectError(await reader.patch(`/software/catalog/${id}`, { category: 'x' }), 403, 'FORBIDDEN');
    expectError(await api.patch(`/software/catalog/${id}`, {}), 400, 'VALIDATION_ERROR');
    await api.post('/software/catalog', { name: 'Chrome', vendor: 'Google', category: 'browser' });
    expectError(await api.patch(`/software/catalog/${id}`, { name: 'Chrome' }), 409, 'CONFLICT');

    const audit = await sql(app, `select action from audit_log where org_id = ? and action like 'software_catalog.%' order by created_at`, [org.id]);
    expect(audit.map((r) => r.action)).toEqual(['software_catalog.create', 'software_catalog.update', 'software_catalog.create']);

    expectError(await reader.delete(`/software/catalog/${id}`), 403, 'FORBIDDEN');
    expect((await api.delete(`/software/catalog/${id}`)).status).toBe(204);
    expectError(await api.get(`/software/catalog/${id}`), 404, 'NOT_FOUND');
  });

  test('the list filters by category and vendor (any case), newest first, in cursor pages', async () => {
    const { api, reader } = await softwareFleet();
    for (const [name, vendor, category] of [
      ['Slack', 'Slack Technologies', 'chat'],
      ['Teams', 'Microsoft', 'chat'],
      ['Word', 'Microsoft', 'office'],
    ]) {
      expect((await api.post('/software/catalog', { name, vendor, category })).status).toBe(201);
    }
    const names = (res: { body: { data: { name: string }[] } }) => res.body.data.map((c) => c.name).sort();
    const all = await reader.get('/software/catalog');
    expect([all.status, all.body.data.length, all.body.nextCursor]).toEqual([200, 3, null]);
    expect(names(await reader.get('/software/catalog?category=CHAT'))).toEqual(['Slack', 'Teams']);
    expect(names(await reader.get('/software/catalog?vendor=microsoft'))).toEqual(['Teams', 'Word']);
    const first = await reader.get('/software/catalog?limit=2');
    expect(first.body.data).toHaveLength(2);
    const second = await reader.get(`/software/catalog?limit=2&cursor=${first.body.nextCursor}`);
    expect([...first.body.data, ...second.body.data].map((c: any) => c.id)).toEqual(all.body.data.map((c: any) => c.id));
  });

  test('versions: installers checked, 409 on a duplicate, newest first, latestVersion by dotted numbers', async () => {
    const { org, api, reader } = await softwareFleet();
    const { id } = (await api.post('/software/catalog', { name: '7-Zip', vendor: 'Igor Pavlov', category: 'utility' })).body;
    const path = `/software/catalog/${id}/versions`;
    const v1 = await api.post(path, { version: '1.9.2', installers: [installer('windows', { silentArgs: '/S', detection: { type: 'registry', key: 'HKLM\\7zip' } })], releaseNotes: 'first' });
    expect(v1.status).toBe(201);
    expect(v1.body).toEqual({
      id: expect.any(String),
      catalogId: id,
      version: '1.9.2',
      installers: [{ osType: 'windows', url: 'https://downloads.example.test/windows/app', sha256: 'ab'.repeat(32), silentArgs: '/S', uninstallArgs: null, detection: { type: 'registry', key: 'HKLM\\7zip' } }],
      releaseNotes: 'first',
      createdAt: expect.any(String),
    });
    expect((await api.get(`/software/catalog/${id}`)).body.latestVersion).toBe('1.9.2');
    expectError(await api.post(path, { version: '1.9.2', installers: [installer('linux')] }), 409, 'CONFLICT');
    for (const bad of [
      [installer('windows', { sha256: 'abc' })],
      [installer('windows', { sha256: 'g'.repeat(64) })],
      [installer('windows', { url: 'http://downloads.example.test/app' })],
      [installer('solaris')],
      [installer('windows'), installer('windows')],
      [],
    ]) {
      expectError(await api.post(path, { version: '2.0', installers: bad }), 400, 'VALIDATION_ERROR');
    }
    expectError(await reader.post(path, { version: '2.0', installers: [installer('linux')] }), 403, 'FORBIDDEN');

    expect((await api.post(path, { version: '1.10.0', installers: [installer('linux')] })).status).toBe(201);
    expect((await api.get(`/software/catalog/${id}`)).body.latestVersion).toBe('1.10.0');
    // An older version added later does not move it.
    expect((await api.post(path, { version: '1.2', installers: [installer('macos')] })).status).toBe(201);
    expect((await api.get(`/software/catalog/${id}`)).body.latestVersion).toBe('1.10.0');

    const list = await reader.get(path);
    expect([list.status, list.body.data.map((v: any) => v.version), list.body.nextCursor]).toEqual([200, ['1.2', '1.10.0', '1.9.2'], null]);
    const audit = await sql(app, `select count(*)::int as n from audit_log where org_id = ? and action = 'software_version.create'`, [org.id]);
    expect(audit[0].n).toBe(3);
  });

  test('search: name or vendor in any case, exact before prefix before substring, osType by installers', async () => {
    const { api, reader } = await softwareFleet();
    const add = async (name: string, vendor: string, osTypes: string[] = []) => {
      const { id } = (await api.post('/software/catalog', { name, vendor, category: 'misc' })).body;
      if (osTypes.length > 0) expect((await api.post(`/software/catalog/${id}/versions`, { version: '1.0', installers: osTypes.map((o) => installer(o)) })).status).toBe(201);
    };
    await add('Notepad++', 'Don Ho', ['windows']);
    await add('Note', 'Acme', ['linux']);
    await add('Apple Notes', 'Apple', ['macos']);
    await add('NOTEbook', 'Jupyter', ['linux', 'windows']);
    await add('Unrelated', 'Notes Inc');
    await add('100%_App', 'Literal');
    const search = async (query: string) => {
      const res = await reader.get(`/software/catalog/search?${query}`);
      expect([res.status, res.body.message]).toEqual([200, undefined]);
      return res.body.data.map((c: any) => c.name);
    };
    expect(await search('q=note')).toEqual(['Note', 'NOTEbook', 'Notepad++', 'Unrelated', 'Apple Notes']);
    expect(await search('q=NOTE&osType=linux')).toEqual(['Note', 'NOTEbook']);
    expect(await search('q=note&osType=windows')).toEqual(['NOTEbook', 'Notepad++']);
    expect(await search('q=note&limit=2')).toEqual(['Note', 'NOTEbook']);
    // A result is the package's whole view.
    const [found] = (await reader.get('/software/catalog/search?q=notepad')).body.data;
    expect(found).toEqual((await reader.get(`/software/catalog/${found.id}`)).body);
    expect(found).toMatchObject({ name: 'Notepad++', vendor: 'Don Ho', latestVersion: '1.0' });
    // LIKE wildcards match literally.
    expect(await search(`q=${encodeURIComponent('%_')}`)).toEqual(['100%_App']);
    expectError(await reader.get('/software/catalog/search?q=note&osType=solaris'), 400, 'VALIDATION_ERROR');
    expectError(await reader.get('/software/catalog/search?q=note&limit=101'), 400, 'VALIDATION_ERROR');
    expectError(await reader.get('/software/catalog/search'), 400, 'VALIDATION_ERROR');
  });

  test('GraphQL: the catalog, one package, search, versions and the writes', async () => {
    const { tech, viewer } = await softwareFleet();
    const FIELDS = 'id name vendor category description latestVersion';
    const created = await gql(app, tech.as, `mutation($input: CreateSoftwareCatalogEntryInput!) { createSoftwareCatalogEntry(input: $input) { ${FIELDS} } }`, {
      input: { name: 'VLC', vendor: 'VideoLAN', category: 'media' },
    });
    const id = created.body.data!.createSoftwareCatalogEntry.id;
    expect(created.body.data!.createSoftwareCatalogEntry).toEqual({ id, name: 'VLC', vendor: 'VideoLAN', category: 'media', description: null, latestVersion: null });
    const version = await gql(app, tech.as, 'mutation($catalogId: ID!, $input: CreateSoftwareVersionInput!) { createSoftwareVersion(catalogId: $catalogId, input: $input) { version installers { osType sha256 } } }', {
      catalogId: id,
      input: { version: '3.0.20', installers: [installer('windows')] },
    });
    expect(version.body.data!.createSoftwareVersion).toEqual({ version: '3.0.20', installers: [{ osType: 'windows', sha256: 'ab'.repeat(32) }] });
    const updated = await gql(app, tech.as, `mutation($id: ID!, $input: UpdateSoftwareCatalogEntryInput!) { updateSoftwareCatalogEntry(id: $id, input: $input) { ${FIELDS} } }`, { id, input: { category: 'video' } });
    expect(updated.body.data!.updateSoftwareCatalogEntry).toMatchObject({ category: 'video', latestVersion: '3.0.20' });
    const read = await gql(
      app,
      viewer.as,
      `query($id: ID!) {
        softwareCatalog(first: 10) { totalCount edges { node { id } } }
        softwareCatalogEntry(id: $id) { name }
        softwareCatalogSearch(q: "vlc", osType: windows) { data { id } }
        softwareVersions(catalogId: $id) { totalCount edges { node { version } } }
      }`,
      { id },
    );
    expect(read.body.data).toEqual({
      softwareCatalog: { totalCount: 1, edges: [{ node: { id } }] },
      softwareCatalogEntry: { name: 'VLC' },
      softwareCatalogSearch: { data: [{ id }] },
      softwareVersions: { totalCount: 1, edges: [{ node: { version: '3.0.20' } }] },
    });
    const denied = await gql(app, viewer.as, 'mutation($id: ID!) { deleteSoftwareCatalogEntry(id: $id) }', { id });
    expect(denied.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect((await gql(app, tech.as, 'mutation($id: ID!) { deleteSoftwareCatalogEntry(id: $id) }', { id })).body.data).toEqual({ deleteSoftwareCatalogEntry: true });
  });
});

describe('software inventory', () => {
  test('a device’s software is software:read: a role that reads devices only sees the device’s inventory without it; long names page', async () => {
    const { org, reader, a } = await softwareFleet();
    const long = `${'Ünïcode application '.repeat(24)}`.slice(0, 500);
    await reportSoftware(a, [{ name: long, version: '1.0' }, { name: `${long.slice(0, 499)}Z`, version: '2.0' }, { name: 'Zip', version: '3.0' }]);
    const devicesOnly = rest(app, (await buildUser(app, { orgId: org.id, can: ['devices:read'] })).as);
    const inventory = await devicesOnly.get(`/devices/${a.deviceId}/inventory`);
    expect([inventory.status, inventory.body.software]).toEqual([200, []]);
    expect((await reader.get(`/devices/${a.deviceId}/inventory`)).body.software).toHaveLength(3);
    // A page ending on a 500-character name hands out a cursor the next request takes.
    const first = await reader.get(`/software/inventory/${a.deviceId}?limit=1`);
    const second = await reader.get(`/software/inventory/${a.deviceId}?limit=1&cursor=${first.body.nextCursor}`);
    expect([second.status, second.body.data.length]).toEqual([200, 1]);
    const fleetFirst = await reader.get(`/software/inventory?limit=1&search=${encodeURIComponent('Ünïcode')}`);
    const fleetSecond = await reader.get(`/software/inventory?limit=1&search=${encodeURIComponent('Ünïcode')}&cursor=${fleetFirst.body.nextCursor}`);
    expect([fleetSecond.status, fleetSecond.body.data.map((row: any) => row.version)]).toEqual([200, ['2.0']]);
  });

  test('agents report vendor (or publisher); the fleet list groups by name and version with device counts, filtered by search, vendor and site', async () => {
    const { org, api, reader, a, b } = await softwareFleet();
    await reportSoftware(a, [
      { name: 'curl', version: '8.5.0', vendor: 'curl project', installDate: '20240131' },
      { name: 'git', version: '2.43.0', publisher: 'Git SCM' },
      { name: 'zoom', version: '5.0', vendor: 'Zoom', publisher: 'ignored' },
    ]);
    await reportSoftware(b, [
      { name: 'curl', version: '8.5.0', publisher: 'curl project' },
      { name: 'curl', version: '7.88.1', publisher: 'curl project' },
    ]);
    const list = await reader.get('/software/inventory');
    expect([list.status, list.body.message]).toEqual([200, undefined]);
    expect(list.body).toEqual({
      data: [
        { name: 'curl', version: expect.any(String), vendor: 'curl project', deviceCount: expect.any(Number) },
        { name: 'curl', version: expect.any(String), vendor: 'curl project', deviceCount: expect.any(Number) },
        { name: 'git', version: '2.43.0', vendor: 'Git SCM', deviceCount: 1 },
        { name: 'zoom', version: '5.0', vendor: 'Zoom', deviceCount: 1 },
      ],
      nextCursor: null,
    });
    const curl = Object.fromEntries(list.body.data.filter((i: any) => i.name === 'curl').map((i: any) => [i.version, i.deviceCount]));
    expect(curl).toEqual({ '8.5.0': 2, '7.88.1': 1 });

    const names = async (query: string) => (await reader.get(`/software/inventory?${query}`)).body.data.map((i: any) => `${i.name}@${i.version}`).sort();
    expect(await names('search=GIT')).toEqual(['git@2.43.0']);
    expect(await names('search=scm')).toEqual(['git@2.43.0']);
    expect(await names('vendor=CURL%20PROJECT')).toEqual(['curl@7.88.1', 'curl@8.5.0']);
    expect(await names('search=%25')).toEqual([]);

    // Cursor pages walk the same groups.
    const first = await reader.get('/software/inventory?limit=3');
    const second = await reader.get(`/software/inventory?limit=3&cursor=${first.body.nextCursor}`);
    expect([second.status, second.body.message]).toEqual([200, undefined]);
    expect([...first.body.data, ...second.body.data]).toEqual(list.body.data);
    expect(second.body.nextCursor).toBeNull();

    // Sites: the filter, and a user limited to one site sees only its devices.
    const [siteA, siteB] = [await buildSite(app, org.id), await buildSite(app, org.id)];
    await sql(app, 'update device set site_id = ? where id = ?', [siteA.id, a.deviceId]);
    await sql(app, 'update device set site_id = ? where id = ?', [siteB.id, b.deviceId]);
    expect(await names(`siteId=${siteB.id}`)).toEqual(['curl@7.88.1', 'curl@8.5.0']);
    const limited = await buildUser(app, { orgId: org.id, role: 'Organization Viewer' });
    await sql(app, 'update membership set site_ids = ?::jsonb where id = ?', [JSON.stringify([siteA.id]), limited.membership.id]);
    const seen = await rest(app, limited.as).get('/software/inventory');
    expect(seen.body.data.map((i: any) => [i.name, i.version, i.deviceCount])).toEqual([
      ['curl', '8.5.0', 1],
      ['git', '2.43.0', 1],
      ['zoom', '5.0', 1],
    ]);
    expectError(await rest(app, limited.as).get(`/software/inventory/${b.deviceId}`), 404, 'NOT_FOUND');
    expectError(await api.get('/software/inventory?orgId=nope'), 400, 'VALIDATION_ERROR');

    // The device's inventory view still lists its software (read through the software domain).
    const inventory = await reader.get(`/devices/${a.deviceId}/inventory`);
    expect(inventory.body.software).toEqual([
      { name: 'curl', version: '8.5.0', publisher: 'curl project', installDate: '2024-01-31' },
      { name: 'git', version: '2.43.0', publisher: 'Git SCM', installDate: null },
      { name: 'zoom', version: '5.0', publisher: 'Zoom', installDate: null },
    ]);

    const viaGraphql = await gql(app, limited.as, 'query { softwareInventory(first: 2) { totalCount edges { node { name version vendor deviceCount } } pageInfo { hasNextPage } } }');
    expect(viaGraphql.body.data!.softwareInventory).toEqual({
      totalCount: 3,
      edges: seen.body.data.slice(0, 2).map((node: any) => ({ node })),
      pageInfo: { hasNextPage: true },
    });
  });

  test('a device’s list, and an uninstall: the agent gets the command, a completed result removes the item, a failed one keeps it', async () => {
    const { org, api, reader, tech, a } = await softwareFleet();
    await reportSoftware(a, [
      { name: 'vlc', version: '3.0.20', vendor: 'VideoLAN', installDate: '2024-02-01' },
      { name: 'slack', version: '4.36', vendor: 'Slack' },
    ]);
    const list = await reader.get(`/software/inventory/${a.deviceId}`);
    expect(list.status).toBe(200);
    expect(list.body).toEqual({
      data: [
        { id: expect.any(String), name: 'slack', version: '4.36', vendor: 'Slack', installDate: null },
        { id: expect.any(String), name: 'vlc', version: '3.0.20', vendor: 'VideoLAN', installDate: '2024-02-01' },
      ],
      nextCursor: null,
    });
    const [slack, vlc] = list.body.data;
    expectError(await reader.post(`/software/inventory/${a.deviceId}/${vlc.id}/uninstall`, {}), 403, 'FORBIDDEN');
    expectError(await api.post(`/software/inventory/${a.deviceId}/00000000-0000-4000-8000-000000000000/uninstall`, {}), 404, 'NOT_FOUND');

    const queued = await api.post(`/software/inventory/${a.deviceId}/${vlc.id}/uninstall`, {});
    expect([queued.status, queued.body]).toEqual([202, { commandId: expect.any(String) }]);
    const viaGraphql = await gql(app, tech.as, 'mutation($d: ID!, $s: ID!) { uninstallDeviceSoftware(deviceId: $d, softwareId: $s) { commandId } }', { d: a.deviceId, s: slack.id });
    const slackCommand = viaGraphql.body.data!.uninstallDeviceSoftware.commandId;
    // Queued by hand through the devices' command route: refused.
    expectError(await api.post(`/devices/${a.deviceId}/commands`, { type: 'uninstall_software', payload: { softwareId: vlc.id } }), 400, 'VALIDATION_ERROR');

    const commands = await heartbeat(a);
    expect(commands.map((c) => [c.id, c.type, c.payload]).sort()).toEqual(
      [
        [queued.body.commandId, 'uninstall_software', { softwareId: vlc.id, name: 'vlc', version: '3.0.20' }],
        [slackCommand, 'uninstall_software', { softwareId: slack.id, name: 'slack', version: '4.36' }],
      ].sort(),
    );
    expect((await agentCall(app, a, `/commands/${queued.body.commandId}/result`, { status: 'completed', exitCode: 0 })).status).toBe(200);
    expect((await agentCall(app, a, `/commands/${slackCommand}/result`, { status: 'failed', exitCode: 1 })).status).toBe(200);
    expect((await reader.get(`/software/inventory/${a.deviceId}`)).body.data.map((s: any) => s.name)).toEqual(['slack']);
    const audit = await sql(app, `select count(*)::int as n from audit_log where org_id = ? and action = 'software_inventory.uninstall'`, [org.id]);
    expect(audit[0].n).toBe(2);

    const device = await gql(app, tech.as, 'query($d: ID!) { deviceSoftware(deviceId: $d) { totalCount edges { node { id name } } } }', { d: a.deviceId });
    expect(device.body.errors).toBeUndefined();
    expect(device.body.data!.deviceSoftware).toEqual({ totalCount: 1, edges: [{ node: { id: slack.id, name: 'slack' } }] });
  });

  test('another organization’s packages, versions and devices are 404 on every route (REST and GraphQL)', async () => {
    const mine = await softwareFleet();
    const theirs = await softwareFleet();
    const { id } = (await theirs.api.post('/software/catalog', { name: 'Secret', vendor: 'Them', category: 'x' })).body;
    await theirs.api.post(`/software/catalog/${id}/versions`, { version: '1.0', installers: [installer('linux')] });
    await reportSoftware(theirs.a, [{ name: 'secret-tool', version: '1.0' }]);
    const [item] = (await theirs.api.get(`/software/inventory/${theirs.a.deviceId}`)).body.data;
    const { api } = mine;

    expectError(await api.get(`/software/catalog/${id}`), 404, 'NOT_FOUND');
    expectError(await api.patch(`/software/catalog/${id}`, { category: 'y' }), 404, 'NOT_FOUND');
    expectError(await api.delete(`/software/catalog/${id}`), 404, 'NOT_FOUND');
    expectError(await api.get(`/software/catalog/${id}/versions`), 404, 'NOT_FOUND');
    expectError(await api.post(`/software/catalog/${id}/versions`, { version: '2.0', installers: [installer('linux')] }), 404, 'NOT_FOUND');
    expectError(await api.get(`/software/inventory/${theirs.a.deviceId}`), 404, 'NOT_FOUND');
    expectError(await api.post(`/software/inventory/${theirs.a.deviceId}/${item.id}/uninstall`, {}), 404, 'NOT_FOUND');
    expectError(await api.post(`/software/inventory/${mine.a.deviceId}/${item.id}/uninstall`, {}), 404, 'NOT_FOUND');
    expectError(await api.post('/software/catalog', { orgId: theirs.org.id, name: 'Mine', vendor: 'Me', category: 'x' }), 404, 'NOT_FOUND');
    expect((await api.get('/software/catalog')).body.data).toEqual([]);
    expect((await api.get('/software/catalog/search?q=secret')).body.data).toEqual([]);
    expect((await api.get('/software/inventory')).body.data).toEqual([]);
    expect((await api.get(`/software/inventory?orgId=${theirs.org.id}`)).body.data).toEqual([]);

    const codes = async (query: string, variables: Record<string, unknown>) => (await gql(app, mine.tech.as, query, variables)).body.errors?.map((e) => e.extensions?.code);
    const vars = { id, d: theirs.a.deviceId, s: item.id };
    for (const query of [
      'query($id: ID!) { softwareCatalogEntry(id: $id) { id } }',
      'query($id: ID!) { softwareVersions(catalogId: $id) { edges { node { id } } } }',
      'query($d: ID!) { deviceSoftware(deviceId: $d) { edges { node { id } } } }',
      'mutation($id: ID!) { updateSoftwareCatalogEntry(id: $id, input: { category: "y" }) { id } }',
      'mutation($id: ID!) { deleteSoftwareCatalogEntry(id: $id) }',
      'mutation($id: ID!) { createSoftwareVersion(catalogId: $id, input: { version: "2.0", installers: [{ osType: linux, url: "https://x.test/a", sha256: "' + 'a'.repeat(64) + '" }] }) { id } }',
      'mutation($d: ID!, $s: ID!) { uninstallDeviceSoftware(deviceId: $d, softwareId: $s) { commandId } }',
    ]) {
      const used = Object.fromEntries(Object.entries(vars).filter(([k]) => query.includes(`$${k}:`)));
      expect([query, await codes(query, used)]).toEqual([query, ['NOT_FOUND']]);
    }
    const lists = await gql(app, mine.tech.as, 'query { softwareCatalog { totalCount } softwareInventory { totalCount } softwareCatalogSearch(q: "secret") { data { id } } }');
    expect(lists.body.data).toEqual({ softwareCatalog: { totalCount: 0 }, softwareInventory: { totalCount: 0 }, softwareCatalogSearch: { data: [] } });
    // Nothing of theirs changed.
    expect((await theirs.api.get(`/software/catalog/${id}`)).body.latestVersion).toBe('1.0');
  });
});
