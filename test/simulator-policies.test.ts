import { startSimulation, type Simulation } from '../src/scripts/simulator.js';
import { createTestApp, type TestApp } from './support/app.js';
import { rest } from './support/clients.js';
import { sql } from './support/db.js';
import { fleet } from './support/devices.js';
import { eventually } from './support/eventually.js';

let app: TestApp;
let api: ReturnType<typeof rest>;
let key: string;
let orgId: string;
let simulation: Simulation;

beforeAll(async () => {
  app = await createTestApp();
  const f = await fleet(app, { keyName: 'Policies' });
  ({ api, key } = f);
  orgId = f.org.id;
  simulation = await startSimulation({ url: app.url, enrollmentKey: key, devices: 4, intervalSeconds: 0.2, jitterSeconds: 0.1, prefix: 'pol' });
});
afterAll(async () => {
  await simulation?.stop();
  await app.stop();
});

/** The device's status and violated rule types under the policy, once it is not pending. */
async function settled(policyId: string, deviceId: string, status: string): Promise<string[]> {
  return eventually(
    async () => {
      const device = (await api.get(`/policies/${policyId}/compliance`)).body.devices.find((d: any) => d.deviceId === deviceId);
      return device?.status === status ? device.violations.map((v: any) => v.type) : undefined;
    },
    20_000,
    `the device ${status}`,
  );
}

test('a policy that breaks when the inventory changes and recovers after remediation, through simulated agents', async () => {
  // The fleet is mixed (windows, linux, macos, linux); the policy watches the first linux machine.
  const agent = simulation.agents[1]!;
  const deviceId = agent.deviceId!;
  const catalog = (await api.post('/software/catalog', { name: 'firefox', vendor: 'Mozilla', category: 'browser' })).body;
  const version = (await api.post(`/software/catalog/${catalog.id}/versions`, { version: '128.0', installers: [{ osType: 'linux', url: 'https://downloads.example.test/firefox.tar.bz2', sha256: 'ab'.repeat(32) }] })).body;
  agent.installSoftware('firefox', '127.5');
  await agent.sendInventory();
  const created = await api.post('/policies', {
    name: 'Linux baseline',
    targets: { deviceIds: [deviceId] },
    rules: [
      { type: 'software_required', name: 'Firefox', minVersion: '120', remediation: { type: 'install', catalogId: catalog.id, versionId: version.id } },
      { type: 'software_forbidden', name: 'bittorrent*', remediation: { type: 'uninstall' } },
      { type: 'service_running', name: 'sshd', remediation: { type: 'start_service' } },
      { type: 'os_version_min', osType: 'linux', version: '22.04' },
    ],
  });
  expect(created.status).toBe(201);
  const policyId = created.body.id;
  expect((await api.post(`/policies/${policyId}/activate`)).status).toBe(200);
  // The agent answers the service check on its next heartbeat.
  expect(await settled(policyId, deviceId, 'compliant')).toEqual([]);

  // The machine changes: firefox goes, a torrent client arrives, sshd stops; its next inventory says so.
  agent.removeSoftware('firefox');
  agent.installSoftware('BitTorrent Web', '1.2');
  agent.setService('sshd', false);
  await agent.sendInventory();
  expect(await settled(policyId, deviceId, 'non_compliant')).toEqual(['software_required', 'software_forbidden', 'service_running']);
  await eventually(async () => (await sql(app, `select 1 from outbox_event where type = 'policy.violation' and org_id = ?`, [orgId])).length === 1, 10_000, 'policy.violation');

  const remediated = await api.post(`/policies/${policyId}/remediate`, {});
  expect(remediated.status).toBe(202);
  expect(remediated.body.commands.map((c: any) => [c.ruleIndex, c.type])).toEqual([
    [0, 'install_software'],
    [1, 'uninstall_software'],
    [2, 'start_service'],
  ]);
  // The agent runs them, reports its software, and the completed commands re-evaluate the device.
  expect(await settled(policyId, deviceId, 'compliant')).toEqual([]);
  await eventually(async () => (await sql(app, `select data from outbox_event where type = 'policy.compliant' and org_id = ?`, [orgId])).length === 1, 10_000, 'policy.compliant');
  const software = (await api.get(`/software/inventory/${deviceId}`)).body.data.map((s: any) => `${s.name} ${s.version}`);
  expect(software).toContain('firefox 128.0');
  expect(software.some((s: string) => s.startsWith('BitTorrent'))).toBe(false);
  const stats = (await api.get('/policies/compliance/stats')).body;
  expect(stats).toMatchObject({ policies: 1, activePolicies: 1, devices: 1, compliant: 1, compliancePercent: 100 });
});
