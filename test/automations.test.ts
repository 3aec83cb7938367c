import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import { fleet, enroll } from './support/devices.js';
import { sql } from './support/db.js';
import { buildOrg, buildSite, buildUser, unique } from './support/factories.js';

let app: TestApp;

beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => {
  await app.stop();
});

const manual = (name = `auto-${unique()}`) => ({
  name,
  trigger: { type: 'manual' },
  target: { type: 'organization' },
  steps: [{ type: 'command', commandType: 'refresh_inventory' }],
});

/** An organization and a user who may manage its automations and nothing more. */
async function writer() {
  const org = await buildOrg(app);
  const user = await buildUser(app, { orgId: org.id, can: ['automations:read', 'automations:write'] });
  return { org, user, api: rest(app, user.as) };
}

describe('automation definitions', () => {
  test('create, read, list, update and delete', async () => {
    const { org, api } = await writer();
    const created = await api.post('/automations', {
      ...manual('Nightly'),
      trigger: { type: 'schedule', cron: '0 9 * * *', timezone: 'Europe/Berlin' },
      onFailure: 'continue',
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      orgId: org.id,
      name: 'Nightly',
      enabled: true,
      trigger: { type: 'schedule', cron: '0 9 * * *', timezone: 'Europe/Berlin' },
      target: { type: 'organization' },
      steps: [{ type: 'command', commandType: 'refresh_inventory' }],
      onFailure: 'continue',
      webhookUrl: null,
    });
    // 09:00 in Berlin is 08:00 UTC in winter, 07:00 in summer.
    expect(['08:00', '07:00']).toContain(created.body.nextRunAt.slice(11, 16));
    const id = created.body.id;

    expect((await api.get(`/automations/${id}`)).body).toEqual(created.body);
    const list = await api.get('/automations');
    expect(list.body.data.map((a: { id: string }) => a.id)).toEqual([id]);

    const disabled = await api.patch(`/automations/${id}`, { enabled: false });
    expect([disabled.status, disabled.body.enabled, disabled.body.nextRunAt]).toEqual([200, false, null]);

    expect((await api.delete(`/automations/${id}`)).status).toBe(204);
    expect((await api.get(`/automations/${id}`)).status).toBe(404);
  });

  test.each([
    ['a bad cron', { type: 'schedule', cron: '61 * * * *', timezone: 'UTC' }, 'trigger.cron'],
    ['a cron with seconds', { type: 'schedule', cron: '0 0 9 * * *', timezone: 'UTC' }, 'trigger.cron'],
    ['a bad time zone', { type: 'schedule', cron: '0 9 * * *', timezone: 'Mars/Olympus' }, 'trigger.timezone'],
    ['an event trigger without its type', { type: 'event' }, 'trigger.eventType'],
    ['a field of another trigger type', { type: 'manual', cron: '* * * * *' }, 'trigger.cron'],
    ['an operator as a filter key', { type: 'event', eventType: 'device.offline', filter: { $where: 'x' } }, 'trigger.filter'],
    ['an object as a filter value', { type: 'event', eventType: 'device.offline', filter: { hostname: { $ne: 'x' } } }, 'trigger.filter'],
  ])('%s is a 400', async (_what, trigger, path) => {
    const { api } = await writer();
    const res = await api.post('/automations', { ...manual(), trigger });
    expect([res.status, res.body.code]).toEqual([400, 'VALIDATION_ERROR']);
    expect(res.body.details.some((d: { path: string }) => d.path.startsWith(path))).toBe(true);
  });

  test('steps and targets are validated', async () => {
    const { api } = await writer();
    for (const steps of [[], [{ type: 'wait' }], [{ type: 'wait', seconds: 0 }], [{ type: 'notify', channelId: 'not-a-uuid' }], [{ type: 'run_script' }], [{ type: 'command', commandType: 'Bad Type' }], [{ type: 'command', commandType: 'run_script' }], [{ type: 'command', commandType: 'set_auto_update', payload: {} }]]) {
      expect((await api.post('/automations', { ...manual(), steps })).status).toBe(400);
    }
    expect((await api.post('/automations', { ...manual(), target: { type: 'site' } })).status).toBe(400);
    expect((await api.post('/automations', { ...manual(), target: { type: 'organization', deviceIds: [crypto.randomUUID()] } })).status).toBe(400);
    expect((await api.post('/automations', { ...manual(), onFailure: 'retry' })).status).toBe(400);
  });

  test('target ids must belong to the automation’s organization', async () => {
    const { org, api } = await writer();
    const own = await buildSite(app, org.id);
    const other = await buildOrg(app);
    const foreign = await buildSite(app, other.id);
    expect((await api.post('/automations', { ...manual(), target: { type: 'site', siteIds: [own.id] } })).status).toBe(201);
    const res = await api.post('/automations', { ...manual(), target: { type: 'site', siteIds: [foreign.id] } });
    expect([res.status, res.body.message]).toEqual([404, 'Site not found']);
    const device = await api.post('/automations', { ...manual(), target: { type: 'devices', deviceIds: [crypto.randomUUID()] } });
    expect([device.status, device.body.message]).toEqual([404, 'Device not found']);
  });

  test('a partner caller may not aim one organization’s automation at another’s sites', async () => {
    const partnerOrg = await buildOrg(app);
    const sibling = await buildOrg(app, { partnerId: partnerOrg.partnerId });
    const site = await buildSite(app, sibling.id);
    const admin = await buildUser(app, { partnerId: partnerOrg.partnerId, can: ['automations:write'] });
    const res = await rest(app, admin.as).post('/automations', { ...manual(), orgId: partnerOrg.id, target: { type: 'site', siteIds: [site.id] } });
    // Not the automation's organization's site: not found, as in every domain that targets devices.
    expect([res.status, res.body.message]).toEqual([404, 'Site not found']);
  });

  test('run_script steps name a script of the automation’s organization', async () => {
    const { api } = await writer();
    const res = await api.post('/automations', { ...manual(), steps: [{ type: 'run_script', scriptId: crypto.randomUUID() }] });
    expect([res.status, res.body.message]).toEqual([404, 'Script not found']);
  });

  test('run_script steps carry no value for a secret parameter: it would be shown to every reader', async () => {
    const { org, api } = await writer();
    const author = await buildUser(app, { orgId: org.id, can: ['scripts:read', 'scripts:write'] });
    const script = await rest(app, author.as).post('/scripts', { name: `script-${unique()}`, language: 'bash', content: 'deploy', parameters: [{ name: 'apiKey', type: 'string', secret: true }, { name: 'target', type: 'string' }] });
    expect(script.status).toBe(201);
    const refused = await api.post('/automations', { ...manual(), steps: [{ type: 'run_script', scriptId: script.body.id, parameters: { target: 'web', apiKey: 'hunter2-plain' } }] });
    expect([refused.status, refused.body.message]).toEqual([400, 'Parameter apiKey is secret: give it a default on the script instead of a value in the automation']);
    const [stored] = await sql(app, `select count(*)::int as n from automation where steps::text like '%hunter2-plain%'`);
    expect(stored.n).toBe(0);
    const plain = await api.post('/automations', { ...manual(), steps: [{ type: 'run_script', scriptId: script.body.id, parameters: { target: 'web' } }] });
    expect(plain.status).toBe(201);
  });

  test('notify steps name a channel of the automation’s organization', async () => {
    const { api } = await writer();
    const res = await api.post('/automations', { ...manual(), steps: [{ type: 'notify', channelId: crypto.randomUUID() }] });
    expect([res.status, res.body.message]).toEqual([404, 'Alert channel not found']);
  });

  test('a user limited to some sites aims automations only within them', async () => {
    const { org, api } = await writer();
    const [siteA, siteB] = [await buildSite(app, org.id), await buildSite(app, org.id)];
    const limited = await buildUser(app, { orgId: org.id, role: 'Organization Technician' });
    await sql(app, `update membership set site_ids = ?::jsonb where id = ?`, [JSON.stringify([siteA.id]), limited.membership.id]);
    const mine = rest(app, limited.as);
    expect((await mine.post('/automations', manual())).status).toBe(403);
    const other = await mine.post('/automations', { ...manual(), target: { type: 'site', siteIds: [siteB.id] } });
    expect([other.status, other.body.message]).toEqual([404, 'Site not found']);
    const own = await mine.post('/automations', { ...manual(), target: { type: 'site', siteIds: [siteA.id] } });
    expect(own.status).toBe(201);
    expect((await mine.post(`/automations/${own.body.id}/run`)).status).toBe(202);

    // An organization-wide automation: readable, but not theirs to change, run or delete.
    const wide = (await api.post('/automations', manual())).body.id;
    expect((await mine.get(`/automations/${wide}`)).status).toBe(200);
    for (const res of [await mine.patch(`/automations/${wide}`, { name: 'mine now' }), await mine.post(`/automations/${wide}/run`), await mine.delete(`/automations/${wide}`)]) {
      expect([res.status, res.body.code]).toEqual([403, 'FORBIDDEN']);
    }
  });

  test('names are unique per organization', async () => {
    const { api } = await writer();
    expect((await api.post('/automations', manual('Same'))).status).toBe(201);
    expect((await api.post('/automations', manual('Same'))).status).toBe(409);
  });

  test('the least-privileged roles: read cannot write or run, write cannot run', async () => {
    const { org, api } = await writer();
    const id = (await api.post('/automations', manual())).body.id;
    const reader = rest(app, (await buildUser(app, { orgId: org.id, can: ['automations:read'] })).as);
    expect((await reader.get(`/automations/${id}`)).status).toBe(200);
    expect((await reader.patch(`/automations/${id}`, { name: 'x' })).status).toBe(403);
    expect((await reader.post(`/automations/${id}/run`)).status).toBe(403);
    expect((await api.post(`/automations/${id}/run`)).status).toBe(403);
    const runner = rest(app, (await buildUser(app, { orgId: org.id, can: ['automations:run'] })).as);
    expect((await runner.post(`/automations/${id}/run`)).status).toBe(202);
    expect((await runner.get(`/automations/${id}`)).status).toBe(403);
  });

  test('another organization’s automations and runs are 404 on every route, REST and GraphQL', async () => {
    const { api } = await writer();
    const id = (await api.post('/automations', manual())).body.id;
    const runId = (await rest(app, (await buildUser(app, { orgId: (await api.get(`/automations/${id}`)).body.orgId, can: ['automations:run'] })).as).post(`/automations/${id}/run`)).body.id;
    const stranger = await buildUser(app, { orgId: (await buildOrg(app)).id, role: 'Organization Admin' });
    const other = rest(app, stranger.as);
    for (const res of [
      await other.get(`/automations/${id}`),
      await other.patch(`/automations/${id}`, { name: 'x' }),
      await other.delete(`/automations/${id}`),
      await other.post(`/automations/${id}/trigger`),
      await other.post(`/automations/${id}/run`),
      await other.get(`/automations/${id}/runs`),
    ]) {
      expect([res.status, res.body.message]).toEqual([404, 'Automation not found']);
    }
    const run = await other.get(`/automations/runs/${runId}`);
    expect([run.status, run.body.message]).toEqual([404, 'Automation run not found']);
    expect((await other.get('/automations')).body.data).toEqual([]);

    for (const [query, variables] of [
      ['query($id: ID!) { automation(id: $id) { id } }', { id }],
      ['query($id: ID!) { automationRun(runId: $id) { id } }', { id: runId }],
      ['query($id: ID!) { automationRuns(automationId: $id) { totalCount } }', { id }],
      ['mutation($id: ID!) { updateAutomation(id: $id, input: { name: "x" }) { id } }', { id }],
      ['mutation($id: ID!) { triggerAutomation(id: $id) { id } }', { id }],
      ['mutation($id: ID!) { deleteAutomation(id: $id) }', { id }],
    ] as const) {
      const res = await gql(app, stranger.as, query, variables);
      expect(res.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    }
  });

  test('GraphQL: create, list, trigger and read runs', async () => {
    const { org } = await writer();
    const user = await buildUser(app, { orgId: org.id, can: ['automations:read', 'automations:write', 'automations:run'] });
    const created = await gql(app, user.as, 'mutation($input: CreateAutomationInput!) { createAutomation(input: $input) { id trigger { type } target { type } steps { type seconds } onFailure } }', {
      input: { name: 'Wait', trigger: { type: 'manual' }, target: { type: 'organization' }, steps: [{ type: 'wait', seconds: 1 }], onFailure: 'continue' },
    });
    expect(created.body.errors).toBeUndefined();
    const id = created.body.data.createAutomation.id;
    expect(created.body.data.createAutomation).toMatchObject({ trigger: { type: 'manual' }, steps: [{ type: 'wait', seconds: 1 }], onFailure: 'continue' });
    const run = await gql(app, user.as, 'mutation($id: ID!) { triggerAutomation(id: $id) { id status source } }', { id });
    expect(run.body.data.triggerAutomation).toMatchObject({ status: 'running', source: 'manual' });
    const runs = await gql(app, user.as, 'query($id: ID!) { automationRuns(automationId: $id, first: 5) { totalCount edges { node { id } } } automations { data { id } } }', { id });
    expect(runs.body.data.automationRuns).toEqual({ totalCount: 1, edges: [{ node: { id: run.body.data.triggerAutomation.id } }] });
    expect(runs.body.data.automations.data).toEqual([{ id }]);
  });
});

describe('webhook triggers', () => {
  test('the right token starts one run without credentials; a wrong or missing one is 401 and starts nothing', async () => {
    const { api } = await writer();
    const created = await api.post('/automations', { ...manual(), trigger: { type: 'webhook' } });
    const url = new URL(created.body.webhookUrl);
    expect(url.pathname).toBe(`/api/v1/automations/${created.body.id}/trigger`);
    const token = url.searchParams.get('token')!;
    expect(token.length).toBeGreaterThan(30);
    expect(JSON.stringify(await api.get(`/automations/${created.body.id}`))).toContain(token);

    const anonymous = rest(app);
    const path = `/automations/${created.body.id}/trigger`;
    for (const res of [await anonymous.post(path), await anonymous.post(`${path}?token=${token}x`), await anonymous.post(`${path}?token=`)]) {
      expect(res.status).toBe(401);
    }
    expect((await api.get(`/automations/${created.body.id}/runs`)).body.pagination.total).toBe(0);

    const fired = await anonymous.post(`${path}?token=${encodeURIComponent(token)}`);
    expect([fired.status, fired.body.source, fired.body.automationId]).toEqual([202, 'webhook', created.body.id]);
    expect((await api.get(`/automations/${created.body.id}/runs`)).body.pagination.total).toBe(1);

    // Disabled: the token starts nothing.
    await api.patch(`/automations/${created.body.id}`, { enabled: false });
    expect((await anonymous.post(`${path}?token=${encodeURIComponent(token)}`)).status).toBe(409);
    expect((await api.get(`/automations/${created.body.id}/runs`)).body.pagination.total).toBe(1);
  });

  test('the URL is shown to callers who may run or change the automation, not to readers', async () => {
    const { org, api } = await writer();
    const id = (await api.post('/automations', { ...manual(), trigger: { type: 'webhook' } })).body.id;
    const reader = rest(app, (await buildUser(app, { orgId: org.id, role: 'Organization Viewer' })).as);
    expect((await reader.get(`/automations/${id}`)).body.webhookUrl).toBeNull();
    expect((await reader.get('/automations')).body.data[0].webhookUrl).toBeNull();
    const runner = await buildUser(app, { orgId: org.id, can: ['automations:read', 'automations:run'] });
    expect((await rest(app, runner.as).get(`/automations/${id}`)).body.webhookUrl).toMatch(/\?token=/);
  });

  test('a user limited to some sites sees the URL of automations aimed within their sites only, over REST and GraphQL: an organization-wide one’s would run it everywhere', async () => {
    const { org, api } = await writer();
    const [siteA1, siteA2] = [await buildSite(app, org.id), await buildSite(app, org.id)];
    const webhook = (target: Record<string, unknown>) => api.post('/automations', { ...manual(), trigger: { type: 'webhook' }, target });
    const wide = (await webhook({ type: 'organization' })).body;
    const other = (await webhook({ type: 'site', siteIds: [siteA2.id] })).body;
    const own = (await webhook({ type: 'site', siteIds: [siteA1.id] })).body;
    const limited = await buildUser(app, { orgId: org.id, role: 'Organization Technician' });
    await sql(app, `update membership set site_ids = ?::jsonb where id = ?`, [JSON.stringify([siteA1.id]), limited.membership.id]);
    const mine = rest(app, limited.as);
    expect((await mine.post(`/automations/${wide.id}/run`)).status).toBe(403);
    for (const id of [wide.id, other.id]) expect((await mine.get(`/automations/${id}`)).body.webhookUrl).toBeNull();
    expect((await mine.get(`/automations/${own.id}`)).body.webhookUrl).toBe(own.webhookUrl);
    const listed = new Map((await mine.get('/automations')).body.data.map((a: { id: string; webhookUrl: string | null }) => [a.id, a.webhookUrl]));
    expect([listed.get(wide.id), listed.get(other.id), listed.get(own.id)]).toEqual([null, null, own.webhookUrl]);
    const graph = await gql(app, limited.as, '{ automations { data { id webhookUrl } } }');
    const shown = new Map(graph.body.data.automations.data.map((a: { id: string; webhookUrl: string | null }) => [a.id, a.webhookUrl]));
    expect([shown.get(wide.id), shown.get(other.id), shown.get(own.id)]).toEqual([null, null, own.webhookUrl]);
    // Nor can they have its token rotated to learn the new one.
    const rotated = await mine.patch(`/automations/${wide.id}`, { trigger: { type: 'webhook' } });
    expect([rotated.status, rotated.body.webhookUrl]).toEqual([403, undefined]);
    expect((await api.get(`/automations/${wide.id}`)).body.webhookUrl).toBe(wide.webhookUrl);
  });

  test('a token never opens another automation', async () => {
    const { api } = await writer();
    const a = await api.post('/automations', { ...manual(), trigger: { type: 'webhook' } });
    const b = await api.post('/automations', { ...manual(), trigger: { type: 'webhook' } });
    const token = new URL(a.body.webhookUrl).searchParams.get('token')!;
    expect((await rest(app).post(`/automations/${b.body.id}/trigger?token=${encodeURIComponent(token)}`)).status).toBe(401);
  });
});

describe('enrolled fleets', () => {
  test('an organization target resolves its devices at the start', async () => {
    const f = await fleet(app);
    const a = await enroll(app, f.key);
    const b = await enroll(app, f.key);
    const api = rest(app, (await buildUser(app, { orgId: f.org.id, can: ['automations:write', 'automations:run'] })).as);
    const id = (await api.post('/automations', { ...manual(), steps: [{ type: 'wait', seconds: 3600 }] })).body.id;
    const run = await api.post(`/automations/${id}/run`);
    expect([...run.body.deviceIds].sort()).toEqual([a.deviceId, b.deviceId].sort());
  });
});
