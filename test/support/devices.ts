import type { TestApp } from './app.js';
import { rest } from './clients.js';
import { buildOrg, buildUser, unique, type RoleChoice } from './factories.js';

/** What `POST /agents/enroll` answers. */
export interface EnrolledAgent {
  deviceId: string;
  agentId: string;
  authToken: string;
  orgId: string;
  siteId: string | null;
  config: { heartbeatIntervalSeconds: number };
}

/** The machine an agent reports when it enrolls; `extra` adds or overrides fields (machineId, agentVersion, …). */
export const agentInfo = (hostname: string, extra: Record<string, unknown> = {}) => ({
  hostname,
  osType: 'linux',
  osVersion: 'Debian 12',
  architecture: 'amd64',
  agentVersion: '1.0.0',
  ...extra,
});

/**
 * An organization, a user who works on its devices (by default an Organization Technician, the least
 * seeded role that does; `user` picks another role or exact permissions) and an enrollment key that
 * user created over REST.
 */
export async function fleet(app: TestApp, options: { user?: RoleChoice; keyName?: string } = {}) {
  const org = await buildOrg(app);
  const tech = await buildUser(app, { orgId: org.id, ...(options.user ?? { role: 'Organization Technician' }) });
  const api = rest(app, tech.as);
  const key = await api.post('/enrollment-keys', { name: options.keyName ?? 'Rollout' });
  expect(key.status).toBe(201);
  return { org, tech, api, key: key.body.key as string, keyId: key.body.id as string };
}

/** Enrolls an agent with `key` (must succeed); the hostname is random unless given; `previousToken`: the live agent's token, to enroll its machine again. */
export async function enroll(app: TestApp, key: string, hostname = `host-${unique()}`, extra: Record<string, unknown> = {}, previousToken?: string): Promise<EnrolledAgent> {
  const res = await rest(app).post('/agents/enroll', { enrollmentKey: key, ...agentInfo(hostname, extra) }, previousToken ? { authorization: `Bearer ${previousToken}` } : {});
  expect([res.status, res.body?.message]).toEqual([201, undefined]);
  return res.body as EnrolledAgent;
}

/** A call to one of the agent's own routes (`/heartbeat`, `/inventory`, …) with its token. */
export const agentCall = (app: TestApp, agent: Pick<EnrolledAgent, 'agentId' | 'authToken'>, path: string, body: unknown) =>
  rest(app).post(`/agents/${agent.agentId}${path}`, body, { authorization: `Bearer ${agent.authToken}` });

/** A command as the agent receives it. */
export interface AgentCommand {
  id: string;
  type: string;
  payload: Record<string, any>;
}

/** The agent's heartbeat (must succeed), answering the commands handed to it. */
export async function heartbeatCommands(app: TestApp, agent: Pick<EnrolledAgent, 'agentId' | 'authToken'>): Promise<AgentCommand[]> {
  const res = await agentCall(app, agent, '/heartbeat', { agentVersion: '1.0.0' });
  expect(res.status).toBe(200);
  return res.body.commands;
}

/** The agent's result of one of its commands (`running`, or its end; must succeed). */
export async function reportCommandResult(app: TestApp, agent: Pick<EnrolledAgent, 'agentId' | 'authToken'>, commandId: string, body: Record<string, unknown>): Promise<void> {
  const res = await agentCall(app, agent, `/commands/${commandId}/result`, body);
  expect([res.status, res.body.message]).toEqual([200, undefined]);
}
