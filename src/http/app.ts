import { randomUUID } from 'node:crypto';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import cors from 'cors';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import helmet from 'helmet';
import { apiRouter } from '../../rest/index.js';
import type { HotRoute } from '../../rest/router.js';
import { domainRouters } from '../domains.js';
import { AppError, badRequest } from '../errors.js';
import type { Runtime } from '../runtime.js';
import { errorAnswer } from './error-answer.js';
import { healthRoutes, liveness } from './health.js';
import { OpenApiRegistry } from './openapi.js';
import { consumeCallerBudget } from './rate-limit.js';
import { contextFor } from './request-context.js';

/** A request as the front of the chain sees it: Express's, or the raw one the liveness path answers. */
type Incoming = IncomingMessage & { requestId?: string };

/**
 * The HTTP application: request ids and logs, security headers, CORS allow-list, body limits,
 * health, the REST API under /api/v1 and (mounted by the caller) GraphQL, on Express. Every error
 * leaves through `sendError` in the one envelope. `GET /health`, the request liveness probes and load
 * balancers send most, is answered in front of Express with the same request id, log line, headers
 * and body (Express alone costs several times what the answer does); anything else goes to Express.
 */
export function createHttpApp(runtime: Runtime, graphql: RequestHandler): RequestListener {
  const { config } = runtime;
  const app = express();
  app.disable('x-powered-by');
  // No weak ETag (a SHA-1 of every JSON body): API answers are per caller and nothing sends If-None-Match.
  app.set('etag', false);
  // Proxies are trusted only as configured: by default the socket address is the client's.
  app.set('trust proxy', config.trustProxy);
  app.set('query parser', 'extended');

  /** The request id (a well-formed incoming X-Request-Id, else a new one) and the request's log line once answered. */
  const stamp = (req: Incoming, res: ServerResponse) => {
    const incoming = req.headers['x-request-id'];
    const requestId = typeof incoming === 'string' && /^[\w.-]{1,128}$/.test(incoming) ? incoming : randomUUID();
    req.requestId = requestId;
    res.setHeader('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    const path = (req.url ?? '').split('?')[0];
    res.on('finish', () => {
      // Written asynchronously (src/logger.ts): the answer never waits for its log line.
      runtime.log.info({ reqId: requestId, method: req.method, path, status: res.statusCode, ms: Number(process.hrtime.bigint() - started) / 1e6 }, 'request');
    });
  };
  const securityHeaders = fixedHeaders(
    helmet({
      // Helmet's policy everywhere: the only page, the GraphQL explorer (outside production), loads its
      // scripts, styles and connections from this origin. A developer's server is plain http, whose
      // same-origin assets must not be upgraded to https.
      contentSecurityPolicy: config.isProduction ? undefined : { directives: { upgradeInsecureRequests: null } },
      crossOriginEmbedderPolicy: false,
    }),
  );
  const corsHeaders = cors({
    origin: (origin, callback) => callback(null, !origin || config.corsOrigins.includes(origin) || config.corsOrigins.includes('*')),
    credentials: true,
    exposedHeaders: ['X-Request-Id'],
  });

  app.use((req, res, next) => {
    stamp(req, res);
    next();
  });
  app.use(securityHeaders);
  app.use(corsHeaders);

  app.use(healthRoutes(runtime));
  const jsonBody = express.json({ limit: config.bodyLimit, verify: requireUtf8 });
  // Command results carry a script's output (each stream kept up to 1 MiB, longer cut): their route takes bigger bodies.
  const resultBody = express.json({ limit: AGENT_RESULT_BODY_LIMIT, verify: requireUtf8 });
  app.use((req, res, next) => (AGENT_RESULT_PATH.test(req.path) ? resultBody(req, res, next) : next()));
  app.use(jsonBody);
  app.use(express.urlencoded({ extended: false, limit: config.bodyLimit }));

  const openapi = new OpenApiRegistry();
  const { api, hot } = apiRouter(openapi, config.serviceVersion, domainRouters);
  app.use(
    '/api/v1',
    async (req, _res, next) => {
      req.ctx = await contextFor(runtime, req);
      await consumeCallerBudget(runtime, req.ctx.principal);
      next();
    },
    api,
  );
  app.use('/graphql', graphql);

  app.use((req, _res, next) => next(new AppError(404, 'NOT_FOUND', `Route ${req.method} ${req.path} not found`)));
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => sendError(runtime, req, res, error));

  const proceed = () => {};
  /** What every answer carries, set as Express's middlewares would: request id and log line, security and CORS headers. */
  const front = (req: Incoming, res: ServerResponse) => {
    stamp(req, res);
    // Both set their headers and go on synchronously (fixed headers; the CORS origin check is synchronous).
    securityHeaders(req as Request, res as Response, proceed);
    corsHeaders(req, res, proceed);
  };
  /** A hot route (rest/router.ts): a POST's JSON body read by the same parser, the caller by the same `contextFor`, then the route's own parsing, handler and envelope. */
  const serveHot = (route: HotRoute, params: Record<string, string>, req: Incoming, res: ServerResponse) => {
    front(req, res);
    const answer = async (body: unknown) => {
      const ctx = await contextFor(runtime, req);
      await consumeCallerBudget(runtime, ctx.principal);
      return route.answer(ctx, { body, query: {}, params }, req, res);
    };
    const respond = (served: Promise<{ status: number; body: unknown }>) =>
      served.then(
        (answered) => writeJson(res, answered.status, answered.body),
        (error: unknown) => sendError(runtime, req, res, error),
      );
    if (route.method === 'GET') return void respond(answer(undefined));
    jsonBody(req as Request, res as Response, (parseError?: unknown) => respond(parseError ? Promise.reject(parseError) : answer((req as Request).body)));
  };
  return (req, res) => {
    const url = req.url ?? '';
    if (req.method === 'GET' && url === '/health') {
      front(req, res);
      return void writeJson(res, 200, liveness(runtime));
    }
    // Without a query string, and a POST only with a JSON body: anything else takes Express's path, whose parsers and answers the hot one mirrors.
    const hotShaped = !url.includes('?') && (req.method === 'GET' || (req.method === 'POST' && /^application\/json\b/i.test(req.headers['content-type'] ?? '')));
    if (hotShaped) {
      for (const route of hot) {
        const params = route.method === req.method ? route.match(url) : null;
        if (params) return serveHot(route, params, req, res);
      }
    }
    app(req, res);
  };
}

function writeJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text) }).end(text);
}

/**
 * A middleware that sets the same headers on every response (helmet's, as configured here: no
 * function-valued directives), run once at start-up against a recording response; each request then
 * gets the recorded headers in one pass instead of a dozen nested middlewares.
 */
function fixedHeaders(middleware: RequestHandler): RequestHandler {
  const set: [string, string | number | readonly string[]][] = [];
  const removed: string[] = [];
  let failed: unknown = null;
  let called = false;
  const recorder = {
    setHeader: (name: string, value: string | number | readonly string[]) => void set.push([name, value]),
    removeHeader: (name: string) => void removed.push(name),
  };
  void middleware({ headers: {}, method: 'GET', url: '/' } as Request, recorder as unknown as Response, (error?: unknown) => {
    called = true;
    failed = error ?? null;
  });
  if (!called || failed) throw new Error(`fixedHeaders: the middleware did not finish synchronously${failed ? `: ${String(failed)}` : ''}`);
  return (_req, res, next) => {
    for (const name of removed) res.removeHeader(name);
    for (const [name, value] of set) res.setHeader(name, value);
    next();
  };
}

/** The agent's command-result route: outputs up to a few MiB (the service keeps each stream's first MiB). */
const AGENT_RESULT_PATH = /^\/api\/v1\/agents\/[^/]+\/commands\/[^/]+\/result$/;
const AGENT_RESULT_BODY_LIMIT = '8mb';

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

/** The JSON parser would swap invalid UTF-8 for U+FFFD and go on: refused instead (body-parser keeps the AppError's 400). */
function requireUtf8(_req: IncomingMessage, _res: unknown, body: Buffer, encoding: string): void {
  if (!/^utf-?8$/i.test(encoding)) return;
  try {
    strictUtf8.decode(body);
  } catch {
    throw badRequest('Request body is not valid UTF-8');
  }
}

/** The error envelope, for Express's answers and the hot path's alike. */
export function sendError(runtime: Runtime, req: Incoming, res: ServerResponse, error: unknown): void {
  const appError = errorAnswer(runtime, req, res, error);
  if (appError) writeJson(res, appError.status, appError.toBody());
}
