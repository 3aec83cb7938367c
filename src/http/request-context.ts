import type { IncomingMessage } from 'node:http';
import express, { type Request } from 'express';
import { authenticate } from '../auth/authenticate.js';
import { RequestContext } from '../auth/context.js';
import type { Config } from '../config.js';
import { AppError } from '../errors.js';
import type { Runtime } from '../runtime.js';
import { onePer } from '../memo.js';

/**
 * The request's context from its Bearer token or API key. Refused credentials do not fail the
 * request here: a stale token must not stop a public operation (login, refresh, SSO); the first
 * operation that needs a caller raises the refusal (`requirePrincipal`).
 */
export async function contextFor(runtime: Runtime, req: Request): Promise<RequestContext> {
  // Agent routes are public or authenticated by the agent's own token (the agents service): read as a
  // user credential it could only fail, at the cost of two thrown errors per heartbeat.
  if (req.originalUrl.startsWith('/api/v1/agents/')) return publicContext(runtime, req);
  try {
    const principal = await authenticate(runtime, { authorization: req.get('authorization'), apiKey: req.get('x-api-key') });
    return RequestContext.create(runtime, principal, clientMeta(req));
  } catch (error) {
    if (!(error instanceof AppError)) throw error;
    return RequestContext.create(runtime, null, { ...clientMeta(req), authError: error });
  }
}

function clientMeta(req: Request) {
  return { requestId: req.requestId, ip: req.ip ?? null, userAgent: req.get('user-agent') ?? null };
}

/**
 * A context without a caller, for requests no user credential can serve (the agents', which their
 * own token authenticates in the service), from the raw request: Express's, the hot path's or a
 * WebSocket upgrade's.
 */
export function publicContext(runtime: Runtime, req: IncomingMessage & { requestId?: string }): RequestContext {
  return RequestContext.create(runtime, null, { requestId: req.requestId, ip: rawClientIp(runtime.config, req), userAgent: req.headers['user-agent'] ?? null });
}

/** An Express app that only answers `req.ip` under the configured TRUST_PROXY. */
const trustingApp = onePer((config: Config) => express().set('trust proxy', config.trustProxy));

/**
 * The client address of a request Express does not route (the hot path, WebSocket upgrades): Express's own
 * `req.ip`, read through a view of the raw request under the same TRUST_PROXY setting as every other
 * request, so X-Forwarded-For cannot be believed on one path and ignored on another.
 */
export function rawClientIp(config: Config, req: IncomingMessage): string | null {
  const view = Object.create(trustingApp(config).request, { headers: { value: req.headers }, socket: { value: req.socket } }) as Request;
  return view.ip ?? null;
}
