import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createClient } from 'graphql-ws';
import WebSocket from 'ws';
import { loadConfig } from '../src/config.js';
import { createTestApp, type TestApp } from './support/app.js';
import { rest } from './support/clients.js';
import { buildOrg, buildRole, buildUser, type BuiltUser } from './support/factories.js';

/** The test server listens on 127.0.0.1: the socket address every request arrives from. */
const SOCKET_IP = '127.0.0.1';

test('TRUST_PROXY takes a hop count or names/addresses/CIDRs; anything else, and `true`, stops start-up', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rmm-config-'));
  const trustProxy = (value?: string) => loadConfig({ DATA_DIR: dataDir, ...(value === undefined ? {} : { TRUST_PROXY: value }) }).trustProxy;
  expect(trustProxy()).toBe(false);
  expect(trustProxy('false')).toBe(false);
  expect(trustProxy('2')).toBe(2);
  expect(trustProxy('loopback')).toEqual(['loopback']);
  expect(trustProxy('loopback, 10.0.0.0/8,192.168.1.7 , fd00::/8, uniquelocal')).toEqual(['loopback', '10.0.0.0/8', '192.168.1.7', 'fd00::/8', 'uniquelocal']);
  for (const bad of ['true', 'everything', '10.0.0.0/33', 'fd00::/129', '10.0.0.0/8/1', 'loopback,proxy.example.com', '-1', ',']) {
    expect(() => trustProxy(bad)).toThrow(/TRUST_PROXY: must be a hop count or a comma-separated list/);
  }
});

async function failLogin(app: TestApp, forwardedFor: string) {
  return rest(app).post('/auth/login', { email: `spray-${forwardedFor}@example.test`, password: 'guess' }, { 'x-forwarded-for': forwardedFor });
}

/** A webhook list as a user without organizations:read is denied and audited with the request's client address. */
async function deniedFrom(app: TestApp, user: BuiltUser, forwardedFor: { rest: string; graphql: string; ws: string }): Promise<string[]> {
  expect((await rest(app, user.as).get('/webhooks', { 'x-forwarded-for': forwardedFor.rest })).status).toBe(403);
  const overHttp = await fetch(`${app.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${user.token}`, 'x-forwarded-for': forwardedFor.graphql },
    body: JSON.stringify({ query: '{ webhooks { data { id } } }' }),
  });
  expect(((await overHttp.json()) as { errors: { extensions: { code: string } }[] }).errors[0]!.extensions.code).toBe('FORBIDDEN');

  class ForwardedWebSocket extends WebSocket {
    constructor(address: string, protocols?: string | string[]) {
      super(address, protocols, { headers: { 'x-forwarded-for': forwardedFor.ws } });
    }
  }
  const client = createClient({ url: `${app.url.replace('http', 'ws')}/graphql`, webSocketImpl: ForwardedWebSocket, connectionParams: { authorization: `Bearer ${user.token}` } });
  try {
    const refusal = await new Promise<unknown>((resolve) => {
      // A refused subscription answers one result carrying the error.
      client.subscribe({ query: 'subscription { webhookDeliveryUpdated { id } }' }, { next: (result) => resolve(result.errors), error: resolve, complete: () => resolve('completed') });
    });
    expect(refusal).toEqual([expect.objectContaining({ message: 'You do not have permission to perform this action' })]);
  } finally {
    await client.dispose();
  }

  const audit = await rest(app, user.as).get(`/audit?action=access.denied&actorId=${user.user.id}`);
  expect(audit.status).toBe(200);
  return (audit.body.data as { ip: string }[]).map((row) => row.ip).sort();
}

async function unprivileged(app: TestApp): Promise<BuiltUser> {
  const org = await buildOrg(app);
  const role = await buildRole(app, { scope: 'organization', orgId: org.id, permissions: ['audit:read'] });
  return buildUser(app, { orgId: org.id, role: role.id });
}

const FORWARDED = { rest: '198.51.100.1', graphql: '198.51.100.2', ws: '198.51.100.3' };

describe('default: no proxy is trusted, the socket address is the client', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await createTestApp({ env: { LOGIN_MAX_FAILURES_PER_IP: '3', SSO_RATE_LIMIT_PER_MINUTE: '2' } });
  });
  afterAll(async () => {
    await app.stop();
  });

  test('a login flood with a new X-Forwarded-For on every attempt still hits the per-IP limit', async () => {
    for (let i = 1; i <= 3; i++) expect((await failLogin(app, `203.0.113.${i}`)).status).toBe(401);
    const throttled = await failLogin(app, '203.0.113.4');
    expect(throttled.status).toBe(429);
    expect(throttled.body).toMatchObject({ code: 'RATE_LIMITED', message: 'Too many failed login attempts' });
  });

  test('the SSO rate limiter counts the socket address, whatever X-Forwarded-For says', async () => {
    const route = '/sso/exchange';
    // A window boundary may fall between the requests; then the next window is used.
    let statuses: number[] = [];
    for (let attempt = 0; attempt < 2 && !statuses.includes(429); attempt++) {
      statuses = [];
      for (let i = 1; i <= 3; i++) statuses.push((await rest(app).post(route, { code: 'x' }, { 'x-forwarded-for': `192.0.2.${attempt * 10 + i}` })).status);
    }
    expect(statuses.at(-1)).toBe(429);
  });

  test('REST, GraphQL over HTTP and graphql-ws all record the socket address', async () => {
    expect(await deniedFrom(app, await unprivileged(app), FORWARDED)).toEqual([SOCKET_IP, SOCKET_IP, SOCKET_IP]);
  });
});

describe('TRUST_PROXY=loopback: X-Forwarded-For from the local proxy is honoured', () => {
  let app: TestApp;
  beforeAll(async () => {
    app = await createTestApp({ env: { TRUST_PROXY: 'loopback', LOGIN_MAX_FAILURES_PER_IP: '3' } });
  });
  afterAll(async () => {
    await app.stop();
  });

  test('each forwarded client address has its own login budget', async () => {
    for (let i = 0; i < 3; i++) expect((await failLogin(app, '203.0.113.7')).status).toBe(401);
    expect((await failLogin(app, '203.0.113.7')).status).toBe(429);
    expect((await failLogin(app, '203.0.113.8')).status).toBe(401);
  });

  test('REST, GraphQL over HTTP and graphql-ws all record the forwarded address', async () => {
    expect(await deniedFrom(app, await unprivileged(app), FORWARDED)).toEqual([FORWARDED.rest, FORWARDED.graphql, FORWARDED.ws]);
  });
});
