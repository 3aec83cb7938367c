import WebSocket from 'ws';
import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import { agentCall, enroll, fleet } from './support/devices.js';
import { buildUser } from './support/factories.js';

// Principal kinds (src/auth): an agent's token is accepted only by the agent routes, a user's only
// by the others, and the audit names the agent as the actor of what it did.

/** An agent channel upgrade: its HTTP status when refused, 101 when opened (then closed). */
function upgrade(app: TestApp, agentId: string, authorization: string): Promise<number> {
  const ws = new WebSocket(`${app.url.replace('http', 'ws')}/api/v1/agents/${agentId}/ws`, { headers: { authorization } });
  return new Promise((resolve) => {
    ws.once('open', () => {
      ws.close();
      resolve(101);
    });
    ws.once('unexpected-response', (_req, res) => resolve(res.statusCode!));
    ws.once('error', () => {});
  });
}

const heartbeatBody = { agentVersion: '1.0.0' };

describe('principal kinds', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await createTestApp();
  });
  afterAll(() => app.stop());

  test("an agent token cannot call user routes or GraphQL (401), and a user's token cannot call agent routes (401)", async () => {
    const { tech, key } = await fleet(app);
    const agent = await enroll(app, key);
    const asAgent = { authorization: `Bearer ${agent.authToken}` };
    const devices = await rest(app).get('/devices', asAgent);
    expect([devices.status, devices.body.code]).toEqual([401, 'UNAUTHENTICATED']);
    const me = await rest(app).get('/users/me', asAgent);
    expect(me.status).toBe(401);
    const overGraphql = await gql(app, { token: agent.authToken }, '{ me { id } }');
    expect(JSON.stringify(overGraphql.body)).toContain('UNAUTHENTICATED');

    for (const path of ['/heartbeat', '/inventory', '/update-status']) {
      const res = await agentCall(app, { agentId: agent.agentId, authToken: tech.token }, path, path === '/update-status' ? { state: 'started', toVersion: '2.0.0' } : path === '/heartbeat' ? heartbeatBody : {});
      expect([path, res.status, res.body.message]).toEqual([path, 401, 'Invalid agent credentials']);
    }
    expect(await upgrade(app, agent.agentId, `Bearer ${tech.token}`)).toBe(401);
    // The agent's own token still works on its routes.
    expect((await agentCall(app, agent, '/heartbeat', heartbeatBody)).status).toBe(200);
  });

  test("an agent's token answers only for its own agent id", async () => {
    const { key } = await fleet(app);
    const mine = await enroll(app, key);
    const theirs = await enroll(app, key);
    const res = await agentCall(app, { agentId: theirs.agentId, authToken: mine.authToken }, '/heartbeat', heartbeatBody);
    expect(res.status).toBe(401);
    expect(await upgrade(app, theirs.agentId, `Bearer ${mine.authToken}`)).toBe(401);
  });

  test('a revoked agent token (device decommissioned, or enrolled again) is refused on the next heartbeat and channel connect', async () => {
    const { api, key } = await fleet(app, { user: { can: ['devices:read', 'devices:write', 'devices:delete'] } });
    const doomed = await enroll(app, key);
    expect((await agentCall(app, doomed, '/heartbeat', heartbeatBody)).status).toBe(200);
    expect(await upgrade(app, doomed.agentId, `Bearer ${doomed.authToken}`)).toBe(101);
    expect((await api.delete(`/devices/${doomed.deviceId}`)).status).toBe(204);
    expect((await agentCall(app, doomed, '/heartbeat', heartbeatBody)).status).toBe(401);
    expect(await upgrade(app, doomed.agentId, `Bearer ${doomed.authToken}`)).toBe(401);

    const first = await enroll(app, key, 'replaced', { machineId: `m-${doomed.agentId}` });
    expect((await agentCall(app, first, '/heartbeat', heartbeatBody)).status).toBe(200);
    const second = await enroll(app, key, 'replaced', { machineId: `m-${doomed.agentId}` }, first.authToken);
    expect(second.deviceId).toBe(first.deviceId);
    expect((await agentCall(app, first, '/heartbeat', heartbeatBody)).status).toBe(401);
    expect(await upgrade(app, first.agentId, `Bearer ${first.authToken}`)).toBe(401);
    expect((await agentCall(app, second, '/heartbeat', heartbeatBody)).status).toBe(200);
  });

  test("the audit row of an agent's enrollment names the agent (actorType agent, actorId its device)", async () => {
    const { org, key } = await fleet(app);
    const agent = await enroll(app, key);
    const auditor = await buildUser(app, { orgId: org.id, can: ['audit:read'] });
    const rows = await rest(app, auditor.as).get(`/audit?action=device.enroll&resourceId=${agent.deviceId}`);
    expect(rows.status).toBe(200);
    expect(rows.body.data).toEqual([expect.objectContaining({ actorType: 'agent', actorId: agent.deviceId, action: 'device.enroll' })]);
    const byActor = await rest(app, auditor.as).get(`/audit?actorType=agent&actorId=${agent.deviceId}`);
    expect(byActor.body.pagination.total).toBe(1);
  });
});
