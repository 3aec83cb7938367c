import type { IncomingMessage } from 'node:http';
import express, { type Request } from 'express';
import { agentTokenHash } from '../auth/agent.js';
import { authenticate } from '../auth/authenticate.js';
import { RequestContext } from '../auth/context.js';
import type { Config } from '../config.js';
import { AppError, unauthenticated } from '../errors.js';
import type { Runtime } from '../runtime.js';
import { onePer } from '../memo.js';

/**
 * The request's context from its Bearer token or API key. Refused credentials do not fail the
 * request here: a stale token must not stop a public operation (login, refresh, SSO); the first
 * operation that needs a caller raises the refusal (`requirePrincipal`). An agent token is kept for
 * the agent routes, which verify it against their path's agent (src/auth/agent.ts); anything else
 * refuses it as no credential.
 */
export async function contextFor(runtime: Runtime, req: RawRequest): Promise<RequestContext> {
  const agentToken = agentTokenHash(req.headers.authorization);
  if (agentToken) return RequestContext.create(runtime, null, { ...clientMeta(runtime, req), agentTokenHash: agentToken, authError: unauthenticated() });
  const apiKey = req.headers['x-api-key'];
  try {
    const principal = await authenticate(runtime, { authorization: req.headers.authorization, apiKey: typeof apiKey === 'string' ? apiKey : null });
    return RequestContext.create(runtime, principal, clientMeta(runtime, req));
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    return RequestContext.create(runtime, null, { ...clientMeta(runtime, req), authError: error });
  }
}

/** A request as Express hands it over, or as it arrives (the hot path in front of Express, WebSocket upgrades). */
type RawRequest = IncomingMessage & { requestId?: string; originalUrl?: string };

/** The client's request id, address and user agent, from the raw request: Express's, the hot path's or a WebSocket upgrade's. */
export function clientMeta(runtime: Runtime, req: RawRequest) {
  return { requestId: req.requestId, ip: rawClientIp(runtime.config, req), userAgent: req.headers['user-agent'] ?? null };
}

/** An Express app that only answers `req.ip` under the configured TRUST_PROXY. */
const trustingApp = onePer((config: Config) => express().set('trust proxy', config.trustProxy));

/**
 * The client address of any request, routed by Express or not (the hot path, WebSocket upgrades): Express's own
 * `req.ip`, read through a view of the raw request under the same TRUST_PROXY setting as every other
 * request, so X-Forwarded-For cannot be believed on one path and ignored on another.
 */
export function rawClientIp(config: Config, req: IncomingMessage): string | null {
  const view = Object.create(trustingApp(config).request, { headers: { value: req.headers }, socket: { value: req.socket } }) as Request;
  return view.ip ?? null;
}
