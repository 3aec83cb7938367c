import { createTestApp, type TestApp } from './support/app.js';
import { rest } from './support/clients.js';
import { TestClock } from './support/clock.js';
import { sql } from './support/db.js';
import { agentCall, enroll, fleet, type EnrolledAgent } from './support/devices.js';
import { buildUser, unique } from './support/factories.js';

const clock = new TestClock();
let app: TestApp;

beforeAll(async () => {
  app = await createTestApp({ start: { clock } });
});
afterAll(async () => {
  await app.stop();
});

type Api = ReturnType<typeof rest>;
type Command = { id: string; type: string; payload: Record<string, any> };

/** An organization with a technician (policies:*), a viewer and two enrolled linux devices. */
async function policyFleet() {
  const f = await fleet(app);
  const viewer = await buildUser(app, { orgId: f.org.id, role: 'Organization Viewer' });
  const a = await enroll(app, f.key, `a-${unique()}`, { osVersion: '12.4' });
  const b = await enroll(app, f.key, `b-${unique()}`, { osVersion: '11.2' });
  return { ...f, viewer, reader: rest(app, viewer.as), a, b };
}

async function report(agent: EnrolledAgent, inventory: Record<string, unknown>): Promise<void> {
  const res = await agentCall(app, agent, '/inventory', inventory);
  expect([res.status, res.body?.details]).toEqual([200, undefined]);
}

async function heartbeat(agent: EnrolledAgent): Promise<Command[]> {
  const res = await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0' });
  expect(res.status).toBe(200);
  return res.body.commands;
}

async function answer(agent: EnrolledAgent, commandId: string, body: Record<string, unknown>): Promise<void> {
  const res = await agentCall(app, agent, `/commands/${commandId}/result`, body);
  expect([res.status, res.body.message]).toEqual([200, undefined]);
}

async function createPolicy(api: Api, fields: Record<string, unknown>): Promise<any> {
  const res = await api.post('/policies', { name: `Policy ${unique()}`, targets: {}, ...fields });
  expect([res.status, res.body.message, res.body.details]).toEqual([201, undefined, undefined]);
  return res.body;
}

async function activate(api: Api, id: string): Promise<void> {
  const res = await api.post(`/policies/${id}/activate`);
  expect([res.status, res.body.status]).toEqual([200, 'active']);
}

/** The policy's compliance, by device id. */
async function complianceOf(api: Api, policyId: string): Promise<Record<string, { status: string; violations: { ruleIndex: number; type: string; message: string }[] }>> {
  const res = await api.get(`/policies/${policyId}/compliance`);
  expect(res.status).toBe(200);
  return Object.fromEntries(res.body.devices.map((d: any) => [d.deviceId, d]));
}

const statuses = async (api: Api, policyId: string) => Object.fromEntries(Object.entries(await complianceOf(api, policyId)).map(([id, d]) => [id, d.status]));
const eventsOf = (type: string, orgId: string) => sql(app, `select data from outbox_event where type = ? and org_id = ? order by created_at, id`, [type, orgId]);
const expectError = (res: { status: number; body: any }, status: number, code: string) => expect([res.status, res.body.code]).toEqual([status, code]);

describe('configuration policies', () => {
  test('technicians create, read, list, replace, change and delete policies; viewers read and get 403 on writes; audited', async () => {
    const { org, api, reader } = await policyFleet();
    const created = await api.post('/policies', {
      name: 'Baseline',
      description: 'What every device needs',
      targets: {},
      rules: [{ type: 'software_required', name: 'Firefox', minVersion: '120', remediation: { type: 'script', scriptId: undefined } }],
    });
    expectError(created, 400, 'VALIDATION_ERROR');
    const policy = await createPolicy(api, { name: 'Baseline', description: 'What every device needs', rules: [{ type: 'disk_encryption' }, { type: 'software_forbidden', name: 'utorrent*', remediation: { type: 'uninstall' } }] });
    expect(policy).toEqual({
      id: expect.any(String),
      orgId: org.id,
      name: 'Baseline',
      description: 'What every device needs',
      targets: { siteIds: [], groupIds: [], deviceIds: [] },
      rules: [{ type: 'disk_encryption' }, { type: 'software_forbidden', name: 'utorrent*', remediation: { type: 'uninstall' } }],
      status: 'inactive',
      lastEvaluatedAt: null,
      createdAt: expect.any(String),
      updatedAt: expect.any(String),
    });
    expect((await reader.get(`/policies/${policy.id}`)).body).toEqual(policy);
    expectError(await reader.post('/policies', { name: 'X', targets: {}, rules: [{ type: 'disk_encryption' }] }), 403, 'FORBIDDEN');

    const other = await createPolicy(api, { rules: [{ type: 'disk_encryption' }] });
    await activate(api, other.id);
    const list = await reader.get('/policies');
    expect([list.status, list.body.data.map((p: any) => p.id), list.body.nextCursor]).toEqual([200, [other.id, policy.id], null]);
    expect((await reader.get('/policies?status=inactive')).body.data.map((p: any) => p.id)).toEqual([policy.id]);
    expectError(await reader.get('/policies?status=paused'), 400, 'VALIDATION_ERROR');
    const first = await reader.get('/policies?limit=1');
    expect((await reader.get(`/policies?limit=1&cursor=${first.body.nextCursor}`)).body.data.map((p: any) => p.id)).toEqual([policy.id]);

    const replaced = await api.put(`/policies/${policy.id}`, { name: 'Baseline 2', targets: { deviceIds: [] }, rules: [{ type: 'os_version_min', osType: 'linux', version: '12' }] });
    expect([replaced.status, replaced.body.name, replaced.body.description, replaced.body.rules]).toEqual([200, 'Baseline 2', null, [{ type: 'os_version_min', osType: 'linux', version: '12' }]]);
    expectError(await api.put(`/policies/${policy.id}`, { name: 'Baseline 3' }), 400, 'VALIDATION_ERROR');
    const patched = await api.patch(`/policies/${policy.id}`, { description: 'Linux 12 or newer' });
    expect([patched.status, patched.body.name, patched.body.description, patched.body.rules.length]).toEqual([200, 'Baseline 2', 'Linux 12 or newer', 1]);
    expectError(await api.patch(`/policies/${policy.id}`, {}), 400, 'VALIDATION_ERROR');
    expectError(await reader.patch(`/policies/${policy.id}`, { name: 'x' }), 403, 'FORBIDDEN');
    expectError(await reader.delete(`/policies/${policy.id}`), 403, 'FORBIDDEN');
    expect((await api.delete(`/policies/${policy.id}`)).status).toBe(204);
    expectError(await api.get(`/policies/${policy.id}`), 404, 'NOT_FOUND');

    const audit = await sql(app, `select action from audit_log where org_id = ? and action like 'configuration_policy.%' order by seq`, [org.id]);
    expect(audit.map((r) => r.action)).toEqual([
      'configuration_policy.create',
      'configuration_policy.create',
      'configuration_policy.activate',
      'configuration_policy.update',
      'configuration_policy.update',
      'configuration_policy.delete',
    ]);
  });

  test('unknown rule types, missing or foreign fields and unknown enums are 400', async () => {
    const { api } = await policyFleet();
    for (const rules of [
      [{ type: 'firewall' }],
      [{ type: 'software_required' }],
      [{ type: 'software_forbidden', name: 'x', minVersion: '1' }],
      [{ type: 'os_version_min', osType: 'beos', version: '1' }],
      [{ type: 'os_version_min', osType: 'linux' }],
      [{ type: 'registry_value', path: 'HKLM\\Software', name: 'x' }],
      [{ type: 'registry_value', path: 'HKLM\\Software', name: 'x', expected: { nested: true } }],
      [{ type: 'config_file', path: '/etc/ssh/sshd_config', expected: 'no' }],
      [{ type: 'service_running', name: 'sshd', remediation: { type: 'reboot' } }],
      [{ type: 'software_required', name: 'x', remediation: { type: 'install', catalogId: '00000000-0000-4000-8000-000000000000' } }],
      [{ type: 'software_required', name: 'x', remediation: { type: 'uninstall' } }],
      [],
    ]) {
      const res = await api.post('/policies', { name: 'Bad', targets: {}, rules });
      expect([JSON.stringify(rules), res.status, res.body.code]).toEqual([JSON.stringify(rules), 400, 'VALIDATION_ERROR']);
    }
    expectError(await api.post('/policies', { name: 'Bad', rules: [{ type: 'disk_encryption' }] }), 400, 'VALIDATION_ERROR');
  });

  test('inventory rules: software required (any case, wildcards, dotted minVersion) and forbidden, OS version, disk encryption; evaluated on activation and on reports', async () => {
    const { org, api, reader, a, b } = await policyFleet();
    await report(a, { software: [{ name: 'Mozilla Firefox', version: '121.0.1' }, { name: 'Zoom', version: '5.1' }], security: { encryption: { enabled: true } } });
    await report(b, { software: [{ name: 'mozilla firefox', version: '9.9.9' }, { name: 'uTorrent Web', version: '1.0' }], security: { encryption: { enabled: false } } });
    const policy = await createPolicy(api, {
      rules: [
        { type: 'software_required', name: 'MOZILLA *', minVersion: '10.0' },
        { type: 'software_forbidden', name: 'utorrent*' },
        { type: 'os_version_min', osType: 'linux', version: '12.0' },
        { type: 'os_version_min', osType: 'windows', version: '10.0.19045' },
        { type: 'disk_encryption' },
      ],
    });
    expect(await statuses(reader, policy.id)).toEqual({});
    await activate(api, policy.id);
    const evaluated = await complianceOf(reader, policy.id);
    expect(evaluated[a.deviceId]).toEqual({ deviceId: a.deviceId, hostname: expect.stringMatching(/^a-/), status: 'compliant', violations: [], evaluatedAt: expect.any(String) });
    expect(evaluated[b.deviceId]!.status).toBe('non_compliant');
    expect(evaluated[b.deviceId]!.violations.map((v) => [v.ruleIndex, v.type])).toEqual([
      [0, 'software_required'],
      [1, 'software_forbidden'],
      [2, 'os_version_min'],
      [4, 'disk_encryption'],
    ]);
    expect(evaluated[b.deviceId]!.violations[1]!.message).toContain('uTorrent Web');
    expect((await reader.get(`/policies/${policy.id}/compliance`)).body.summary).toEqual({ compliant: 1, nonCompliant: 1, pending: 0 });

    // b's next report fixes everything but the OS; a's breaks the required software.
    await report(b, { software: [{ name: 'Mozilla Firefox', version: '10.0' }], security: { encryption: { enabled: true } } });
    await report(a, { software: [{ name: 'Zoom', version: '5.1' }] });
    const after = await complianceOf(reader, policy.id);
    expect(after[b.deviceId]!.violations.map((v) => v.type)).toEqual(['os_version_min']);
    expect(after[a.deviceId]!.violations).toEqual([{ ruleIndex: 0, type: 'software_required', message: 'MOZILLA * is not installed' }]);

    const violations = await eventsOf('policy.violation', org.id);
    expect(violations.map((e) => e.data.deviceId).sort()).toEqual([a.deviceId, b.deviceId].sort());
    expect(violations.find((e) => e.data.deviceId === a.deviceId)!.data).toEqual({ policyId: policy.id, deviceId: a.deviceId, violations: [{ ruleIndex: 0, type: 'software_required', message: 'MOZILLA * is not installed' }] });
    const evaluatedEvents = await eventsOf('policy.evaluated', org.id);
    expect(evaluatedEvents[0]!.data).toEqual({ policyId: policy.id, evaluationId: expect.any(String), compliant: 1, nonCompliant: 1, pending: 0 });
  });

  test('applyPolicy (the api for staged rollouts) evaluates devices outside the targets, even while inactive; policyEvaluations answers their latest status', async () => {
    const { org, api, a, b } = await policyFleet();
    await report(a, { security: { encryption: { enabled: true } } });
    const policy = await createPolicy(api, { targets: { deviceIds: [b.deviceId] }, rules: [{ type: 'disk_encryption' }] });
    const { applyPolicy, policyEvaluations, requireConfigurationPolicy } = await import('../src/services/policies/api.js');
    const { RequestContext } = await import('../src/auth/context.js');
    const { withTransaction } = await import('../src/db/transaction.js');
    const ctx = RequestContext.system(app.server.runtime, 'test');
    const found = await requireConfigurationPolicy(ctx, policy.id, 'policies:write');
    expect(found).toEqual({ id: policy.id, orgId: org.id, name: policy.name });
    const { evaluationId } = await withTransaction(ctx, (tx) => applyPolicy(tx, policy.id, [a.deviceId]));
    expect(evaluationId).toEqual(expect.any(String));
    const evaluations = await policyEvaluations(ctx, policy.id, [a.deviceId, b.deviceId]);
    expect([...evaluations.keys()]).toEqual([a.deviceId]);
    expect(evaluations.get(a.deviceId)!.status).toBe('compliant');
  });

  test('agent rules: the device is pending until its agent answers policy_check; the answer settles it and policy.evaluated follows', async () => {
    const { org, api, reader, a } = await policyFleet();
    const policy = await createPolicy(api, {
      targets: { deviceIds: [a.deviceId] },
      rules: [
        { type: 'service_running', name: 'sshd' },
        { type: 'registry_value', path: 'HKLM\\Software\\Policies', name: 'NoAutoUpdate', expected: 1 },
        { type: 'config_file', path: '/etc/ssh/sshd_config', key: 'PermitRootLogin', expected: 'no' },
        { type: 'disk_encryption' },
      ],
    });
    await activate(api, policy.id);
    const pending = await complianceOf(reader, policy.id);
    expect(pending[a.deviceId]!.status).toBe('pending');
    expect(pending[a.deviceId]!.violations).toEqual([{ ruleIndex: 3, type: 'disk_encryption', message: 'disk encryption is not reported' }]);
    expect(await eventsOf('policy.evaluated', org.id)).toEqual([]);
    const [check] = (await heartbeat(a)).filter((c) => c.type === 'policy_check');
    expect(check!.payload).toEqual({
      policyId: policy.id,
      evaluationId: expect.any(String),
      checks: [
        { ruleIndex: 0, type: 'service_running', name: 'sshd' },
        { ruleIndex: 1, type: 'registry_value', path: 'HKLM\\Software\\Policies', name: 'NoAutoUpdate', expected: 1 },
        { ruleIndex: 2, type: 'config_file', path: '/etc/ssh/sshd_config', key: 'PermitRootLogin', expected: 'no' },
      ],
    });
    expectError(await api.post(`/devices/${a.deviceId}/commands`, { type: 'policy_check', payload: {} }), 400, 'VALIDATION_ERROR');
    await answer(a, check!.id, {
      status: 'completed',
      result: {
        checks: [
          { ruleIndex: 0, passed: true },
          { ruleIndex: 1, passed: false, actual: 0 },
          { ruleIndex: 2, passed: true, actual: 'no' },
        ],
      },
    });
    const settled = await complianceOf(reader, policy.id);
    expect(settled[a.deviceId]!.status).toBe('non_compliant');
    expect(settled[a.deviceId]!.violations).toEqual([
      { ruleIndex: 1, type: 'registry_value', message: 'HKLM\\Software\\Policies\\NoAutoUpdate is 0, expected 1' },
      { ruleIndex: 3, type: 'disk_encryption', message: 'disk encryption is not reported' },
    ]);
    expect((await eventsOf('policy.evaluated', org.id)).map((e) => e.data)).toEqual([{ policyId: policy.id, evaluationId: check!.payload.evaluationId, compliant: 0, nonCompliant: 1, pending: 0 }]);
  });
});
