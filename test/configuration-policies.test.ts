import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import { TestClock } from './support/clock.js';
import { dueWorkTicked, sql } from './support/db.js';
import { agentCall, enroll, fleet, heartbeatCommands, reportCommandResult, type EnrolledAgent } from './support/devices.js';
import { buildSite, buildUser, unique } from './support/factories.js';
import { listenToDomainEvents } from './support/domain-events.js';
import { eventually } from './support/eventually.js';

const clock = new TestClock();
let app: TestApp;

beforeAll(async () => {
  app = await createTestApp({ start: { clock } });
});
afterAll(async () => {
  await app.stop();
});

type Api = ReturnType<typeof rest>;

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

const heartbeat = (agent: EnrolledAgent) => heartbeatCommands(app, agent);
const answer = (agent: EnrolledAgent, commandId: string, body: Record<string, unknown>) => reportCommandResult(app, agent, commandId, body);

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

// Before the tests that move the clock on: subscriptions are made with tokens of real time.
test('domainEvents delivers policy events to the organization’s policy readers, a device’s to site-limited readers of its site only', async () => {
  const f = await fleet(app);
  const site = await buildSite(app, f.org.id);
  const a = await enroll(app, f.key, `a-${unique()}`);
  await report(a, { security: { encryption: { enabled: true } } });
  const reader = await buildUser(app, { orgId: f.org.id, can: ['organizations:read', 'devices:read', 'policies:read'] });
  const bystander = await buildUser(app, { orgId: f.org.id, can: ['organizations:read', 'devices:read'] });
  const elsewhere = await buildUser(app, { orgId: f.org.id, can: ['organizations:read', 'devices:read', 'policies:read'] });
  await sql(app, 'update membership set site_ids = ?::jsonb where id = ?', [JSON.stringify([site.id]), elsewhere.membership.id]);
  const { received, dispose } = await listenToDomainEvents(app, [reader, bystander, elsewhere], ['policy.evaluated', 'policy.violation', 'device.updated']);
  try {
    const policy = await createPolicy(f.api, { targets: { deviceIds: [a.deviceId] }, rules: [{ type: 'disk_encryption' }] });
    await activate(f.api, policy.id);
    await report(a, { security: { encryption: { enabled: false } } });
    // A device event after them, which all may see: once it has arrived, the policy events were decided before it.
    expect((await f.api.patch(`/devices/${a.deviceId}`, { tags: ['checked'] })).status).toBe(200);
    await eventually(() => [reader, bystander].every((u) => received.get(u.user.id)!.some((e) => e.type === 'device.updated')), 10_000, 'the device event');
    expect(received.get(reader.user.id)!.map((e) => e.type)).toEqual(['policy.evaluated', 'policy.violation', 'policy.evaluated', 'device.updated']);
    expect(received.get(reader.user.id)![1]!.data).toEqual({ policyId: policy.id, deviceId: a.deviceId, violations: [{ ruleIndex: 0, type: 'disk_encryption', message: 'the disk is not encrypted' }] });
    expect(received.get(bystander.user.id)!.map((e) => e.type)).toEqual(['device.updated']);
    // The site-limited reader hears the policy's evaluations, not the device of no site of theirs (the violation came between them).
    await eventually(() => received.get(elsewhere.user.id)!.filter((e) => e.type === 'policy.evaluated').length === 2, 10_000, 'the evaluations');
    expect(received.get(elsewhere.user.id)!.map((e) => e.type)).toEqual(['policy.evaluated', 'policy.evaluated']);
  } finally {
    await dispose();
  }
});

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

  test('a technician limited to a site writes policies on its devices only: the whole organization is 403, another site 404', async () => {
    const { org, api } = await policyFleet();
    const [mySite, otherSite] = [await buildSite(app, org.id), await buildSite(app, org.id)];
    const limitedUser = await buildUser(app, { orgId: org.id, role: 'Organization Technician' });
    await sql(app, 'update membership set site_ids = ?::jsonb where id = ?', [JSON.stringify([mySite.id]), limitedUser.membership.id]);
    const limited = rest(app, limitedUser.as);
    const rules = [{ type: 'disk_encryption' }];
    expectError(await limited.post('/policies', { name: 'All', targets: {}, rules }), 403, 'FORBIDDEN');
    expectError(await limited.post('/policies', { name: 'Other', targets: { siteIds: [otherSite.id] }, rules }), 404, 'NOT_FOUND');
    expect((await limited.post('/policies', { name: 'Mine', targets: { siteIds: [mySite.id] }, rules })).status).toBe(201);
    const orgWide = await createPolicy(api, { rules });
    expectError(await limited.post(`/policies/${orgWide.id}/activate`), 403, 'FORBIDDEN');
    expectError(await limited.delete(`/policies/${orgWide.id}`), 403, 'FORBIDDEN');
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

  test('wildcards match piece by piece: several stars, none at the ends, and a pattern made to backtrack answers at once', async () => {
    const { api, reader, a, b } = await policyFleet();
    await report(a, { software: [{ name: 'Google Chrome Beta', version: '1' }, { name: 'a'.repeat(60), version: '1' }] });
    await report(b, { software: [{ name: 'Chromium', version: '1' }] });
    const policy = await createPolicy(api, {
      rules: [
        { type: 'software_required', name: 'google*chrome*' },
        { type: 'software_forbidden', name: `${'*a'.repeat(30)}*b` },
        { type: 'software_forbidden', name: 'chrom*m' },
      ],
    });
    await activate(api, policy.id);
    const evaluated = await complianceOf(reader, policy.id);
    expect(evaluated[a.deviceId]!.violations).toEqual([]);
    expect(evaluated[b.deviceId]!.violations.map((v) => [v.ruleIndex, v.type])).toEqual([
      [0, 'software_required'],
      [2, 'software_forbidden'],
    ]);
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
    // A report meanwhile re-evaluates the inventory rules; the device keeps awaiting the one check.
    await report(a, { security: { encryption: { enabled: true } } });
    expect((await complianceOf(reader, policy.id))[a.deviceId]).toMatchObject({ status: 'pending', violations: [] });
    const checks = (await heartbeat(a)).filter((c) => c.type === 'policy_check');
    expect(checks).toHaveLength(1);
    const [check] = checks;
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
    expect(settled[a.deviceId]!.violations).toEqual([{ ruleIndex: 1, type: 'registry_value', message: 'HKLM\\Software\\Policies\\NoAutoUpdate is 0, expected 1' }]);
    // One evaluation settled (the report's, which the activation's gave way to).
    expect((await eventsOf('policy.evaluated', org.id)).map((e) => e.data)).toEqual([{ policyId: policy.id, evaluationId: expect.any(String), compliant: 0, nonCompliant: 1, pending: 0 }]);
  });

  test('answers of one evaluation arriving together settle it once; reports of several devices evaluate side by side', async () => {
    const f = await fleet(app);
    const agents = await Promise.all([1, 2, 3, 4, 5].map((i) => enroll(app, f.key, `c${i}-${unique()}`)));
    const policy = await createPolicy(f.api, { rules: [{ type: 'service_running', name: 'sshd' }, { type: 'disk_encryption' }] });
    await activate(f.api, policy.id);
    await Promise.all(agents.map((agent) => report(agent, { security: { encryption: { enabled: true } } })));
    const checks = await Promise.all(agents.map(async (agent) => ({ agent, check: (await heartbeat(agent)).find((c) => c.type === 'policy_check')! })));
    await Promise.all(checks.map(({ agent, check }) => answer(agent, check.id, { status: 'completed', result: { checks: [{ ruleIndex: 0, passed: true }] } })));
    expect(Object.values(await statuses(f.api, policy.id))).toEqual(['compliant', 'compliant', 'compliant', 'compliant', 'compliant']);
    // Each report's evaluation settled with its device's answer (the activation's gave way to them).
    const evaluated = (await eventsOf('policy.evaluated', f.org.id)).map((e) => e.data);
    expect(evaluated).toHaveLength(5);
    expect(evaluated.every((e) => e.compliant === 1 && e.nonCompliant === 0 && e.pending === 0)).toBe(true);
  });

  test('answers of one whole evaluation arriving together emit policy.evaluated once, with every device counted', async () => {
    const f = await fleet(app);
    const agents = await Promise.all([1, 2, 3, 4].map((i) => enroll(app, f.key, `w${i}-${unique()}`)));
    const policy = await createPolicy(f.api, { rules: [{ type: 'service_running', name: 'sshd' }] });
    await activate(f.api, policy.id);
    const checks = await Promise.all(agents.map(async (agent) => ({ agent, check: (await heartbeat(agent)).find((c) => c.type === 'policy_check')! })));
    await Promise.all(checks.map(({ agent, check }, i) => answer(agent, check.id, { status: 'completed', result: { checks: [{ ruleIndex: 0, passed: i > 0 }] } })));
    expect((await eventsOf('policy.evaluated', f.org.id)).map((e) => e.data)).toEqual([{ policyId: policy.id, evaluationId: checks[0]!.check.payload.evaluationId, compliant: 3, nonCompliant: 1, pending: 0 }]);
  });

  test('deactivating stops evaluation on reports and on the interval (POLICY_EVALUATION_INTERVAL_MINUTES, by the clock); evaluate is 202 while active, 409 while inactive', async () => {
    const { org, api, a } = await policyFleet();
    await report(a, { security: { encryption: { enabled: true } } });
    const policy = await createPolicy(api, { rules: [{ type: 'disk_encryption' }] });
    expectError(await api.post(`/policies/${policy.id}/evaluate`), 409, 'CONFLICT');
    expectError(await api.post(`/policies/${policy.id}/deactivate`), 409, 'CONFLICT');
    await activate(api, policy.id);
    expectError(await api.post(`/policies/${policy.id}/activate`), 409, 'CONFLICT');
    const evaluated = await api.post(`/policies/${policy.id}/evaluate`);
    expect([evaluated.status, evaluated.body]).toEqual([202, { evaluationId: expect.any(String), devices: 2 }]);
    const evaluations = async () => (await eventsOf('policy.evaluated', org.id)).length;
    expect(await evaluations()).toBe(2);

    // The interval: an hour on, the next tick evaluates it again.
    clock.advance(61 * 60_000);
    await eventually(async () => (await evaluations()) === 3, 20_000, 'the interval’s evaluation');
    const lastEvaluatedAt = (await api.get(`/policies/${policy.id}`)).body.lastEvaluatedAt;
    expect(new Date(lastEvaluatedAt).getTime()).toBeGreaterThan(Date.now() + 60 * 60_000);

    expect((await api.post(`/policies/${policy.id}/deactivate`)).body.status).toBe('inactive');
    await report(a, { security: { encryption: { enabled: false } } });
    clock.advance(61 * 60_000);
    await dueWorkTicked(app);
    expect(await evaluations()).toBe(3);
    expect((await statuses(api, policy.id))[a.deviceId]).toBe('compliant');
  });

  test('policy.violation when a device becomes non-compliant (an alert raised), policy.compliant when it returns (the alert resolved)', async () => {
    const { org, api, a } = await policyFleet();
    await report(a, { security: { encryption: { enabled: true } } });
    const policy = await createPolicy(api, { targets: { deviceIds: [a.deviceId] }, rules: [{ type: 'disk_encryption' }] });
    await activate(api, policy.id);
    await report(a, { security: { encryption: { enabled: false } } });
    await report(a, { security: { encryption: { enabled: false } } });
    await report(a, { security: { encryption: { enabled: true } } });
    expect((await eventsOf('policy.violation', org.id)).map((e) => e.data)).toEqual([
      { policyId: policy.id, deviceId: a.deviceId, violations: [{ ruleIndex: 0, type: 'disk_encryption', message: 'the disk is not encrypted' }] },
    ]);
    expect((await eventsOf('policy.compliant', org.id)).map((e) => e.data)).toEqual([{ policyId: policy.id, deviceId: a.deviceId }]);
    const alerts = await sql(app, `select status, device_id, source from alert where org_id = ? and source = 'configuration_policy'`, [org.id]);
    expect(alerts).toEqual([{ status: 'resolved', device_id: a.deviceId, source: 'configuration_policy' }]);
  });

  test('a non-compliant device’s alert is resolved when the policy stops covering it, is deactivated or deleted; reactivated, the violation is announced again', async () => {
    const { org, api, a, b } = await policyFleet();
    for (const agent of [a, b]) await report(agent, { security: { encryption: { enabled: false } } });
    const policy = await createPolicy(api, { targets: { deviceIds: [a.deviceId, b.deviceId] }, rules: [{ type: 'disk_encryption' }] });
    await activate(api, policy.id);
    const openAlerts = async () => (await sql(app, `select device_id from alert where org_id = ? and source = 'configuration_policy' and status <> 'resolved' order by device_id`, [org.id])).map((r) => r.device_id);
    expect(await openAlerts()).toEqual([a.deviceId, b.deviceId].sort());
    // b leaves the targets.
    expect((await api.patch(`/policies/${policy.id}`, { targets: { deviceIds: [a.deviceId] } })).status).toBe(200);
    expect(await openAlerts()).toEqual([a.deviceId]);
    expect((await api.post(`/policies/${policy.id}/deactivate`)).status).toBe(200);
    expect(await openAlerts()).toEqual([]);
    await activate(api, policy.id);
    expect(await openAlerts()).toEqual([a.deviceId]);
    expect((await eventsOf('policy.violation', org.id)).map((e) => e.data.deviceId).sort()).toEqual([a.deviceId, a.deviceId, b.deviceId].sort());
    expect((await api.delete(`/policies/${policy.id}`)).status).toBe(204);
    expect(await openAlerts()).toEqual([]);
  });

  test('compliance views: per policy, stats (a device counts by its worst status), summary and per device; users limited to a site count its devices only', async () => {
    const f = await fleet(app);
    const site = await buildSite(app, f.org.id);
    const inSite = await enroll(app, f.key, `s-${unique()}`);
    const outside = await enroll(app, f.key, `o-${unique()}`);
    await sql(app, 'update device set site_id = ? where id = ?', [site.id, inSite.deviceId]);
    await report(inSite, { security: { encryption: { enabled: true } }, software: [{ name: 'Git', version: '2.40' }] });
    await report(outside, { security: { encryption: { enabled: false } }, software: [{ name: 'Git', version: '2.40' }] });
    const encrypted = await createPolicy(f.api, { name: 'Encrypted', rules: [{ type: 'disk_encryption' }] });
    const git = await createPolicy(f.api, { name: 'Git', rules: [{ type: 'software_required', name: 'git' }] });
    const agentPolicy = await createPolicy(f.api, { name: 'Agent', targets: { deviceIds: [inSite.deviceId] }, rules: [{ type: 'service_running', name: 'sshd' }] });
    await createPolicy(f.api, { name: 'Idle', rules: [{ type: 'disk_encryption' }] });
    for (const p of [encrypted, git, agentPolicy]) await activate(f.api, p.id);

    const viewer = rest(app, (await buildUser(app, { orgId: f.org.id, role: 'Organization Viewer' })).as);
    expect((await viewer.get('/policies/compliance/stats')).body).toEqual({ policies: 4, activePolicies: 3, devices: 2, compliant: 0, nonCompliant: 1, pending: 1, compliancePercent: 0 });
    const summary = await viewer.get('/policies/compliance/summary');
    expect(summary.body.data.map((p: any) => [p.name, p.status, p.compliant, p.nonCompliant, p.pending])).toEqual([
      ['Idle', 'inactive', 0, 0, 0],
      ['Agent', 'active', 0, 0, 1],
      ['Git', 'active', 2, 0, 0],
      ['Encrypted', 'active', 1, 1, 0],
    ]);
    const device = await viewer.get(`/policies/compliance/device/${outside.deviceId}`);
    expect(device.body).toEqual({
      deviceId: outside.deviceId,
      status: 'non_compliant',
      policies: [
        { policyId: encrypted.id, name: 'Encrypted', status: 'non_compliant', violations: [{ ruleIndex: 0, type: 'disk_encryption', message: 'the disk is not encrypted' }] },
        { policyId: git.id, name: 'Git', status: 'compliant', violations: [] },
      ],
    });
    expect((await viewer.get(`/policies/compliance/device/${inSite.deviceId}`)).body.status).toBe('pending');

    // The agent answers: the site's device is compliant everywhere.
    const [check] = (await heartbeat(inSite)).filter((c) => c.type === 'policy_check');
    await answer(inSite, check!.id, { status: 'completed', result: { checks: [{ ruleIndex: 0, passed: true, actual: 'running' }] } });
    expect((await viewer.get('/policies/compliance/stats')).body).toMatchObject({ devices: 2, compliant: 1, nonCompliant: 1, pending: 0, compliancePercent: 50 });

    const limitedUser = await buildUser(app, { orgId: f.org.id, role: 'Organization Viewer' });
    await sql(app, 'update membership set site_ids = ?::jsonb where id = ?', [JSON.stringify([site.id]), limitedUser.membership.id]);
    const limited = rest(app, limitedUser.as);
    expect((await limited.get('/policies/compliance/stats')).body).toMatchObject({ devices: 1, compliant: 1, nonCompliant: 0, pending: 0, compliancePercent: 100 });
    expect((await limited.get(`/policies/${encrypted.id}/compliance`)).body).toEqual({
      summary: { compliant: 1, nonCompliant: 0, pending: 0 },
      devices: [{ deviceId: inSite.deviceId, hostname: expect.any(String), status: 'compliant', violations: [], evaluatedAt: expect.any(String) }],
    });
    expect((await limited.get('/policies/compliance/summary')).body.data.find((p: any) => p.name === 'Encrypted')).toMatchObject({ compliant: 1, nonCompliant: 0 });
    expectError(await limited.get(`/policies/compliance/device/${outside.deviceId}`), 404, 'NOT_FOUND');
  });

  test('remediation: uninstall, install, start_service and script commands for violated rules; a completed one re-evaluates the device', async () => {
    const { org, api, reader, a, b } = await policyFleet();
    const catalog = (await api.post('/software/catalog', { name: 'Firefox', vendor: 'Mozilla', category: 'browser' })).body;
    const version = (await api.post(`/software/catalog/${catalog.id}/versions`, { version: '128.0', installers: [{ osType: 'windows', url: 'https://downloads.example.test/ff.msi', sha256: 'ab'.repeat(32) }] })).body;
    const linuxVersion = (await api.post(`/software/catalog/${catalog.id}/versions`, { version: '129.0', installers: [{ osType: 'linux', url: 'https://downloads.example.test/ff.tar', sha256: 'cd'.repeat(32) }] })).body;
    const script = (await api.post('/scripts', { name: `fix-${unique()}`, language: 'bash', content: 'echo fixed', osTypes: ['linux'] })).body;
    expect(script.id).toEqual(expect.any(String));
    await report(a, { software: [{ name: 'uTorrent', version: '3.0' }], security: { encryption: { enabled: false } } });
    await report(b, { software: [{ name: 'Firefox', version: '127.0' }], security: { encryption: { enabled: true } } });
    const policy = await createPolicy(api, {
      rules: [
        { type: 'software_forbidden', name: 'utorrent', remediation: { type: 'uninstall' } },
        { type: 'software_required', name: 'firefox', minVersion: '128', remediation: { type: 'install', catalogId: catalog.id, versionId: version.id } },
        { type: 'disk_encryption', remediation: { type: 'script', scriptId: script.id, parameters: {} } },
        { type: 'os_version_min', osType: 'linux', version: '1' },
      ],
    });
    await activate(api, policy.id);
    expectError(await reader.post(`/policies/${policy.id}/remediate`, {}), 403, 'FORBIDDEN');
    const remediated = await api.post(`/policies/${policy.id}/remediate`, {});
    expect(remediated.status).toBe(202);
    const byType = Object.fromEntries(remediated.body.commands.map((c: any) => [`${c.deviceId === a.deviceId ? 'a' : 'b'}:${c.type}`, c]));
    expect(Object.keys(byType).sort()).toEqual(['a:run_script', 'a:uninstall_software']);
    expect(remediated.body.skipped.map((s: any) => [s.deviceId === a.deviceId ? 'a' : 'b', s.reason]).sort()).toEqual([
      ['a', 'rule 1: Firefox 128.0 has no installer for linux'],
      ['b', 'rule 1: Firefox 128.0 has no installer for linux'],
    ]);

    // A linux installer: b gets install_software.
    expect((await api.patch(`/policies/${policy.id}`, { rules: [{ type: 'software_required', name: 'firefox', minVersion: '128', remediation: { type: 'install', catalogId: catalog.id, versionId: linuxVersion.id } }] })).status).toBe(200);
    const install = await api.post(`/policies/${policy.id}/remediate`, { deviceIds: [b.deviceId] });
    expect(install.body).toEqual({ commands: [{ deviceId: b.deviceId, ruleIndex: 0, commandId: expect.any(String), type: 'install_software' }], skipped: [] });
    const commandsB = await heartbeat(b);
    const installCommand = commandsB.find((c) => c.id === install.body.commands[0].commandId)!;
    expect(installCommand.payload).toMatchObject({ policyId: policy.id, name: 'Firefox', version: '129.0', url: 'https://downloads.example.test/ff.tar', sha256: 'cd'.repeat(32) });
    // The agent installs it and reports; the completed command re-evaluates b.
    await agentCall(app, b, '/inventory', { software: [{ name: 'Firefox', version: '129.0' }] });
    await answer(b, installCommand.id, { status: 'completed', exitCode: 0 });
    await eventually(async () => (await statuses(reader, policy.id))[b.deviceId] === 'compliant', 10_000, 'b compliant');

    // a's uninstall (of the policy's earlier rules) completes: it is marked, the item gone.
    const commandsA = await heartbeat(a);
    const uninstall = commandsA.find((c) => c.id === byType['a:uninstall_software'].commandId)!;
    expect(uninstall.payload).toEqual({ policyId: policy.id, softwareId: expect.any(String), name: 'uTorrent', version: '3.0' });
    expect(commandsA.some((c) => c.id === byType['a:run_script'].commandId)).toBe(true);
    await answer(a, uninstall.id, { status: 'completed', exitCode: 0 });
    await eventually(async () => (await sql(app, `select status from configuration_policy_remediation where command_id = ?`, [uninstall.id]))[0]?.status === 'completed', 10_000, 'the uninstall marked');
    expect((await sql(app, `select count(*)::int as n from device_software where device_id = ? and name = 'uTorrent'`, [a.deviceId]))[0].n).toBe(0);

    // start_service for a violated service rule.
    const services = await createPolicy(api, { targets: { deviceIds: [a.deviceId] }, rules: [{ type: 'service_running', name: 'nginx', remediation: { type: 'start_service' } }] });
    await activate(api, services.id);
    const [check] = (await heartbeat(a)).filter((c) => c.type === 'policy_check');
    await answer(a, check!.id, { status: 'completed', result: { checks: [{ ruleIndex: 0, passed: false, actual: 'stopped' }] } });
    const started = await api.post(`/policies/${services.id}/remediate`, {});
    expect(started.body.commands).toEqual([{ deviceId: a.deviceId, ruleIndex: 0, commandId: expect.any(String), type: 'start_service' }]);
    const start = (await heartbeat(a)).find((c) => c.type === 'start_service')!;
    expect(start.payload).toEqual({ policyId: services.id, name: 'nginx' });
    await answer(a, start.id, { status: 'completed', exitCode: 0 });
    // The re-evaluation asks the agent again.
    const recheck = await eventually(async () => (await heartbeat(a)).find((c) => c.type === 'policy_check'), 10_000, 'a new policy_check');
    await answer(a, recheck.id, { status: 'completed', result: { checks: [{ ruleIndex: 0, passed: true, actual: 'running' }] } });
    expect((await statuses(reader, services.id))[a.deviceId]).toBe('compliant');
    expect((await eventsOf('policy.compliant', org.id)).map((e) => e.data)).toContainEqual({ policyId: services.id, deviceId: a.deviceId });
  });
});

describe('GraphQL and tenancy', () => {
  const FIELDS = 'id orgId name description status targets { siteIds groupIds deviceIds } rules { type name minVersion osType version path key expected remediation { type catalogId versionId scriptId parameters } } lastEvaluatedAt';

  test('every REST operation has its GraphQL query or mutation', async () => {
    const { tech, viewer, a } = await policyFleet();
    await report(a, { security: { encryption: { enabled: false } }, software: [{ name: 'uTorrent', version: '1' }] });
    const created = await gql(app, tech.as, `mutation($input: CreateConfigurationPolicyInput!) { createConfigurationPolicy(input: $input) { ${FIELDS} } }`, {
      input: { name: 'GraphQL', targets: {}, rules: [{ type: 'software_forbidden', name: 'utorrent', remediation: { type: 'uninstall' } }, { type: 'registry_value', path: 'HKLM\\X', name: 'Y', expected: 1 }] },
    });
    expect(created.body.errors).toBeUndefined();
    const policy = created.body.data!.createConfigurationPolicy;
    expect(policy.rules[1]).toEqual({ type: 'registry_value', name: 'Y', minVersion: null, osType: null, version: null, path: 'HKLM\\X', key: null, expected: 1, remediation: null });
    const bad = await gql(app, tech.as, `mutation($input: CreateConfigurationPolicyInput!) { createConfigurationPolicy(input: $input) { id } }`, { input: { name: 'Bad', targets: {}, rules: [{ type: 'disk_encryption', name: 'x' }] } });
    expect(bad.body.errors?.[0]?.extensions?.code).toBe('VALIDATION_ERROR');
    const run = async (as: typeof tech.as, query: string, variables: Record<string, unknown> = {}) => {
      const res = await gql(app, as, query, { id: policy.id, ...variables });
      expect(res.body.errors).toBeUndefined();
      return res.body.data;
    };
    expect((await run(viewer.as, 'query($id: ID!) { configurationPolicy(id: $id) { name } }')).configurationPolicy.name).toBe('GraphQL');
    expect((await run(viewer.as, 'query { configurationPolicies(first: 5, status: inactive) { totalCount edges { node { id } } } }')).configurationPolicies.totalCount).toBe(1);
    expect((await run(tech.as, 'mutation($id: ID!) { activateConfigurationPolicy(id: $id) { status } }')).activateConfigurationPolicy.status).toBe('active');
    expect((await run(tech.as, 'mutation($id: ID!) { evaluateConfigurationPolicy(id: $id) { devices } }')).evaluateConfigurationPolicy.devices).toBe(2);
    const compliance = (await run(viewer.as, 'query($id: ID!) { configurationPolicyCompliance(id: $id) { summary { compliant nonCompliant pending } devices { deviceId status } } }')).configurationPolicyCompliance;
    expect(compliance.summary).toEqual({ compliant: 0, nonCompliant: 0, pending: 2 });
    expect((await run(viewer.as, 'query { configurationPolicyComplianceStats { policies activePolicies devices pending compliancePercent } }')).configurationPolicyComplianceStats).toEqual({
      policies: 1,
      activePolicies: 1,
      devices: 2,
      pending: 2,
      compliancePercent: 0,
    });
    expect((await run(viewer.as, 'query { configurationPolicyComplianceSummary { data { policyId pending } nextCursor } }')).configurationPolicyComplianceSummary.data).toEqual([{ policyId: policy.id, pending: 2 }]);
    expect((await run(viewer.as, 'query($deviceId: ID!) { deviceConfigurationCompliance(deviceId: $deviceId) { status policies { policyId status } } }', { deviceId: a.deviceId })).deviceConfigurationCompliance.status).toBe('pending');
    expect((await run(tech.as, 'mutation($id: ID!) { remediateConfigurationPolicy(id: $id) { commands { type } skipped { reason } } }')).remediateConfigurationPolicy).toEqual({ commands: [], skipped: [] });
    const updated = await run(tech.as, 'mutation($id: ID!, $input: UpdateConfigurationPolicyInput!) { updateConfigurationPolicy(id: $id, input: $input) { description } }', { input: { description: 'changed' } });
    expect(updated.updateConfigurationPolicy.description).toBe('changed');
    const replaced = await run(tech.as, 'mutation($id: ID!, $input: ReplaceConfigurationPolicyInput!) { replaceConfigurationPolicy(id: $id, input: $input) { name description rules { type } } }', {
      input: { name: 'Replaced', targets: {}, rules: [{ type: 'disk_encryption' }] },
    });
    expect(replaced.replaceConfigurationPolicy).toEqual({ name: 'Replaced', description: null, rules: [{ type: 'disk_encryption' }] });
    expect((await run(tech.as, 'mutation($id: ID!) { deactivateConfigurationPolicy(id: $id) { status } }')).deactivateConfigurationPolicy.status).toBe('inactive');
    const denied = await gql(app, viewer.as, 'mutation($id: ID!) { deleteConfigurationPolicy(id: $id) }', { id: policy.id });
    expect(denied.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect((await run(tech.as, 'mutation($id: ID!) { deleteConfigurationPolicy(id: $id) }')).deleteConfigurationPolicy).toBe(true);
  });

  test("another organization's policy, device, site, group, catalog version, script or organization is 404 on every route, REST and GraphQL", async () => {
    const mine = await policyFleet();
    const other = await policyFleet();
    const theirs = await createPolicy(other.api, { rules: [{ type: 'disk_encryption' }] });
    const theirSite = await buildSite(app, other.org.id);
    const theirGroup = (await other.api.post('/groups', { name: `G ${unique()}`, type: 'static' })).body;
    const theirCatalog = (await other.api.post('/software/catalog', { name: 'App', vendor: 'V', category: 'c' })).body;
    const theirVersion = (await other.api.post(`/software/catalog/${theirCatalog.id}/versions`, { version: '1.0', installers: [{ osType: 'linux', url: 'https://x.example.test/a', sha256: 'ab'.repeat(32) }] })).body;
    const theirScript = (await other.api.post('/scripts', { name: `s-${unique()}`, language: 'bash', content: 'echo hi' })).body;
    const ours = await createPolicy(mine.api, { rules: [{ type: 'disk_encryption' }] });
    const path = `/policies/${theirs.id}`;
    const body = { name: 'X', targets: {}, rules: [{ type: 'disk_encryption' }] };
    for (const [method, url, payload] of [
      ['get', path],
      ['put', path, body],
      ['patch', path, { name: 'X' }],
      ['delete', path],
      ['post', `${path}/activate`],
      ['post', `${path}/deactivate`],
      ['post', `${path}/evaluate`],
      ['post', `${path}/remediate`, {}],
      ['get', `${path}/compliance`],
      ['get', `/policies/compliance/device/${other.a.deviceId}`],
      ['get', `/policies?orgId=${other.org.id}`],
      ['get', `/policies/compliance/stats?orgId=${other.org.id}`],
      ['get', `/policies/compliance/summary?orgId=${other.org.id}`],
      ['post', '/policies', { ...body, orgId: other.org.id }],
      ['post', '/policies', { ...body, targets: { siteIds: [theirSite.id] } }],
      ['post', '/policies', { ...body, targets: { groupIds: [theirGroup.id] } }],
      ['post', '/policies', { ...body, targets: { deviceIds: [other.a.deviceId] } }],
      ['post', '/policies', { ...body, rules: [{ type: 'software_required', name: 'App', remediation: { type: 'install', catalogId: theirCatalog.id, versionId: theirVersion.id } }] }],
      ['post', '/policies', { ...body, rules: [{ type: 'disk_encryption', remediation: { type: 'script', scriptId: theirScript.id } }] }],
      ['put', `/policies/${ours.id}`, { ...body, targets: { deviceIds: [other.b.deviceId] } }],
      ['patch', `/policies/${ours.id}`, { targets: { siteIds: [theirSite.id] } }],
      ['post', `/policies/${ours.id}/remediate`, { deviceIds: [other.a.deviceId] }],
    ] as const) {
      const res = method === 'get' || method === 'delete' ? await mine.api[method](url) : await mine.api[method](url, payload);
      expect([method, url, res.status, res.body.code]).toEqual([method, url, 404, 'NOT_FOUND']);
    }
    expect((await other.api.get(path)).body.name).toBe(theirs.name);

    const notFound = async (query: string, variables: Record<string, unknown>) => {
      const res = await gql(app, mine.tech.as, query, variables);
      expect([query, res.body.errors?.[0]?.extensions?.code]).toEqual([query, 'NOT_FOUND']);
    };
    const id = { id: theirs.id };
    await notFound('query($id: ID!) { configurationPolicy(id: $id) { id } }', id);
    await notFound('query($id: ID!) { configurationPolicyCompliance(id: $id) { summary { pending } } }', id);
    await notFound('query($deviceId: ID!) { deviceConfigurationCompliance(deviceId: $deviceId) { status } }', { deviceId: other.a.deviceId });
    await notFound('query($orgId: ID!) { configurationPolicies(orgId: $orgId) { totalCount } }', { orgId: other.org.id });
    await notFound('query($orgId: ID!) { configurationPolicyComplianceStats(orgId: $orgId) { policies } }', { orgId: other.org.id });
    await notFound('query($orgId: ID!) { configurationPolicyComplianceSummary(orgId: $orgId) { nextCursor } }', { orgId: other.org.id });
    await notFound('mutation($input: CreateConfigurationPolicyInput!) { createConfigurationPolicy(input: $input) { id } }', { input: { ...body, targets: { deviceIds: [other.a.deviceId] } } });
    await notFound('mutation($id: ID!, $input: ReplaceConfigurationPolicyInput!) { replaceConfigurationPolicy(id: $id, input: $input) { id } }', { ...id, input: body });
    await notFound('mutation($id: ID!, $input: UpdateConfigurationPolicyInput!) { updateConfigurationPolicy(id: $id, input: $input) { id } }', { ...id, input: { name: 'X' } });
    for (const mutation of ['deleteConfigurationPolicy(id: $id)', 'activateConfigurationPolicy(id: $id) { id }', 'deactivateConfigurationPolicy(id: $id) { id }', 'evaluateConfigurationPolicy(id: $id) { devices }', 'remediateConfigurationPolicy(id: $id) { skipped { reason } }']) {
      await notFound(`mutation($id: ID!) { ${mutation} }`, id);
    }
  });
});
