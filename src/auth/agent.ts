import { lookupCoalescer } from '../db/coalesce.js';
import { statement } from '../db/prepared.js';
import { unauthenticated } from '../errors.js';
import { onePer } from '../memo.js';
import type { Runtime } from '../runtime.js';
import { randomToken, sha256Hex } from '../secrets.js';
import { RequestContext, type AgentClaim, type AgentIdentity, type Principal, type RequestMeta } from './context.js';

// Agents are principals of their own kind: an agent token (issued at enrollment, `agt_…`, never a
// JWT) names one device. The agent routes declare `auth: 'agent'` (rest/router.ts): the router binds
// the presented token to the path's agent (`claimAgent`), and the service verifies that claim, through
// `authenticateAgent` or, for the steady heartbeat, inside the statement that records it (`admitAgent`).

/** One message for every refusal (unknown agent, another device's token, a replaced or decommissioned device's): nothing learnt. */
export const INVALID_AGENT_TOKEN = 'Invalid agent credentials';

const AGENT_TOKEN_PREFIX = 'agt_';

export type AgentPrincipal = Extract<Principal, { kind: 'agent' }>;

/** A new agent token and the hash the device keeps (the token itself is shown once, in the enrollment's answer). */
export function issueAgentToken(): { token: string; tokenHash: string } {
  const token = `${AGENT_TOKEN_PREFIX}${randomToken(32)}`;
  return { token, tokenHash: sha256Hex(token) };
}

/** The SHA-256 of an `Authorization: Bearer` agent token, or null when the header carries none (or a user's token). */
export function agentTokenHash(authorization: string | null | undefined): string | null {
  const token = /^Bearer\s+(.+)$/i.exec(authorization ?? '')?.[1]?.trim();
  return token?.startsWith(AGENT_TOKEN_PREFIX) ? sha256Hex(token) : null;
}

/** Any agent token that authenticated a request was presented; refusals say only this. */
const invalidAgent = () => unauthenticated(INVALID_AGENT_TOKEN);

/** An agent route's request: refused (401) before anything else unless it presents an agent token. */
export function requireAgentToken(ctx: RequestContext): string {
  if (!ctx.meta.agentTokenHash) throw invalidAgent();
  return ctx.meta.agentTokenHash;
}

/** Binds the request's agent token to the route's agent (`:agentId`): the claim its service verifies. */
export function claimAgent(ctx: RequestContext, agentId: string): AgentClaim {
  const claim = { agentId, tokenHash: requireAgentToken(ctx) };
  ctx.claimAgent(claim);
  return claim;
}

/** A context for an agent's call outside a REST route (a message on its open channel), claiming that agent with that token. */
export function agentContext(runtime: Runtime, claim: AgentClaim, meta: Partial<RequestMeta>): RequestContext {
  const ctx = RequestContext.create(runtime, null, { ...meta, agentTokenHash: claim.tokenHash });
  ctx.claimAgent(claim);
  return ctx;
}

/** The request's unverified agent claim; a service reached without one (not an agent route) refuses, as with no credentials. */
export function agentClaim(ctx: RequestContext): AgentClaim {
  if (!ctx.agentClaim) throw invalidAgent();
  return ctx.agentClaim;
}

function agentPrincipal(identity: AgentIdentity): AgentPrincipal {
  return {
    kind: 'agent',
    id: identity.deviceId,
    agent: identity,
    userId: null,
    email: null,
    membershipId: null,
    scope: 'organization',
    partnerId: null,
    orgId: identity.orgId,
    orgAccess: 'selected',
    orgIds: [],
    siteIds: identity.siteId ? [identity.siteId] : [],
    roleId: null,
    // An agent acts on its own device through its own routes; the policy grants it nothing else.
    permissions: [],
    mfa: false,
    mfaForced: false,
    sessionId: null,
    sessionMethod: null,
  };
}

/**
 * The request acts as this agent from here on, and that is its access decision (the agent routes act
 * on the agent's own device only). `identity` must come from a verified row: the device whose token
 * hash matched the claim (the steady heartbeat's statement), or the device an enrollment key enrolled.
 */
export function admitAgent(ctx: RequestContext, identity: AgentIdentity): AgentPrincipal {
  const principal = agentPrincipal(identity);
  ctx.admitAgent(principal);
  ctx.mark.checked = true;
  ctx.mark.reason = 'agent protocol: the agent token authenticates';
  return principal;
}

/** Devices by agent id and token hash, for the claims of every request that arrived together: row `n` answers the n-th claim. */
const AGENT_DEVICES = statement(`select t.n, d.id, d.org_id, d.site_id
  from unnest(?::uuid[], ?::text[]) with ordinality as t(agent_id, token_hash, n)
  join device d on d.agent_id = t.agent_id and d.token_hash = t.token_hash and d.status <> 'decommissioned'`);

/** The agent lookups of this instance's concurrent requests, one statement for all that arrived together (src/db/coalesce.ts). */
const agentDevices = onePer((runtime: Runtime) =>
  lookupCoalescer<AgentClaim, { id: string; org_id: string; site_id: string | null }>(runtime.orm, AGENT_DEVICES, (claims) => [
    claims.map((c) => c.agentId),
    claims.map((c) => c.tokenHash),
  ]),
);

/**
 * Verifies the request's agent claim against the database (a statement sent after the request arrived,
 * so a token replaced or a device decommissioned before it is refused) and admits the agent. Nothing is
 * cached. Already admitted: answers that agent.
 */
export async function authenticateAgent(ctx: RequestContext): Promise<AgentPrincipal> {
  if (ctx.principal?.kind === 'agent') return ctx.principal;
  const claim = agentClaim(ctx);
  const row = await agentDevices(ctx.runtime).submit(claim);
  if (!row) throw invalidAgent();
  return admitAgent(ctx, { deviceId: row.id, agentId: claim.agentId, tokenHash: claim.tokenHash, orgId: row.org_id, siteId: row.site_id });
}
