import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../src/db/embedded.js';
import { createTestApp, type TestApp } from './support/app.js';
import { TestClock } from './support/clock.js';
import { gql, rest } from './support/clients.js';
import { auditOf, sql } from './support/db.js';
import { agentCall, enroll, fleet, type EnrolledAgent } from './support/devices.js';
import { buildOrg, buildUser, type BuiltUser } from './support/factories.js';
import { REPO, sha256, startReleasesApi, type FakeBinary, type ReleasesApi } from './support/releases-api.js';

// Agent releases (spec, Versioning 4–8) through the real HTTP interface: a fake GitHub-compatible
// releases API on loopback, two servers (BINARY_SOURCE=github with AGENT_AUTO_PROMOTE on, and
// BINARY_SOURCE=local with it off), agents heartbeating, and install.sh run by `sh`.

/** A stand-in agent binary: a shell script that records how it was invoked next to itself. */
const fakeAgent = (label: string) => `#!/bin/sh\n# fake rmm agent ${label}\nprintf '%s\\n' "$@" > "$(dirname "$0")/invoked-with"\n`;
const binary = (name: string, version: string): FakeBinary => ({ name, content: fakeAgent(`${name} ${version}`) });

/** The platform this test runs on, as the installer names it (null: the installer cannot run here). */
const HOST_ARCH = os.platform() === 'linux' ? ({ x64: 'amd64', arm64: 'arm64' } as Record<string, string>)[os.arch()] ?? null : null;

/** Runs a command with `sh` without blocking the event loop (the server answering it lives in this process). */
function run(script: string, args: string[], env: Record<string, string>, cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('sh', [script, ...args], { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: cwd, ...env }, cwd, timeout: 30_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
    });
  });
}

const tempDir = (prefix: string) => fs.mkdtempSync(path.join(os.tmpdir(), prefix));

/** An app with a fixed port, so PUBLIC_URL (what install.sh and local download URLs name) reaches it. */
async function releasesApp(releases: ReleasesApi, env: Record<string, string>, clock?: TestClock): Promise<{ app: TestApp; publicUrl: string }> {
  const port = await freePort();
  const publicUrl = `http://127.0.0.1:${port}`;
  const app = await createTestApp({
    env: { PORT: String(port), PUBLIC_URL: publicUrl, ALLOW_PRIVATE_NETWORK_TARGETS: 'true', AGENT_RELEASES_API_URL: releases.apiUrl, ...env },
    ...(clock ? { start: { clock } } : {}),
  });
  return { app, publicUrl };
}

async function upgradeTo(app: TestApp, agent: EnrolledAgent, agentVersion: string) {
  const res = await agentCall(app, agent, '/heartbeat', { agentVersion });
  expect(res.status).toBe(200);
  return res.body.upgradeTo;
}

// ── BINARY_SOURCE=github, AGENT_AUTO_PROMOTE=true (the defaults) ─────────────────────────────────

describe('BINARY_SOURCE=github with AGENT_AUTO_PROMOTE (the defaults)', () => {
  const clock = new TestClock();
  let releases: ReleasesApi;
  let app: TestApp;
  let publicUrl: string;
  let platform: BuiltUser;
  const stable = ['rmm-agent-linux-amd64', 'rmm-agent-linux-arm64', 'rmm-agent-windows-amd64.exe', 'rmm-agent-darwin-arm64', 'rmm-watchdog-linux-amd64'].map((n) => binary(n, '1.1.0'));
  const STABLE_LABELS = ['agent:linux/amd64', 'agent:linux/arm64', 'agent:macos/arm64', 'agent:windows/amd64', 'watchdog:linux/amd64'];
  const assetUrl = (tag: string, name: string) => `${new URL(releases.apiUrl).origin}/${REPO}/releases/download/${tag}/${name}`;
  const stableSum = (name: string) => sha256(stable.find((b) => b.name === name)!.content);

  beforeAll(async () => {
    // A Wednesday, 12:00 UTC: the update windows below open and close around it.
    const noon = new Date();
    noon.setUTCHours(12, 0, 0, 0);
    noon.setUTCDate(noon.getUTCDate() + ((3 - noon.getUTCDay() + 7) % 7 || 7));
    clock.set(noon);
    releases = await startReleasesApi();
    ({ app, publicUrl } = await releasesApp(releases, { AGENT_RELEASES_TOKEN: 'release-token' }, clock));
    platform = await buildUser(app, { role: 'Platform Admin' });
    releases.publish({ tag: 'v1.1.0', binaries: stable, extras: ['README.md', 'rmm-agent-linux-amd64.sig'] });
    releases.publish({ tag: 'v1.2.0-rc.1', prerelease: true, checksums: 'digest', binaries: [binary('rmm-agent-linux-amd64', '1.2.0-rc.1'), binary('rmm-agent-linux-i686', '1.2.0-rc.1')] });
  });
  afterAll(async () => {
    await app.stop();
    await releases.close();
  });

  test('a platform admin syncs the latest stable release: each binary registered with its checksum and promoted; a repeat changes nothing', async () => {
    const api = rest(app, platform.as);
    const synced = await api.post('/agent-versions/sync-github');
    expect([synced.status, synced.body]).toEqual([200, { version: '1.1.0', prerelease: false, synced: STABLE_LABELS, promoted: STABLE_LABELS }]);

    const { tech } = await fleet(app);
    const list = await rest(app, tech.as).get('/agent-versions');
    expect(list.status).toBe(200);
    expect(list.body.pagination).toEqual({ page: 1, limit: 100, total: 5 });
    const linux = list.body.data.find((v: any) => v.component === 'agent' && v.os === 'linux' && v.arch === 'amd64');
    expect(linux).toMatchObject({
      version: '1.1.0',
      assetName: 'rmm-agent-linux-amd64',
      url: assetUrl('v1.1.0', 'rmm-agent-linux-amd64'),
      checksum: stableSum('rmm-agent-linux-amd64'),
      size: Buffer.byteLength(stable[0]!.content),
      prerelease: false,
      promotedAt: expect.any(String),
    });
    const latest = await rest(app, tech.as).get('/agent-versions/latest');
    expect(latest.body.data.map((v: any) => `${v.component}:${v.os}/${v.arch}@${v.version}`)).toEqual(STABLE_LABELS.map((l) => `${l}@1.1.0`));

    // The token went to the releases API, never to the storage host its downloads redirect to.
    expect(releases.requests.filter((r) => r.host === 'api').every((r) => r.authorization === 'Bearer release-token')).toBe(true);
    expect(releases.requests.filter((r) => r.host === 'storage').map((r) => [r.path, r.authorization])).toEqual([['/objects/v1.1.0/checksums.txt', undefined]]);

    const again = await api.post('/agent-versions/sync-github?version=1.1.0');
    expect([again.status, again.body]).toEqual([200, { version: '1.1.0', prerelease: false, synced: STABLE_LABELS, promoted: [] }]);
    expect((await sql(app, `select count(*)::int as n from agent_version`))[0].n).toBe(5);
    expect(await auditOf(app, '1.1.0', ['action', 'resource_type', 'org_id', 'actor_id'])).toEqual([
      { action: 'agent_version.sync', resource_type: 'agent_version', org_id: null, actor_id: platform.user.id },
    ]);
    const events = await sql(app, `select org_id, data from outbox_event where type = 'agent_version.synced'`);
    expect(events).toEqual([{ org_id: null, data: { version: '1.1.0', prerelease: false, changed: STABLE_LABELS, promoted: STABLE_LABELS } }]);
  });

  test('a prerelease (-rc.1) is registered when asked for by version, but never latest, promoted or served without credentials', async () => {
    const api = rest(app, platform.as);
    const rc = await api.post('/agent-versions/sync-github?version=v1.2.0-rc.1');
    expect([rc.status, rc.body]).toEqual([200, { version: '1.2.0-rc.1', prerelease: true, synced: ['agent:linux/386', 'agent:linux/amd64'], promoted: [] }]);
    const rows = await api.get('/agent-versions?version=1.2.0-rc.1');
    expect(rows.body.data.map((v: any) => [v.arch, v.prerelease, v.promotedAt, v.checksum])).toEqual([
      ['386', true, null, sha256(fakeAgent('rmm-agent-linux-i686 1.2.0-rc.1'))],
      ['amd64', true, null, sha256(fakeAgent('rmm-agent-linux-amd64 1.2.0-rc.1'))],
    ]);
    expect((await api.get('/agent-versions?promoted=false')).body.pagination.total).toBe(2);
    expect((await api.get('/agent-versions/latest?component=agent')).body.data.map((v: any) => v.version)).toEqual(['1.1.0', '1.1.0', '1.1.0', '1.1.0']);

    const promote = await api.post('/agent-versions/promote', { version: '1.2.0-rc.1' });
    expect([promote.status, promote.body.code]).toEqual([400, 'VALIDATION_ERROR']);
    expect((await rest(app).get('/agents/download/linux/386')).status).toBe(404);
    expect((await rest(app).get('/agents/download/linux/amd64?version=1.2.0-rc.1')).status).toBe(404);
    // Registered all the same: whoever may read devices downloads it by version.
    const byVersion = await api.get('/agent-versions/1.2.0-rc.1/download?os=linux&arch=i686');
    expect([byVersion.status, byVersion.headers.get('location')]).toEqual([302, assetUrl('v1.2.0-rc.1', 'rmm-agent-linux-i686')]);
  });

  test('an unknown version is 404, a malformed one 400, and an upstream that fails is 502 UPSTREAM_ERROR; nothing is registered', async () => {
    const api = rest(app, platform.as);
    const unknown = await api.post('/agent-versions/sync-github?version=9.9.9');
    expect([unknown.status, unknown.body]).toEqual([404, { code: 'NOT_FOUND', message: 'Release 9.9.9 not found' }]);
    const malformed = await api.post('/agent-versions/sync-github?version=latest-please');
    expect([malformed.status, malformed.body.code]).toEqual([400, 'VALIDATION_ERROR']);

    releases.mode = 'error';
    const failing = await api.post('/agent-versions/sync-github');
    expect([failing.status, failing.body]).toEqual([502, { code: 'UPSTREAM_ERROR', message: 'The releases API answered HTTP 503' }]);
    releases.mode = 'down';
    const down = await api.post('/agent-versions/sync-github?version=1.1.0');
    expect([down.status, down.body.code]).toEqual([502, 'UPSTREAM_ERROR']);
    expect(down.body.message).toMatch(new RegExp(`^GET ${new URL(releases.apiUrl).origin}/repos/${REPO}/releases/tags/v1.1.0 failed: `));
    releases.mode = 'up';

    // Binaries without a published checksum are not offered: agents could not verify them.
    releases.publish({ tag: 'v1.3.0', checksums: 'none', binaries: [binary('rmm-agent-linux-amd64', '1.3.0')] });
    const unverifiable = await api.post('/agent-versions/sync-github?version=1.3.0');
    expect([unverifiable.status, unverifiable.body.code]).toEqual([502, 'UPSTREAM_ERROR']);
    expect(unverifiable.body.message).toContain('has no agent binaries');
    expect((await api.get('/agent-versions?version=1.3.0')).body.pagination.total).toBe(0);
    expect(await auditOf(app, '1.3.0', ['action'])).toEqual([]);

    // Agents and redirects are sent to an asset's URL: one that is not https fails the sync.
    releases.publish({ tag: 'v1.3.1', plainHttp: ['rmm-agent-linux-arm64'], binaries: ['rmm-agent-linux-amd64', 'rmm-agent-linux-arm64'].map((n) => binary(n, '1.3.1')) });
    const insecure = await api.post('/agent-versions/sync-github?version=1.3.1');
    expect([insecure.status, insecure.body]).toEqual([502, { code: 'UPSTREAM_ERROR', message: 'Release asset rmm-agent-linux-arm64 is not served over https' }]);
    expect((await api.get('/agent-versions?version=1.3.1')).body.pagination.total).toBe(0);

    // A size no binary has is registered as unknown.
    releases.publish({ tag: 'v1.3.2-rc.1', prerelease: true, binaries: [{ ...binary('rmm-agent-linux-amd64', '1.3.2-rc.1'), size: 2 ** 40 }] });
    expect((await api.post('/agent-versions/sync-github?version=1.3.2-rc.1')).status).toBe(200);
    expect((await api.get('/agent-versions?version=1.3.2-rc.1')).body.data.map((v: any) => v.size)).toEqual([null]);
  });

  test('only platform administrators sync and promote; promoting takes an MFA session', async () => {
    const org = await buildOrg(app);
    const callers: [string, BuiltUser][] = [
      ['system user who may read devices', await buildUser(app, { can: ['devices:read'] })],
      ['partner admin', await buildUser(app, { partnerId: org.partnerId, role: 'Partner Admin' })],
      ['organization admin', await buildUser(app, { orgId: org.id, role: 'Organization Admin' })],
    ];
    for (const [who, user] of callers) {
      const sync = await rest(app, user.as).post('/agent-versions/sync-github?version=1.1.0');
      expect({ who, status: sync.status, code: sync.body.code }).toEqual({ who, status: 403, code: 'FORBIDDEN' });
      const promote = await rest(app, user.as).post('/agent-versions/promote', { version: '1.1.0' });
      expect({ who, status: promote.status, code: promote.body.code }).toEqual({ who, status: 403, code: 'FORBIDDEN' });
    }
    expect((await rest(app).post('/agent-versions/sync-github')).status).toBe(401);

    const withoutMfa = await buildUser(app, { role: 'Platform Admin', mfa: false });
    const promote = await rest(app, withoutMfa.as).post('/agent-versions/promote', { version: '1.1.0' });
    expect([promote.status, promote.body.code]).toEqual([403, 'MFA_REQUIRED']);
    expect((await rest(app, withoutMfa.as).post('/agent-versions/sync-github?version=1.1.0')).status).toBe(200);
    expect((await rest(app, platform.as).post('/agent-versions/promote', { version: '9.9.9' })).status).toBe(404);
  });

  test('downloads: a 302 to the release asset with X-Checksum-Sha256, by version (signed in) or the promoted build (no credentials)', async () => {
    const { tech } = await fleet(app);
    const api = rest(app, tech.as);
    const byVersion = await api.get('/agent-versions/v1.1.0/download?os=linux&arch=x86_64');
    expect([byVersion.status, byVersion.headers.get('location'), byVersion.headers.get('x-checksum-sha256')]).toEqual([
      302,
      assetUrl('v1.1.0', 'rmm-agent-linux-amd64'),
      stableSum('rmm-agent-linux-amd64'),
    ]);
    const watchdog = await api.get('/agent-versions/1.1.0/download?os=linux&arch=amd64&component=watchdog');
    expect(watchdog.headers.get('location')).toBe(assetUrl('v1.1.0', 'rmm-watchdog-linux-amd64'));
    for (const missing of ['/agent-versions/1.1.0/download?os=linux&arch=mips', '/agent-versions/7.7.7/download?os=linux&arch=amd64', '/agent-versions/banana/download?os=linux&arch=amd64']) {
      expect({ missing, ...(await api.get(missing)) }).toMatchObject({ missing, status: 404, body: { code: 'NOT_FOUND', message: 'Agent version not found' } });
    }
    expect((await rest(app).get('/agent-versions/1.1.0/download?os=linux&arch=amd64')).status).toBe(401);

    const pub = await rest(app).get('/agents/download/windows/x64');
    expect([pub.status, pub.headers.get('location'), pub.headers.get('x-checksum-sha256')]).toEqual([302, assetUrl('v1.1.0', 'rmm-agent-windows-amd64.exe'), stableSum('rmm-agent-windows-amd64.exe')]);
    // Following the redirects (API host, then storage) yields the bytes the checksum names.
    const bytes = Buffer.from(await (await fetch(pub.headers.get('location')!)).arrayBuffer());
    expect(sha256(bytes)).toBe(pub.headers.get('x-checksum-sha256'));
    for (const missing of ['/agents/download/linux/mips', '/agents/download/beos/amd64', '/agents/download/macos/amd64', '/agents/download/linux/amd64?version=1.0.0']) {
      expect({ missing, ...(await rest(app).get(missing)) }).toMatchObject({ missing, status: 404, body: { code: 'NOT_FOUND', message: 'Agent binary not found' } });
    }
  });

  test("heartbeats offer the promoted build of the device's platform when it is newer, auto-update is on and the update window is open", async () => {
    const { org, tech, key } = await fleet(app);
    const agent = await enroll(app, key);
    const offer = { version: '1.1.0', component: 'agent', url: assetUrl('v1.1.0', 'rmm-agent-linux-amd64'), checksum: stableSum('rmm-agent-linux-amd64') };
    expect(await upgradeTo(app, agent, '1.0.0')).toEqual(offer);
    expect(await upgradeTo(app, agent, '1.1.0')).toBeNull();
    expect(await upgradeTo(app, agent, 'v1.2.0')).toBeNull();
    expect(await upgradeTo(app, agent, '1.1.0-beta.2')).toEqual(offer);
    // aarch64 is arm64; only a prerelease exists for 386; nothing for Windows on arm64.
    expect((await upgradeTo(app, await enroll(app, key, undefined, { architecture: 'aarch64' }), '1.0.0'))?.url).toBe(assetUrl('v1.1.0', 'rmm-agent-linux-arm64'));
    expect(await upgradeTo(app, await enroll(app, key, undefined, { architecture: 'i686' }), '1.0.0')).toBeNull();
    expect(await upgradeTo(app, await enroll(app, key, undefined, { osType: 'windows', architecture: 'arm64' }), '1.0.0')).toBeNull();

    // Auto-update off: no offer; the set_auto_update command switches it back on.
    expect((await rest(app, tech.as).post(`/devices/${agent.deviceId}/auto-update`, { enabled: false })).body.autoUpdate).toBe(false);
    expect(await upgradeTo(app, agent, '1.0.0')).toBeNull();
    const command = await rest(app, tech.as).post(`/devices/${agent.deviceId}/commands`, { type: 'set_auto_update', payload: { enabled: true } });
    expect(command.status).toBe(201);
    expect((await rest(app, tech.as).get(`/devices/${agent.deviceId}`)).body.autoUpdate).toBe(true);
    expect(await upgradeTo(app, agent, '1.0.0')).toEqual(offer);

    // Update windows (now: Wednesday 12:00 UTC), set through the partner's and the organization's own routes.
    const partnerEditor = await buildUser(app, { partnerId: org.partnerId, can: ['partners:write'] });
    const orgEditor = await buildUser(app, { orgId: org.id, can: ['organizations:write'] });
    const setPartnerWindow = async (window: unknown) => {
      const res = await rest(app, partnerEditor.as).patch('/orgs/partners/me', { settings: { agentUpdateWindow: window } });
      expect([res.status, res.body.settings?.agentUpdateWindow]).toEqual([200, window]);
    };
    const setOrgWindow = async (window: unknown) => {
      const res = await rest(app, orgEditor.as).patch(`/orgs/organizations/${org.id}`, { settings: { agentUpdateWindow: window } });
      expect([res.status, res.body.settings?.agentUpdateWindow]).toEqual([200, window]);
      return res.body.effectiveAgentUpdateWindow;
    };
    await setPartnerWindow({ days: ['wed'], startUtc: '13:00', endUtc: '15:00' });
    expect(await upgradeTo(app, agent, '1.0.0')).toBeNull();
    // The organization's window overrides its partner's: Tuesday 22:00 until 12:30 the next morning.
    expect(await setOrgWindow({ days: ['tue'], startUtc: '22:00', endUtc: '12:30' })).toEqual({ days: ['tue'], startUtc: '22:00', endUtc: '12:30', source: 'organization' });
    expect(await upgradeTo(app, agent, '1.0.0')).toEqual(offer);
    await setOrgWindow({ days: ['mon', 'tue', 'thu', 'fri', 'sat', 'sun'], startUtc: '00:00', endUtc: '00:00' });
    expect(await upgradeTo(app, agent, '1.0.0')).toBeNull();
    // Over GraphQL too: a window that opens at 12:30 is still closed at noon.
    const viaGraphql = await gql(
      app,
      orgEditor.as,
      `mutation ($id: ID!, $input: UpdateOrganizationInput!) { updateOrganization(id: $id, input: $input) { effectiveAgentUpdateWindow { days startUtc endUtc source } } }`,
      { id: org.id, input: { settings: { agentUpdateWindow: { days: ['wed'], startUtc: '12:30', endUtc: '13:00' } } } },
    );
    expect(viaGraphql.body.data?.updateOrganization.effectiveAgentUpdateWindow).toEqual({ days: ['wed'], startUtc: '12:30', endUtc: '13:00', source: 'organization' });
    expect(await upgradeTo(app, agent, '1.0.0')).toBeNull();
    // Cleared: the organization inherits its partner's window again (closed at noon).
    expect(await setOrgWindow(null)).toEqual({ days: ['wed'], startUtc: '13:00', endUtc: '15:00', source: 'partner' });
    expect(await upgradeTo(app, agent, '1.0.0')).toBeNull();
    const partnerViaGraphql = await gql(
      app,
      partnerEditor.as,
      `mutation ($id: ID!, $input: UpdatePartnerInput!) { updatePartner(id: $id, input: $input) { settings { agentUpdateWindow { days startUtc endUtc } } } }`,
      { id: org.partnerId, input: { settings: { agentUpdateWindow: { days: ['wed'], startUtc: '06:00', endUtc: '06:00' } } } },
    );
    expect(partnerViaGraphql.body.data?.updatePartner.settings.agentUpdateWindow).toEqual({ days: ['wed'], startUtc: '06:00', endUtc: '06:00' });
    expect(await upgradeTo(app, agent, '1.0.0')).toEqual(offer);
    await setPartnerWindow(null);
    expect(await upgradeTo(app, agent, '1.0.0')).toEqual(offer);

    // A device already updating is not offered the update again.
    await agentCall(app, agent, '/update-status', { state: 'started', toVersion: '1.1.0' });
    expect(await upgradeTo(app, agent, '1.0.0')).toBeNull();
  });

  test('install.sh in github mode: the download redirects to the release asset, which the script verifies and installs', async () => {
    const dir = tempDir('rmm-install-github-');
    try {
      const script = await rest(app).get('/agents/install.sh');
      expect([script.status, script.headers.get('content-type')]).toEqual([200, expect.stringContaining('text/x-shellscript')]);
      expect(script.body).toContain(`SERVER='${publicUrl}'`);
      fs.writeFileSync(path.join(dir, 'install.sh'), script.body);
      expect(await run('-n', [path.join(dir, 'install.sh')], {}, dir)).toMatchObject({ code: 0 });
      if (!HOST_ARCH) return;
      // curl follows the 302 to the fake release host, whose certificate the test CA signs.
      const env = { TMPDIR: dir, CURL_CA_BUNDLE: path.resolve('test/fixtures/tls/ca.pem') };
      const result = await run(path.join(dir, 'install.sh'), ['--key', 'enr_test_key', '--install-dir', path.join(dir, 'bin')], env, dir);
      expect(result).toMatchObject({ code: 0, stdout: expect.stringContaining('rmm-agent 1.1.0 installed') });
      expect(fs.readFileSync(path.join(dir, 'bin', 'rmm-agent'), 'utf8')).toBe(stable.find((b) => b.name === `rmm-agent-linux-${HOST_ARCH}`)!.content);
      expect(fs.readFileSync(path.join(dir, 'bin', 'invoked-with'), 'utf8').split('\n')).toEqual(['enroll', '--server', publicUrl, '--key', 'enr_test_key', '']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the promoted targets each instance keeps in memory are read again after a minute, should a promotion notice be lost', async () => {
    const { key } = await fleet(app);
    const agent = await enroll(app, key);
    expect((await upgradeTo(app, agent, '1.0.0'))?.version).toBe('1.1.0');
    // Another instance promoted 1.1.1 and its notification never arrived here.
    await sql(
      app,
      `insert into agent_version (id, created_at, updated_at, version, component, os, arch, asset_name, url, checksum, prerelease, published_at, promoted_at)
       values (gen_random_uuid(), now(), now(), '1.1.1', 'agent', 'linux', 'amd64', 'rmm-agent-linux-amd64', 'https://releases.invalid/1.1.1', ?, false, ?, ?)`,
      ['a'.repeat(64), clock.now(), clock.now()],
    );
    expect((await upgradeTo(app, agent, '1.0.0'))?.version).toBe('1.1.0');
    clock.advance(61_000);
    expect(await upgradeTo(app, agent, '1.0.0')).toEqual({ version: '1.1.1', component: 'agent', url: 'https://releases.invalid/1.1.1', checksum: 'a'.repeat(64) });
  });

  test('install.sh quotes what it takes from the database: a promoted row holding shell syntax runs nothing', async () => {
    const dir = tempDir('rmm-install-quoted-');
    const hostile = `*)touch pwned;;x`;
    await sql(
      app,
      `insert into agent_version (id, created_at, updated_at, version, component, os, arch, asset_name, url, checksum, prerelease, published_at, promoted_at)
       values (gen_random_uuid(), now(), now(), '1.1.2', 'agent', 'linux', ?, 'rmm-agent-linux-amd64', 'https://releases.invalid/1.1.2', ?, false, ?, ?)`,
      [hostile, 'b'.repeat(64), clock.now(), clock.now()],
    );
    clock.advance(61_000);
    try {
      const script = await rest(app).get('/agents/install.sh');
      expect(script.body).toContain(`'linux/${hostile}') VERSION='1.1.2'`);
      fs.writeFileSync(path.join(dir, 'install.sh'), script.body);
      // A Linux amd64 machine whose download fails: unquoted, the row's pattern would match it and run `touch`.
      fs.mkdirSync(path.join(dir, 'fake-bin'));
      fs.writeFileSync(path.join(dir, 'fake-bin', 'uname'), '#!/bin/sh\ncase "$1" in -s) echo Linux ;; -m) echo x86_64 ;; esac\n', { mode: 0o755 });
      fs.writeFileSync(path.join(dir, 'fake-bin', 'curl'), '#!/bin/sh\nexit 22\n', { mode: 0o755 });
      const result = await run(path.join(dir, 'install.sh'), ['--key', 'enr_test_key'], { PATH: `${path.join(dir, 'fake-bin')}:${process.env.PATH ?? '/usr/bin:/bin'}`, TMPDIR: dir }, dir);
      expect(result).toMatchObject({ code: 22, stdout: expect.stringContaining('downloading rmm-agent 1.1.1 for linux/amd64') });
      expect(fs.existsSync(path.join(dir, 'pwned'))).toBe(false);
    } finally {
      await sql(app, `delete from agent_version where version = '1.1.2'`);
      clock.advance(61_000);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

// ── BINARY_SOURCE=local, AGENT_AUTO_PROMOTE=false ─────────────────────────────────────────────────

describe('BINARY_SOURCE=local without AGENT_AUTO_PROMOTE', () => {
  let releases: ReleasesApi;
  let app: TestApp;
  let publicUrl: string;
  let platform: BuiltUser;
  let binaryDir: string;
  const builds = ['rmm-agent-linux-amd64', 'rmm-agent-linux-arm64', 'rmm-watchdog-linux-amd64'].map((n) => binary(n, '2.0.0'));
  const LABELS = ['agent:linux/amd64', 'agent:linux/arm64', 'watchdog:linux/amd64'];
  const sumOf = (name: string) => sha256(builds.find((b) => b.name === name)!.content);

  beforeAll(async () => {
    releases = await startReleasesApi();
    binaryDir = tempDir('rmm-binaries-');
    ({ app, publicUrl } = await releasesApp(releases, { BINARY_SOURCE: 'local', AGENT_AUTO_PROMOTE: 'false', AGENT_BINARY_DIR: binaryDir }));
    platform = await buildUser(app, { role: 'Platform Admin' });
    releases.publish({ tag: 'v2.0.0', binaries: builds });
  });
  afterAll(async () => {
    await app.stop();
    await releases.close();
    fs.rmSync(binaryDir, { recursive: true, force: true });
  });

  test('a sync downloads each binary into AGENT_BINARY_DIR, verified against the checksums file, and promotes nothing', async () => {
    const synced = await rest(app, platform.as).post('/agent-versions/sync-github');
    expect([synced.status, synced.body]).toEqual([200, { version: '2.0.0', prerelease: false, synced: LABELS, promoted: [] }]);
    for (const build of builds) expect(fs.readFileSync(path.join(binaryDir, '2.0.0', build.name), 'utf8')).toBe(build.content);
    expect(fs.readdirSync(path.join(binaryDir, '2.0.0')).sort()).toEqual(builds.map((b) => b.name).sort());

    const { tech, key } = await fleet(app);
    const api = rest(app, tech.as);
    expect((await api.get('/agent-versions/latest')).body).toEqual({ data: [] });
    const listed = (await api.get('/agent-versions?component=agent&arch=amd64')).body.data;
    expect(listed).toEqual([expect.objectContaining({ promotedAt: null, url: `${publicUrl}/api/v1/agent-versions/2.0.0/download?os=linux&arch=amd64&component=agent` })]);
    expect(await upgradeTo(app, await enroll(app, key), '1.0.0')).toBeNull();
    expect((await rest(app).get('/agents/download/linux/amd64')).status).toBe(404);

    // Registered builds stay downloadable: served by this server, with their checksum.
    const file = await fetch(listed[0].url, { headers: { authorization: `Bearer ${tech.token}` } });
    expect([file.status, file.headers.get('x-checksum-sha256'), file.headers.get('content-disposition')]).toEqual([200, sumOf('rmm-agent-linux-amd64'), 'attachment; filename="rmm-agent-linux-amd64"']);
    expect(await file.text()).toBe(builds[0]!.content);
    const missing = await api.get('/agent-versions/2.0.0/download?os=windows&arch=amd64');
    expect([missing.status, missing.body]).toEqual([404, { code: 'NOT_FOUND', message: 'Agent version not found' }]);
  });

  test('a binary that does not match its published checksum fails the sync with 502: nothing registered, no unverified file kept', async () => {
    releases.publish({ tag: 'v2.0.1', corrupt: ['rmm-agent-linux-arm64'], binaries: ['rmm-agent-linux-amd64', 'rmm-agent-linux-arm64'].map((n) => binary(n, '2.0.1')) });
    const res = await rest(app, platform.as).post('/agent-versions/sync-github?version=2.0.1');
    expect([res.status, res.body]).toEqual([502, { code: 'UPSTREAM_ERROR', message: 'rmm-agent-linux-arm64 does not match its published SHA-256 checksum' }]);
    expect((await rest(app, platform.as).get('/agent-versions?version=2.0.1')).body.pagination.total).toBe(0);
    expect(fs.readdirSync(path.join(binaryDir, '2.0.1'))).toEqual(['rmm-agent-linux-amd64']);
    expect(await auditOf(app, '2.0.1', ['action'])).toEqual([]);
  });

  test('promote (platform admin with MFA) makes one component, then the whole version, the upgrade target, audited', async () => {
    const { key } = await fleet(app);
    const agent = await enroll(app, key);
    const withoutMfa = await buildUser(app, { role: 'Platform Admin', mfa: false });
    const refused = await rest(app, withoutMfa.as).post('/agent-versions/promote', { version: '2.0.0' });
    expect([refused.status, refused.body.code]).toEqual([403, 'MFA_REQUIRED']);
    expect(await auditOf(app, '2.0.0', ['action'])).toEqual([{ action: 'agent_version.sync' }]);

    const api = rest(app, platform.as);
    const watchdog = await api.post('/agent-versions/promote', { version: '2.0.0', component: 'watchdog' });
    expect([watchdog.status, watchdog.body]).toEqual([200, { version: '2.0.0', promoted: ['watchdog:linux/amd64'] }]);
    expect((await api.get('/agent-versions/latest')).body.data.map((v: any) => `${v.component}:${v.os}/${v.arch}`)).toEqual(['watchdog:linux/amd64']);
    expect(await upgradeTo(app, agent, '1.0.0')).toBeNull();
    expect((await rest(app).get('/agents/download/linux/amd64?component=watchdog')).status).toBe(200);

    const all = await api.post('/agent-versions/promote', { version: 'v2.0.0' });
    expect([all.status, all.body]).toEqual([200, { version: '2.0.0', promoted: LABELS }]);
    const offer = await upgradeTo(app, agent, '1.0.0');
    expect(offer).toEqual({ version: '2.0.0', component: 'agent', url: `${publicUrl}/api/v1/agents/download/linux/amd64?component=agent&version=2.0.0`, checksum: sumOf('rmm-agent-linux-amd64') });
    // The agent downloads it without credentials and checks what it got.
    const download = await fetch(offer.url);
    expect([download.status, download.headers.get('x-checksum-sha256')]).toEqual([200, offer.checksum]);
    expect(sha256(Buffer.from(await download.arrayBuffer()))).toBe(offer.checksum);

    expect(await auditOf(app, '2.0.0', ['action', 'org_id', 'actor_id', 'details'])).toEqual([
      expect.objectContaining({ action: 'agent_version.sync' }),
      { action: 'agent_version.promote', org_id: null, actor_id: platform.user.id, details: { version: '2.0.0', component: 'watchdog', promoted: ['watchdog:linux/amd64'] } },
      { action: 'agent_version.promote', org_id: null, actor_id: platform.user.id, details: { version: '2.0.0', component: null, promoted: LABELS } },
    ]);
    expect((await sql(app, `select data from outbox_event where type = 'agent_version.promoted' order by created_at`)).map((e) => e.data)).toEqual([
      { version: '2.0.0', component: 'watchdog', promoted: ['watchdog:linux/amd64'] },
      { version: '2.0.0', component: null, promoted: LABELS },
    ]);
    // Syncing again keeps the promotions and changes nothing.
    expect((await api.post('/agent-versions/sync-github?version=2.0.0')).body).toEqual({ version: '2.0.0', prerelease: false, synced: LABELS, promoted: [] });
    expect((await api.get('/agent-versions/latest')).body.data).toHaveLength(3);
  });

  const describeInstall = HOST_ARCH ? test : test.skip;
  describeInstall('the one-line installer downloads the promoted build from this server, verifies its checksum, installs it and enrolls it', async () => {
    const dir = tempDir('rmm-install-local-');
    const installed = path.join(binaryDir, '2.0.0', `rmm-agent-linux-${HOST_ARCH}`);
    const original = fs.readFileSync(installed);
    try {
      // Exactly as documented: curl … | sh -s -- --key <key>, installing into a prefix of ours instead of /usr/local/bin.
      fs.writeFileSync(path.join(dir, 'one-line.sh'), `curl -fsSL '${publicUrl}/api/v1/agents/install.sh' | RMM_INSTALL_DIR="$1" sh -s -- --key "$2"\n`);
      const env = { TMPDIR: dir };
      const result = await run(path.join(dir, 'one-line.sh'), [path.join(dir, 'bin'), 'enr_fake_key'], env, dir);
      expect(result).toMatchObject({ code: 0, stdout: expect.stringContaining(`rmm-agent 2.0.0 installed in ${path.join(dir, 'bin')} and enrolled`) });
      expect(fs.readFileSync(path.join(dir, 'bin', 'rmm-agent'))).toEqual(original);
      expect(fs.statSync(path.join(dir, 'bin', 'rmm-agent')).mode & 0o777).toBe(0o755);
      expect(fs.readFileSync(path.join(dir, 'bin', 'invoked-with'), 'utf8').split('\n')).toEqual(['enroll', '--server', publicUrl, '--key', 'enr_fake_key', '']);
      // Nothing left behind in TMPDIR but what the test put there.
      expect(fs.readdirSync(dir).sort()).toEqual(['bin', 'one-line.sh']);

      const script = path.join(dir, 'install.sh');
      fs.writeFileSync(script, (await rest(app).get('/agents/install.sh')).body);
      expect(await run(script, [], env, dir)).toMatchObject({ code: 2, stderr: expect.stringContaining('usage: install.sh --key') });

      // A binary that is not the one promoted (here: altered on disk) is refused and not installed.
      fs.writeFileSync(installed, Buffer.concat([original, Buffer.from('# altered\n')]));
      const tampered = await run(script, ['--key', 'enr_fake_key', '--install-dir', path.join(dir, 'elsewhere')], env, dir);
      expect(tampered).toMatchObject({ code: 1, stderr: expect.stringContaining(`checksum mismatch: expected ${sha256(original)}`) });
      expect(fs.existsSync(path.join(dir, 'elsewhere', 'rmm-agent'))).toBe(false);
    } finally {
      fs.writeFileSync(installed, original);
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a local download never leaves AGENT_BINARY_DIR, whatever a registered row says', async () => {
    await sql(
      app,
      `insert into agent_version (id, created_at, updated_at, version, component, os, arch, asset_name, url, checksum, prerelease, published_at, promoted_at)
       values (gen_random_uuid(), now(), now(), ?, 'agent', 'linux', 'climb', 'passwd', 'https://releases.invalid/passwd', ?, false, now(), now())`,
      [`${'../'.repeat(12)}etc`, 'c'.repeat(64)],
    );
    // A promotion drops the instance's cached targets, so the row above is read.
    const promote = () => rest(app, platform.as).post('/agent-versions/promote', { version: '2.0.0', component: 'agent' });
    expect((await promote()).status).toBe(200);
    try {
      const res = await rest(app).get('/agents/download/linux/climb');
      expect([res.status, res.body]).toEqual([404, { code: 'NOT_FOUND', message: 'Agent binary not found' }]);
    } finally {
      await sql(app, `delete from agent_version where arch = 'climb'`);
      expect((await promote()).status).toBe(200);
    }
  });
});
