import type { TestApp } from './app.js';
import { agentCall, enroll, fleet, type EnrolledAgent } from './devices.js';
import { buildUser, unique, type BuiltUser } from './factories.js';

/** The agent's patch report (the inventory's `patches` part); it must be taken whole. */
export async function reportPatches(app: TestApp, agent: EnrolledAgent, patches: unknown[]): Promise<void> {
  const res = await agentCall(app, agent, '/inventory', { patches });
  expect([res.status, res.body?.details]).toEqual([200, undefined]);
}

/** An organization with two enrolled devices, a technician (patches:*, the least seeded role that works on them) and a viewer. */
export async function patchedFleet(app: TestApp) {
  const f = await fleet(app);
  const viewer = await buildUser(app, { orgId: f.org.id, role: 'Organization Viewer' });
  const a = await enroll(app, f.key, `a-${unique()}`);
  const b = await enroll(app, f.key, `b-${unique()}`);
  return { ...f, viewer, a, b, tech: f.tech as BuiltUser };
}
