import { startSimulation, type Simulation } from '../src/scripts/simulator.js';
import { createTestApp, type TestApp } from './support/app.js';
import { fleet } from './support/devices.js';
import { eventually } from './support/eventually.js';
import { unique } from './support/factories.js';

let app: TestApp;
let simulation: Simulation | null = null;

beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => {
  await simulation?.stop();
  await app.stop();
});

const installer = (osType: string) => ({ osType, url: `https://downloads.example.test/${osType}/editor`, sha256: 'cd'.repeat(32), silentArgs: '/S' });

test('a mixed fleet of simulated agents runs deployments to their end: installs (one machine failing, macOS skipped) and an uninstall, the inventory following', async () => {
  const { api, key } = await fleet(app);
  // windows, linux, macos, linux (the simulator's mix); the second linux machine fails its installs.
  simulation = await startSimulation({ url: app.url, enrollmentKey: key, devices: 4, intervalSeconds: 0.2, jitterSeconds: 0.1, prefix: `sw-${unique()}` });
  const [win, lin, mac, broken] = simulation.agents;
  broken!.failInstalls = true;
  const name = `Editor ${unique()}`;
  const entry = await api.post('/software/catalog', { name, vendor: 'Example', category: 'utility' });
  const version = await api.post(`/software/catalog/${entry.body.id}/versions`, { version: '3.0.1', installers: [installer('windows'), installer('linux')] });
  expect([entry.status, version.status]).toEqual([201, 201]);

  const deploy = async (action: string, agents: Simulation['agents']) => {
    const res = await api.post('/software/deployments', { catalogId: entry.body.id, versionId: version.body.id, action, targets: { deviceIds: agents.map((a) => a.deviceId) } });
    expect([res.status, res.body.message]).toEqual([201, undefined]);
    return eventually(
      async () => {
        const current = (await api.get(`/software/deployments/${res.body.id}`)).body;
        return ['completed', 'partial', 'failed'].includes(current.status) ? current : undefined;
      },
      30_000,
      `the ${action} deployment to end`,
    );
  };

  const install = await deploy('install', [win!, lin!, mac!, broken!]);
  expect(install).toMatchObject({ status: 'partial', counts: { succeeded: 2, failed: 1, skipped: 1, pending: 0, downloading: 0, installing: 0, cancelled: 0, total: 4 } });
  const results = (await api.get(`/software/deployments/${install.id}/results`)).body.data as { deviceId: string; status: string; exitCode: number | null; error: string | null; reason: string | null }[];
  const byDevice = new Map(results.map((r) => [r.deviceId, r]));
  expect(byDevice.get(win!.deviceId!)).toMatchObject({ status: 'succeeded', exitCode: 0 });
  expect(byDevice.get(lin!.deviceId!)).toMatchObject({ status: 'succeeded', exitCode: 0 });
  expect(byDevice.get(mac!.deviceId!)).toMatchObject({ status: 'skipped', reason: `${name} 3.0.1 has no installer for macos` });
  expect(byDevice.get(broken!.deviceId!)).toMatchObject({ status: 'failed', exitCode: 1603, error: `Fatal error during installation of ${name}` });

  // The agent reports the installed package from then on (a fresh inventory replaces the list).
  const refresh = await api.post(`/devices/${lin!.deviceId}/commands`, { type: 'refresh_inventory' });
  expect(refresh.status).toBe(201);
  const softwareOf = async (deviceId: string) => (await api.get(`/software/inventory/${deviceId}?limit=500`)).body.data as { name: string; version: string | null; vendor: string | null }[];
  // The install put the package in the list at once (no vendor known); the agent's fresh report names its vendor.
  await eventually(async () => (await softwareOf(lin!.deviceId!)).some((s) => s.name === name && s.version === '3.0.1' && s.vendor === 'Simulated'), 30_000, 'the inventory refresh');

  const uninstall = await deploy('uninstall', [lin!]);
  expect(uninstall).toMatchObject({ action: 'uninstall', status: 'completed', counts: { succeeded: 1, total: 1 } });
  // The agent's next report no longer lists it (one it sent before the uninstall may still land first).
  // (409: the earlier refresh is still open, and its report is yet to come.)
  expect([201, 409]).toContain((await api.post(`/devices/${lin!.deviceId}/commands`, { type: 'refresh_inventory' })).status);
  await eventually(async () => !(await softwareOf(lin!.deviceId!)).some((s) => s.name === name), 30_000, 'the uninstalled package gone from the inventory');

  broken!.failInstalls = false;
  const retry = await deploy('install', [broken!]);
  expect(retry).toMatchObject({ status: 'completed', counts: { succeeded: 1, total: 1 } });
});
