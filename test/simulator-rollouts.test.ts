import { startSimulation, type Simulation } from '../src/scripts/simulator.js';
import { createTestApp, type TestApp } from './support/app.js';
import type { rest } from './support/clients.js';
import { fleet } from './support/devices.js';
import { eventually } from './support/eventually.js';
import { unique } from './support/factories.js';

let app: TestApp;
const running: Simulation[] = [];

beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => {
  await Promise.all(running.map((s) => s.stop()));
  await app.stop();
});

type Api = ReturnType<typeof rest>;

const viewOf = async (api: Api, id: string) => (await api.get(`/deployments/${id}`)).body;
const until = (api: Api, id: string, probe: (view: any) => boolean, what: string) =>
  eventually(async () => {
    const view = await viewOf(api, id);
    return probe(view) ? view : undefined;
  }, 20_000, what);

/** The install_software commands a device was ever given. */
const installsOf = async (api: Api, deviceId: string) => ((await api.get(`/devices/${deviceId}/commands?limit=100`)).body.data as { type: string; status: string }[]).filter((c) => c.type === 'install_software');

test('a mixed simulated fleet: a software rollout advances wave by wave, auto-pauses when a device fails, is retried, resumed and cancelled mid-way', async () => {
  const { api, key } = await fleet(app, { keyName: 'Rollouts' });
  const simulation = await startSimulation({ url: app.url, enrollmentKey: key, devices: 8, intervalSeconds: 0.2, jitterSeconds: 0.1, updateSeconds: 0.2, prefix: `rollout-${unique()}` });
  running.push(simulation);
  // The rollout's order is by device id: agents[i] is at position i.
  const agents = [...simulation.agents].sort((a, b) => (a.deviceId! < b.deviceId! ? -1 : 1));
  expect(new Set(agents.map((a) => a.deviceId)).size).toBe(8);

  const pkg = await api.post('/software/catalog', { name: `Agent tools ${unique()}`, vendor: 'Example', category: 'utility' });
  const installers = ['windows', 'macos', 'linux'].map((osType) => ({ osType, url: `https://downloads.example.test/${osType}/tools`, sha256: 'ef'.repeat(32) }));
  const version = await api.post(`/software/catalog/${pkg.body.id}/versions`, { version: '3.1.0', installers });
  expect(version.status).toBe(201);
  // The third wave's first device fails its install.
  agents[4]!.failing.add('install_software');

  const created = await api.post('/deployments', {
    name: 'Tools 3.1',
    type: 'software',
    payload: { catalogId: pkg.body.id, versionId: version.body.id },
    targets: { deviceIds: agents.map((a) => a.deviceId) },
    waves: [{ count: 2 }, { count: 2 }, { count: 2 }],
    failureThresholdPercent: 10,
  });
  expect(created.status).toBe(201);
  const id = created.body.id;
  expect((await api.post(`/deployments/${id}/initialize`)).body.waves.map((w: any) => w.size)).toEqual([2, 2, 2, 2]);
  expect((await api.post(`/deployments/${id}/start`)).body).toMatchObject({ status: 'running', currentWave: 1 });

  // Waves 1 and 2 complete on their own; wave 3's failure (1 of 6 started, over 10 %) pauses it.
  const paused = await until(api, id, (v) => v.status === 'paused', 'the failure threshold');
  expect(paused).toMatchObject({ pauseReason: 'failure_threshold', currentWave: 3 });
  expect(paused.waves.slice(0, 2).map((w: any) => [w.status, w.succeeded, w.failed])).toEqual([['completed', 2, 0], ['completed', 2, 0]]);
  // Wave 3's other device has succeeded, or its command was withdrawn before its agent took it (pending again).
  const wave3 = (await api.get(`/deployments/${id}/devices?wave=3`)).body.data;
  expect(wave3[0]).toMatchObject({ deviceId: agents[4]!.deviceId, status: 'failed', reason: 'the command ended failed' });
  expect(['succeeded', 'pending', 'running']).toContain(wave3[1].status);
  // No device of wave 4 started.
  for (const agent of agents.slice(6)) expect(await installsOf(api, agent.deviceId!)).toEqual([]);

  // The device is mended and retried: a new command, which succeeds; the rollout stays paused until resumed.
  agents[4]!.failing.delete('install_software');
  const retried = await api.post(`/deployments/${id}/devices/${agents[4]!.deviceId}/retry`);
  expect([retried.status, retried.body.commandId === wave3[0].commandId]).toEqual([202, false]);
  await eventually(async () => (await api.get(`/deployments/${id}/devices?wave=3`)).body.data[0].status === 'succeeded', 15_000, 'the retried device');
  expect((await viewOf(api, id)).status).toBe('paused');

  // Wave 4's machines go offline; resumed, wave 4 starts, and is cancelled before they take their commands.
  await Promise.all(agents.slice(6).map((agent) => agent.stop()));
  expect((await api.post(`/deployments/${id}/resume`)).body).toMatchObject({ status: 'running', pauseReason: null });
  await until(api, id, (v) => v.currentWave === 4, 'wave 4');
  const cancelled = await api.post(`/deployments/${id}/cancel`);
  expect([cancelled.status, cancelled.body.message, cancelled.body.status]).toEqual([200, undefined, 'cancelled']);
  const wave4 = (await api.get(`/deployments/${id}/devices?wave=4`)).body.data;
  expect(wave4.map((d: any) => d.status)).toEqual(['cancelled', 'cancelled']);
  // Their commands were withdrawn, never handed out.
  for (const device of wave4) expect((await installsOf(api, device.deviceId)).map((c) => c.status)).toEqual(['cancelled']);
  expect((await viewOf(api, id)).waves[3]).toMatchObject({ index: 4, size: 2, succeeded: 0, failed: 0 });
});

test('the simulator’s injected failures (`failing`) pause a script rollout on its failure threshold', async () => {
  const { api, key } = await fleet(app, { keyName: 'Failing' });
  const simulation = await startSimulation({ url: app.url, enrollmentKey: key, devices: 2, intervalSeconds: 0.2, jitterSeconds: 0.1, prefix: `failing-${unique()}`, failing: { types: ['run_script'], share: 1 } });
  running.push(simulation);
  const script = await api.post('/scripts', { name: `s-${unique()}`, language: 'python', content: 'print("ok")' });
  const created = await api.post('/deployments', { name: 'Failing', type: 'script', payload: { scriptId: script.body.id }, targets: { deviceIds: simulation.agents.map((a) => a.deviceId) }, waves: [{ count: 1 }] });
  await api.post(`/deployments/${created.body.id}/initialize`);
  await api.post(`/deployments/${created.body.id}/start`);
  const paused = await until(api, created.body.id, (v) => v.status === 'paused', 'the failure threshold');
  expect(paused).toMatchObject({ pauseReason: 'failure_threshold', currentWave: 1, waves: [{ failed: 1 }, { status: 'pending', failed: 0 }] });
});
