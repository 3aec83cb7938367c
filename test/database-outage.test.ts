import WebSocket from 'ws';
import { createTestApp, type TestApp } from './support/app.js';
import { gql, rest } from './support/clients.js';
import { createTestDatabase } from './support/database.js';
import { eventually } from './support/eventually.js';
import { agentCall, enroll, fleet, type EnrolledAgent } from './support/devices.js';
import { startTcpProxy, type TcpProxy } from './support/tcp-proxy.js';

/**
 * The database goes away under a running instance (its connections dropped, new ones refused, as when
 * the server stops) and comes back: meanwhile people, GraphQL clients and agents are told 503
 * SERVICE_UNAVAILABLE with Retry-After (try again later), not 500 (something is broken); then it serves again.
 */

let db: { url: string; drop(): Promise<void> };
let proxy: TcpProxy;
let app: TestApp;
beforeAll(async () => {
  db = await createTestDatabase();
  proxy = await startTcpProxy(db.url);
  app = await createTestApp({ databaseUrl: proxy.url });
});
afterAll(async () => {
  await proxy?.restore().catch(() => {});
  await app?.stop();
  await proxy?.close();
  await db?.drop();
});

/** How a channel upgrade is answered: its status and Retry-After when refused, 101 when it opens. */
function upgrade(agent: EnrolledAgent): Promise<{ status: number; retryAfter: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(`${app.url.replace('http', 'ws')}/api/v1/agents/${agent.agentId}/ws`, { headers: { authorization: `Bearer ${agent.authToken}` } });
    ws.on('open', () => {
      ws.close();
      resolve({ status: 101, retryAfter: undefined, body: '' });
    });
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => (body += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, retryAfter: res.headers['retry-after'] as string | undefined, body }));
    });
    ws.on('error', reject);
  });
}

test('with the database gone, REST, GraphQL, the heartbeat and the agent channel answer 503 SERVICE_UNAVAILABLE with Retry-After; back, they serve again', async () => {
  const { tech, key } = await fleet(app);
  const agent = await enroll(app, key);
  const api = rest(app, tech.as);
  const devices = '{ devices(first: 5) { totalCount } }';
  expect((await api.get('/devices')).status).toBe(200);

  await proxy.cut();

  const listed = await api.get('/devices');
  expect([listed.status, listed.body, listed.headers.get('retry-after')]).toEqual([503, { code: 'SERVICE_UNAVAILABLE', message: expect.any(String), details: { retryAfterSeconds: 5 } }, '5']);
  const graphql = await gql(app, tech.as, devices);
  expect([graphql.status, graphql.body.errors?.[0]?.extensions?.code, graphql.headers.get('retry-after')]).toEqual([503, 'SERVICE_UNAVAILABLE', '5']);
  const beat = await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0' });
  expect([beat.status, beat.body.code, beat.headers.get('retry-after')]).toEqual([503, 'SERVICE_UNAVAILABLE', '5']);
  const channel = await upgrade(agent);
  expect([channel.status, JSON.parse(channel.body).code, channel.retryAfter]).toEqual([503, 'SERVICE_UNAVAILABLE', '5']);

  await proxy.restore();

  await eventually(async () => (await api.get('/devices')).status === 200, 15_000, 'REST to serve again');
  const again = await gql(app, tech.as, devices);
  expect([again.status, again.body.errors, again.body.data?.devices.totalCount]).toEqual([200, undefined, 1]);
  expect((await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0' })).status).toBe(200);
  expect((await upgrade(agent)).status).toBe(101);
});
