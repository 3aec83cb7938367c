import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest, type As } from './support/clients.js';
import { agentCall, enroll, fleet } from './support/devices.js';
import { TestClock } from './support/clock.js';
import { sql } from './support/db.js';
import { buildOrg, buildSite, buildUser } from './support/factories.js';

const clock = new TestClock();
let app: TestApp;

beforeAll(async () => {
  app = await createTestApp({ start: { clock } });
});
afterAll(async () => {
  await app.stop();
});

async function libraryOrg() {
  const org = await buildOrg(app);
  const author = await buildUser(app, { orgId: org.id, can: ['scripts:read', 'scripts:write'] });
  const reader = await buildUser(app, { orgId: org.id, can: ['scripts:read'] });
  return { org, author, reader };
}

async function createScript(as: As, body: Record<string, unknown> = {}) {
  const res = await rest(app, as).post('/scripts', { name: `script-${Math.random().toString(36).slice(2)}`, language: 'bash', content: 'echo one', ...body });
  expect([res.status, res.body.message]).toEqual([201, undefined]);
  return res.body;
}

describe('categories and tags', () => {
  test('categories: created, listed with their script counts, renamed (scripts follow), deleted (scripts stay, uncategorized); names unique per organization', async () => {
    const { org, author, reader } = await libraryOrg();
    const api = rest(app, author.as);
    const created = await api.post('/script-library/categories', { name: 'Maintenance', description: 'housekeeping' });
    expect(created.status).toBe(201);
    expect(created.body).toEqual({ id: expect.any(String), orgId: org.id, name: 'Maintenance', description: 'housekeeping', scriptCount: 0, createdAt: expect.any(String), updatedAt: expect.any(String) });
    const twice = await api.post('/script-library/categories', { name: 'Maintenance' });
    expect([twice.status, twice.body.code]).toEqual([409, 'CONFLICT']);
    expect((await api.post('/script-library/categories', { name: '' })).status).toBe(400);

    const script = await createScript(author.as, { category: 'Maintenance' });
    const listed = await rest(app, reader.as).get('/script-library/categories');
    expect(listed.body.data).toEqual([{ ...created.body, scriptCount: 1 }]);
    expect((await rest(app, reader.as).get(`/script-library/categories/${created.body.id}`)).body.scriptCount).toBe(1);

    const renamed = await api.patch(`/script-library/categories/${created.body.id}`, { name: 'Upkeep' });
    expect([renamed.status, renamed.body.name, renamed.body.scriptCount]).toEqual([200, 'Upkeep', 1]);
    expect((await api.get(`/scripts/${script.id}`)).body.category).toBe('Upkeep');

    expect((await rest(app, reader.as).delete(`/script-library/categories/${created.body.id}`)).status).toBe(403);
    expect((await api.delete(`/script-library/categories/${created.body.id}`)).status).toBe(204);
    expect((await api.get(`/scripts/${script.id}`)).body.category).toBeNull();
    expect((await api.get(`/script-library/categories/${created.body.id}`)).status).toBe(404);

    // Another organization may use the same name.
    const other = await libraryOrg();
    expect((await rest(app, other.author.as).post('/script-library/categories', { name: 'Upkeep' })).status).toBe(201);
  });

  test('tags: created, counted, deleted (they come off the scripts)', async () => {
    const { author, reader } = await libraryOrg();
    const api = rest(app, author.as);
    const tag = await api.post('/script-library/tags', { name: 'web' });
    expect([tag.status, tag.body.name, tag.body.scriptCount]).toEqual([201, 'web', 0]);
    expect((await api.post('/script-library/tags', { name: 'web' })).status).toBe(409);
    const script = await createScript(author.as, { tags: ['web', 'linux'] });
    expect((await rest(app, reader.as).get('/script-library/tags')).body.data).toEqual([{ ...tag.body, scriptCount: 1 }]);
    expect((await api.delete(`/script-library/tags/${tag.body.id}`)).status).toBe(204);
    expect((await api.get(`/scripts/${script.id}`)).body.tags).toEqual(['linux']);
  });
});

describe('versions', () => {
  test('the first content is version 1; new versions and rollbacks add versions; history stays', async () => {
    const { author, reader } = await libraryOrg();
    const script = await createScript(author.as);
    const api = rest(app, author.as);
    const v2 = await api.post(`/script-library/scripts/${script.id}/versions`, { content: 'echo two', note: 'second' });
    expect([v2.status, v2.body.message]).toEqual([201, undefined]);
    expect(v2.body).toMatchObject({ scriptId: script.id, version: 2, content: 'echo two', note: 'second', current: true });
    expect((await api.get(`/scripts/${script.id}`)).body).toMatchObject({ version: 2, content: 'echo two' });

    const versions = await rest(app, reader.as).get(`/script-library/scripts/${script.id}/versions`);
    expect(versions.body.data.map((v: { version: number; current: boolean }) => [v.version, v.current])).toEqual([
      [2, true],
      [1, false],
    ]);
    const first = versions.body.data[1];
    expect(first).toMatchObject({ version: 1, content: 'echo one', note: null });

    const rollback = await api.post(`/script-library/scripts/${script.id}/rollback/${first.id}`);
    expect([rollback.status, rollback.body.message]).toEqual([201, undefined]);
    expect(rollback.body).toMatchObject({ version: 3, content: 'echo one', note: 'rollback to version 1', current: true });
    expect((await api.get(`/scripts/${script.id}`)).body).toMatchObject({ version: 3, content: 'echo one' });

    // A version of another script, or a malformed id, is not found.
    const other = await createScript(author.as);
    const otherVersion = (await api.get(`/script-library/scripts/${other.id}/versions`)).body.data[0];
    expect((await api.post(`/script-library/scripts/${script.id}/rollback/${otherVersion.id}`)).status).toBe(404);
    expect((await api.post(`/script-library/scripts/${script.id}/rollback/nope`)).status).toBe(404);
    expect((await api.post(`/script-library/scripts/${script.id}/versions`, { content: '' })).status).toBe(400);
    expect((await rest(app, reader.as).post(`/script-library/scripts/${script.id}/versions`, { content: 'echo x' })).status).toBe(403);

    const graph = await gql(app, reader.as, 'query ($id: ID!) { scriptVersions(scriptId: $id) { data { version content current } } }', { id: script.id });
    expect(graph.body.data!.scriptVersions.data.map((v: { version: number }) => v.version)).toEqual([3, 2, 1]);
  });
});

describe('templates and usage', () => {
  test('a script from a template', async () => {
    const { org, author, reader } = await libraryOrg();
    const templates = await rest(app, reader.as).get('/script-library/templates');
    expect(templates.status).toBe(200);
    expect(templates.body.data.map((t: { id: string }) => t.id)).toEqual(expect.arrayContaining(['powershell-basic', 'bash-basic', 'python-basic']));
    const created = await rest(app, author.as).post('/script-library/from-template/bash-basic', { name: 'My bash' });
    expect([created.status, created.body.message]).toEqual([201, undefined]);
    expect(created.body).toMatchObject({ orgId: org.id, name: 'My bash', language: 'bash', version: 1, parameters: [{ name: 'target', type: 'string', required: true }] });
    expect((await rest(app, author.as).post('/script-library/from-template/nope')).status).toBe(404);
  });

  test('usage stats: executions, success rate, average duration and the last run', async () => {
    const { org, key } = await fleet(app);
    const author = await buildUser(app, { orgId: org.id, can: ['scripts:read', 'scripts:write', 'scripts:execute'] });
    const agent = await enroll(app, key);
    const script = await createScript(author.as);
    const api = rest(app, author.as);
    expect((await api.get(`/script-library/scripts/${script.id}/usage-stats`)).body).toEqual({ executions: 0, successRate: null, averageDurationSeconds: null, lastRunAt: null });

    const run = async (exitCode: number, seconds: number) => {
      await api.post(`/scripts/${script.id}/execute`, { deviceIds: [agent.deviceId] });
      const [command] = (await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0' })).body.commands;
      await agentCall(app, agent, `/commands/${command.id}/result`, { status: 'running' });
      clock.advance(seconds * 1000);
      await agentCall(app, agent, `/commands/${command.id}/result`, { status: 'completed', exitCode });
    };
    await run(0, 10);
    await run(0, 20);
    await run(1, 30);
    await api.post(`/scripts/${script.id}/execute`, { deviceIds: [agent.deviceId] });
    const stats = (await api.get(`/script-library/scripts/${script.id}/usage-stats`)).body;
    expect(stats).toEqual({ executions: 4, successRate: 0.6667, averageDurationSeconds: expect.any(Number), lastRunAt: expect.any(String) });
    expect(stats.averageDurationSeconds).toBeGreaterThanOrEqual(20);
    expect(stats.averageDurationSeconds).toBeLessThan(21);
  });
});

describe('access', () => {
  test('usage stats of a user limited to some sites count only their sites’ devices, over REST and GraphQL', async () => {
    const { org, api: techApi } = await fleet(app);
    const [siteA1, siteA2] = [await buildSite(app, org.id), await buildSite(app, org.id)];
    const keyFor = async (siteId: string) => (await techApi.post('/enrollment-keys', { name: `key ${siteId}`, siteId })).body.key as string;
    const inA1 = await enroll(app, await keyFor(siteA1.id));
    const inA2 = await enroll(app, await keyFor(siteA2.id));
    const author = await buildUser(app, { orgId: org.id, can: ['scripts:read', 'scripts:write', 'scripts:execute'] });
    const script = await createScript(author.as);
    const run = async (agent: typeof inA1, exitCode: number) => {
      expect((await rest(app, author.as).post(`/scripts/${script.id}/execute`, { deviceIds: [agent.deviceId] })).status).toBe(202);
      const [command] = (await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0' })).body.commands;
      await agentCall(app, agent, `/commands/${command.id}/result`, { status: 'running' });
      await agentCall(app, agent, `/commands/${command.id}/result`, { status: 'completed', exitCode });
    };
    await run(inA1, 0);
    await run(inA2, 1);
    await run(inA2, 1);
    const limited = await buildUser(app, { orgId: org.id, role: 'Organization Viewer' });
    await sql(app, `update membership set site_ids = ?::jsonb where id = ?`, [JSON.stringify([siteA1.id]), limited.membership.id]);
    expect((await rest(app, limited.as).get(`/script-library/scripts/${script.id}/usage-stats`)).body).toMatchObject({ executions: 1, successRate: 1 });
    const graph = await gql(app, limited.as, 'query ($id: ID!) { scriptUsageStats(scriptId: $id) { executions successRate } }', { id: script.id });
    expect(graph.body.data.scriptUsageStats).toEqual({ executions: 1, successRate: 1 });
    // Callers not limited to sites count every execution.
    expect((await rest(app, author.as).get(`/script-library/scripts/${script.id}/usage-stats`)).body).toMatchObject({ executions: 3, successRate: 0.3333 });
  });

  test("another organization's library is not found on every route, over REST and GraphQL", async () => {
    const mine = await libraryOrg();
    const theirs = await libraryOrg();
    const admin = await buildUser(app, { orgId: theirs.org.id, role: 'Organization Admin' });
    const script = await createScript(mine.author.as);
    const category = (await rest(app, mine.author.as).post('/script-library/categories', { name: 'Mine' })).body;
    const tag = (await rest(app, mine.author.as).post('/script-library/tags', { name: 'mine' })).body;
    const version = (await rest(app, mine.author.as).get(`/script-library/scripts/${script.id}/versions`)).body.data[0];
    const api = rest(app, admin.as);
    for (const res of [
      await api.get(`/script-library/categories/${category.id}`),
      await api.patch(`/script-library/categories/${category.id}`, { name: 'Theirs' }),
      await api.delete(`/script-library/categories/${category.id}`),
      await api.delete(`/script-library/tags/${tag.id}`),
      await api.get(`/script-library/scripts/${script.id}/versions`),
      await api.post(`/script-library/scripts/${script.id}/versions`, { content: 'rm -rf /' }),
      await api.post(`/script-library/scripts/${script.id}/rollback/${version.id}`),
      await api.get(`/script-library/scripts/${script.id}/usage-stats`),
    ]) {
      expect([res.status, res.body?.code]).toEqual([404, 'NOT_FOUND']);
    }
    expect((await api.get('/script-library/categories')).body.data).toEqual([]);
    expect((await api.get('/script-library/tags')).body.data).toEqual([]);
    expect((await api.post('/script-library/categories', { name: 'x', orgId: mine.org.id })).status).toBe(404);
    for (const [query, variables] of [
      ['query ($id: ID!) { scriptCategory(id: $id) { id } }', { id: category.id }],
      ['mutation ($id: ID!) { deleteScriptTag(id: $id) }', { id: tag.id }],
      ['mutation ($id: ID!) { createScriptVersion(scriptId: $id, input: { content: "x" }) { id } }', { id: script.id }],
      ['mutation ($id: ID!, $v: ID!) { rollbackScriptVersion(scriptId: $id, versionId: $v) { id } }', { id: script.id, v: version.id }],
      ['query ($id: ID!) { scriptUsageStats(scriptId: $id) { executions } }', { id: script.id }],
    ] as const) {
      const res = await gql(app, admin.as, query, variables);
      expect(res.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    }
    expect((await rest(app, mine.author.as).get(`/scripts/${script.id}`)).body.version).toBe(1);
  });
});
