import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { DOMAIN_EVENT_TOPIC } from '../src/events/dispatcher.js';
import { startSimulation, type Simulation } from '../src/scripts/simulator.js';
import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest, type As } from './support/clients.js';
import { auditOf, sql } from './support/db.js';
import { agentCall, enroll, fleet } from './support/devices.js';
import { eventually } from './support/eventually.js';
import { buildOrg, buildSite, buildUser, type BuiltUser } from './support/factories.js';

let app: TestApp;
let peer: TestApp;
const clients: Client[] = [];
const simulations: Simulation[] = [];

beforeAll(async () => {
  app = await createTestApp();
  peer = await createTestApp({ databaseUrl: app.databaseUrl });
});
afterAll(async () => {
  await Promise.all(clients.splice(0).map((client) => client.dispose()));
  await Promise.all(simulations.map((s) => s.stop()));
  await peer.server.stop();
  await app.stop();
});

/** An organization with an author (scripts:read/write), a reader (scripts:read) and an operator (scripts:read/execute). */
async function scriptOrg() {
  const org = await buildOrg(app);
  const author = await buildUser(app, { orgId: org.id, can: ['scripts:read', 'scripts:write'] });
  const reader = await buildUser(app, { orgId: org.id, role: 'Organization Viewer' });
  const operator = await buildUser(app, { orgId: org.id, can: ['scripts:read', 'scripts:execute'] });
  return { org, author, reader, operator };
}

const BODY = { name: 'Restart nginx', language: 'bash', content: 'systemctl restart nginx' };

async function created(as: As, body: Record<string, unknown> = {}) {
  const res = await rest(app, as).post('/scripts', { ...BODY, name: `script-${Math.random().toString(36).slice(2)}`, ...body });
  expect([res.status, res.body.message]).toEqual([201, undefined]);
  return res.body;
}

describe('scripts', () => {
  test('create with defaults, read, replace (changed content is a new version), delete; each audited', async () => {
    const { org, author, reader } = await scriptOrg();
    const res = await rest(app, author.as).post('/scripts', { ...BODY, category: 'Services', tags: ['web', 'web'] });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: expect.any(String),
      orgId: org.id,
      name: 'Restart nginx',
      description: null,
      language: 'bash',
      content: 'systemctl restart nginx',
      parameters: [],
      runAs: 'system',
      timeoutSeconds: 300,
      osTypes: ['linux', 'macos'],
      category: 'Services',
      tags: ['web'],
      version: 1,
      importedFrom: null,
      createdBy: author.user.id,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    const id = res.body.id;
    expect((await rest(app, reader.as).get(`/scripts/${id}`)).body).toEqual(res.body);
    const listed = await rest(app, reader.as).get('/scripts?search=nginx');
    expect(listed.body.data.map((s: { id: string }) => s.id)).toEqual([id]);

    const put = await rest(app, author.as).put(`/scripts/${id}`, {
      name: 'Restart a service',
      language: 'bash',
      content: 'systemctl restart "$service"',
      parameters: [{ name: 'service', type: 'string', required: true }],
      osTypes: ['linux'],
      runAs: 'elevated',
      timeoutSeconds: 60,
      category: null,
      note: 'any service',
    });
    expect([put.status, put.body.message]).toEqual([200, undefined]);
    expect(put.body).toMatchObject({
      name: 'Restart a service',
      version: 2,
      osTypes: ['linux'],
      runAs: 'elevated',
      timeoutSeconds: 60,
      category: null,
      tags: ['web'],
      parameters: [{ name: 'service', type: 'string', required: true, secret: false }],
    });
    // The same content again: no new version; fields left out stay.
    const same = await rest(app, author.as).put(`/scripts/${id}`, { content: 'systemctl restart "$service"', timeoutSeconds: 90, category: 'Services' });
    expect(same.body).toMatchObject({ name: 'Restart a service', version: 2, timeoutSeconds: 90, category: 'Services', runAs: 'elevated', parameters: [{ name: 'service' }] });

    expect((await rest(app, author.as).delete(`/scripts/${id}`)).status).toBe(204);
    expect((await rest(app, reader.as).get(`/scripts/${id}`)).status).toBe(404);
    expect((await auditOf(app, id, ['action'], { successOnly: true })).map((r) => r.action)).toEqual(['script.create', 'script.update', 'script.update', 'script.delete']);
  });

  test('invalid scripts are 400 naming the field; a second script of the same name is 409', async () => {
    const { author } = await scriptOrg();
    const api = rest(app, author.as);
    const cases: [Record<string, unknown>, string][] = [
      [{ language: 'ruby' }, 'language'],
      [{ content: '' }, 'content'],
      [{ timeoutSeconds: 4 }, 'timeoutSeconds'],
      [{ timeoutSeconds: 86_401 }, 'timeoutSeconds'],
      [{ runAs: 'root' }, 'runAs'],
      [{ osTypes: ['beos'] }, 'osTypes'],
      [{ parameters: [{ name: 'mode', type: 'select' }] }, 'parameters'],
      [{ parameters: [{ name: 'n', type: 'number', default: 'ten' }] }, 'parameters'],
      [{ parameters: [{ name: 'x', type: 'string' }, { name: 'x', type: 'number' }] }, 'parameters'],
      [{ parameters: [{ name: 'bad name', type: 'string' }] }, 'parameters'],
      [{ parameters: [{ name: 'x', type: 'date' }] }, 'parameters'],
      [{ surprise: true }, 'surprise'],
    ];
    for (const [patch, field] of cases) {
      const res = await api.post('/scripts', { ...BODY, ...patch });
      expect([res.status, res.body.code]).toEqual([400, 'VALIDATION_ERROR']);
      expect(res.body.message).toContain(field);
    }
    await created(author.as, { name: 'Once' });
    const twice = await api.post('/scripts', { ...BODY, name: 'Once' });
    expect([twice.status, twice.body.code]).toEqual([409, 'CONFLICT']);
    expect((await api.put('/scripts/not-a-uuid', BODY)).status).toBe(404);
  });

  test('reading scripts needs scripts:read and writing them scripts:write', async () => {
    const { org, reader } = await scriptOrg();
    const bystander = await buildUser(app, { orgId: org.id, can: ['devices:read'] });
    expect((await rest(app, reader.as).post('/scripts', BODY)).status).toBe(403);
    expect((await rest(app, bystander.as).get('/scripts')).status).toBe(403);
    expect((await rest(app, bystander.as).get('/scripts/system-library')).status).toBe(403);
  });

  test("another organization's scripts are not found on every route, over REST and GraphQL", async () => {
    const mine = await scriptOrg();
    const theirs = await scriptOrg();
    const admin = await buildUser(app, { orgId: theirs.org.id, role: 'Organization Admin' });
    const script = await created(mine.author.as);
    const api = rest(app, admin.as);
    for (const res of [
      await api.get(`/scripts/${script.id}`),
      await api.put(`/scripts/${script.id}`, BODY),
      await api.delete(`/scripts/${script.id}`),
      await api.post(`/scripts/${script.id}/execute`, { deviceIds: [script.id] }),
      await api.get(`/scripts/${script.id}/executions`),
    ]) {
      expect([res.status, res.body?.code]).toEqual([404, 'NOT_FOUND']);
    }
    expect((await api.get('/scripts')).body.data).toEqual([]);
    expect((await api.get(`/scripts?orgId=${mine.org.id}`)).body.data).toEqual([]);
    expect((await api.post('/scripts', { ...BODY, orgId: mine.org.id })).status).toBe(404);
    for (const [query, variables] of [
      ['query ($id: ID!) { script(id: $id) { id } }', { id: script.id }],
      ['mutation ($id: ID!) { deleteScript(id: $id) }', { id: script.id }],
      ['mutation ($id: ID!) { updateScript(id: $id, input: { name: "x", language: bash, content: "x" }) { id } }', { id: script.id }],
      ['mutation ($id: ID!) { executeScript(id: $id, input: { deviceIds: [$id] }) { executions { id } } }', { id: script.id }],
      ['query ($id: ID!) { scriptExecutions(scriptId: $id) { totalCount } }', { id: script.id }],
    ] as const) {
      const res = await gql(app, admin.as, query, variables);
      expect(res.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    }
    expect((await rest(app, mine.reader.as).get(`/scripts/${script.id}`)).status).toBe(200);
  });

  test('GraphQL: create, read with enums, replace and list', async () => {
    const { author } = await scriptOrg();
    const create = await gql(
      app,
      author.as,
      `mutation { createScript(input: { name: "Disk report", language: powershell, content: "Get-PSDrive", runAs: elevated, timeoutSeconds: 60, parameters: [{ name: "Drive", type: select, options: ["C", "D"], default: "C" }] }) { id language runAs osTypes version parameters { name type options default required secret } } }`,
    );
    expect(create.body.errors).toBeUndefined();
    const script = create.body.data!.createScript;
    expect(script).toMatchObject({ language: 'powershell', runAs: 'elevated', osTypes: ['windows'], version: 1, parameters: [{ name: 'Drive', type: 'select', options: ['C', 'D'], default: 'C', required: false, secret: false }] });
    const update = await gql(app, author.as, `mutation ($id: ID!) { updateScript(id: $id, input: { name: "Disk report", language: powershell, content: "Get-PSDrive C" }) { version content } }`, { id: script.id });
    expect(update.body.data).toEqual({ updateScript: { version: 2, content: 'Get-PSDrive C' } });
    const list = await gql(app, author.as, `{ scripts(language: powershell) { data { id } pagination { total } } }`);
    expect(list.body.data).toEqual({ scripts: { data: [{ id: script.id }], pagination: { total: 1 } } });
  });
});

describe('the system library', () => {
  test('lists the built-in scripts; importing copies one into the organization', async () => {
    const { org, author, reader } = await scriptOrg();
    const library = await rest(app, reader.as).get('/scripts/system-library');
    expect(library.status).toBe(200);
    expect(library.body.data.length).toBeGreaterThanOrEqual(12);
    const ids = library.body.data.map((s: { id: string }) => s.id);
    expect(ids).toEqual(expect.arrayContaining(['disk-cleanup-windows', 'restart-service-linux', 'collect-event-logs', 'install-windows-updates']));
    const source = library.body.data.find((s: { id: string }) => s.id === 'restart-service-windows');
    expect(source).toMatchObject({ language: 'powershell', osTypes: ['windows'], parameters: [{ name: 'ServiceName', type: 'string', required: true }], content: expect.stringContaining('Restart-Service') });

    const imported = await rest(app, author.as).post('/scripts/import/restart-service-windows');
    expect([imported.status, imported.body.message]).toEqual([201, undefined]);
    expect(imported.body).toMatchObject({ orgId: org.id, name: source.name, content: source.content, language: 'powershell', version: 1, importedFrom: 'restart-service-windows', category: source.category });
    const again = await rest(app, author.as).post('/scripts/import/restart-service-windows', { name: 'Restart a service (copy)' });
    expect([again.status, again.body.name]).toEqual([201, 'Restart a service (copy)']);

    expect((await rest(app, author.as).post('/scripts/import/no-such-script')).status).toBe(404);
    expect((await rest(app, reader.as).post('/scripts/import/flush-dns')).status).toBe(403);
  });

  test('partner callers name the organization to import into', async () => {
    const org = await buildOrg(app);
    const partnerTech = await buildUser(app, { partnerId: org.partnerId, role: 'Partner Technician' });
    const other = await buildOrg(app);
    const api = rest(app, partnerTech.as);
    const missing = await api.post('/scripts/import/system-info');
    expect([missing.status, missing.body.message]).toEqual([400, 'Organization context required']);
    expect((await api.post('/scripts/import/system-info', { orgId: other.id })).status).toBe(404);
    const ok = await api.post('/scripts/import/system-info', { orgId: org.id });
    expect([ok.status, ok.body.orgId]).toEqual([201, org.id]);
  });
});

describe('live updates', () => {
  async function subscribe(on: TestApp, user: BuiltUser, executionId: string) {
    const client = createClient({ url: `${on.url.replace('http', 'ws')}/graphql`, webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${user.token}` }, retryAttempts: 0 });
    clients.push(client);
    const live = { items: [] as any[], errors: [] as any[] };
    const before = on.subscriptions(DOMAIN_EVENT_TOPIC);
    client.subscribe(
      { query: 'subscription ($id: ID!) { scriptExecutionUpdated(executionId: $id) { id status exitCode stdout parameters } }', variables: { id: executionId } },
      {
        next: (msg) => (msg.errors ? live.errors.push(...msg.errors) : live.items.push((msg.data as any).scriptExecutionUpdated)),
        error: (error) => void live.errors.push({ message: String(error) }),
        complete: () => {},
      },
    );
    await eventually(() => on.subscriptions(DOMAIN_EVENT_TOPIC) > before || live.errors.length > 0, 10_000, 'the subscription to be live or refused');
    return live;
  }

  test('scriptExecutionUpdated streams the status changes to readers on another instance; other organizations are refused', async () => {
    const { org, key } = await fleet(app);
    const author = await buildUser(app, { orgId: org.id, can: ['scripts:read', 'scripts:write', 'scripts:execute'] });
    const reader = await buildUser(app, { orgId: org.id, can: ['scripts:read'] });
    const outsider = await buildUser(app, { orgId: (await buildOrg(app)).id, role: 'Organization Admin' });
    const agent = await enroll(app, key);
    const script = await created(author.as, { parameters: [{ name: 'password', type: 'string', secret: true }] });
    const executed = await rest(app, author.as).post(`/scripts/${script.id}/execute`, { deviceIds: [agent.deviceId], parameters: { password: 'p4ss' } });
    const executionId = executed.body.executions[0].id;

    const live = await subscribe(peer, reader, executionId);
    const refused = await subscribe(peer, outsider, executionId);
    expect(live.errors).toEqual([]);
    expect(refused.errors[0]?.extensions?.code).toBe('NOT_FOUND');

    const [command] = (await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0' })).body.commands;
    await agentCall(app, agent, `/commands/${command.id}/result`, { status: 'running' });
    await agentCall(app, agent, `/commands/${command.id}/result`, { status: 'completed', exitCode: 0, stdout: 'ok' });
    await eventually(() => live.items.length >= 3, 10_000, 'three updates');
    expect(live.items.map((i) => i.status)).toEqual(['queued', 'running', 'completed']);
    expect(live.items[2]).toEqual({ id: executionId, status: 'completed', exitCode: 0, stdout: 'ok', parameters: { password: '********' } });
  });

  test('scriptExecutionUpdated is silent for a site-limited reader while the device is outside their sites', async () => {
    const { org, api } = await fleet(app);
    const [siteA, siteB] = [await buildSite(app, org.id), await buildSite(app, org.id)];
    const author = await buildUser(app, { orgId: org.id, can: ['scripts:read', 'scripts:write', 'scripts:execute'] });
    const limited = await buildUser(app, { orgId: org.id, can: ['scripts:read'] });
    await sql(app, `update membership set site_ids = ?::jsonb where id = ?`, [JSON.stringify([siteA.id]), limited.membership.id]);
    const agent = await enroll(app, (await api.post('/enrollment-keys', { name: 'A', siteId: siteA.id })).body.key);
    const script = await created(author.as, {});
    const executionId = (await rest(app, author.as).post(`/scripts/${script.id}/execute`, { deviceIds: [agent.deviceId] })).body.executions[0].id;
    const live = await subscribe(peer, limited, executionId);
    const everywhere = await subscribe(peer, author, executionId);
    expect([...live.errors, ...everywhere.errors]).toEqual([]);
    const reached = (items: { status: string }[], status: string) => eventually(() => items.some((i) => i.status === status), 10_000, `the ${status} update`);

    const [command] = (await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0' })).body.commands;
    await reached(live.items, 'queued');
    await sql(app, `update device set site_id = ? where id = ?`, [siteB.id, agent.deviceId]);
    await agentCall(app, agent, `/commands/${command.id}/result`, { status: 'running' });
    // Both subscriptions decide each update as it arrives: once the unlimited one has `running`, the limited one has decided it too.
    await reached(everywhere.items, 'running');
    await sql(app, `update device set site_id = ? where id = ?`, [siteA.id, agent.deviceId]);
    await agentCall(app, agent, `/commands/${command.id}/result`, { status: 'completed', exitCode: 0, stdout: 'ok' });
    // Updates are decided one at a time, in order: once `completed` is in, `running` was decided before it.
    await reached(live.items, 'completed');
    expect(live.items.map((i) => i.status)).toEqual(['queued', 'completed']);
  });
});

describe('the simulator', () => {
  test('a simulated fleet runs an imported script; executions complete with deterministic output', async () => {
    const { org, key } = await fleet(app, { keyName: 'Simulator' });
    const author = await buildUser(app, { orgId: org.id, can: ['scripts:read', 'scripts:write', 'scripts:execute'] });
    const simulation = await startSimulation({ url: app.url, enrollmentKey: key, devices: 3, prefix: `scripts-${Date.now()}`, intervalSeconds: 0.2, jitterSeconds: 0.1, rebootSeconds: 0.5, updateSeconds: 0.2 });
    simulations.push(simulation);
    await eventually(() => simulation.agents.every((a) => a.deviceId && a.heartbeats >= 1), 10_000, 'the agents to enroll');
    const script = (await rest(app, author.as).post('/scripts/import/system-info')).body;
    const deviceIds = simulation.agents.map((a) => a.deviceId!);
    const executed = await rest(app, author.as).post(`/scripts/${script.id}/execute`, { deviceIds });
    expect(executed.status).toBe(202);
    expect(executed.body.executions.length + executed.body.skipped.length).toBe(3);
    const views = await eventually(
      async () => {
        const all = await Promise.all(executed.body.executions.map(async (e: { id: string }) => (await rest(app, author.as).get(`/scripts/executions/${e.id}`)).body));
        return all.every((v) => v.status === 'completed') ? all : undefined;
      },
      15_000,
      'the executions to complete',
    );
    for (const view of views) expect(view).toMatchObject({ exitCode: 0, startedAt: expect.any(String), stdout: expect.stringMatching(/\[simulated on .*sha256 [0-9a-f]{12}\]\n$/) });
  });
});
