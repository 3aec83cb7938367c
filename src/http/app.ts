import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import cors from 'cors';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import helmet from 'helmet';
import { apiRouter } from '../../rest/index.js';
import { AppError, badRequest, toAppError } from '../errors.js';
import type { Runtime } from '../runtime.js';
import { healthRoutes } from './health.js';
import { OpenApiRegistry } from './openapi.js';
import { contextFor } from './request-context.js';

/**
 * The Express application: request ids and logs, security headers, CORS allow-list, body limits,
 * health, the REST API under /api/v1 and (mounted by the caller) GraphQL. Every error leaves
 * through `sendError` in the one envelope.
 */
export function createHttpApp(runtime: Runtime, graphql: RequestHandler): express.Express {
  const { config } = runtime;
  const app = express();
  app.disable('x-powered-by');
  // Proxies are trusted only as configured: by default the socket address is the client's.
  app.set('trust proxy', config.trustProxy);
  app.set('query parser', 'extended');

  app.use((req, res, next) => {
    const incoming = req.get('x-request-id');
    req.requestId = incoming && /^[\w.-]{1,128}$/.test(incoming) ? incoming : randomUUID();
    res.setHeader('X-Request-Id', req.requestId);
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      runtime.log.info(
        { reqId: req.requestId, method: req.method, path: req.originalUrl.split('?')[0], status: res.statusCode, ms: Number(process.hrtime.bigint() - started) / 1e6 },
        'request',
      );
    });
    next();
  });
  app.use(
    helmet({
      // GraphQL sandbox pages and the SSO hand-off need inline scripts only outside production.
      contentSecurityPolicy: config.isProduction ? undefined : false,
      crossOriginEmbedderPolicy: false,
    }),
  );
  app.use(
    cors({
      origin: (origin, callback) => callback(null, !origin || config.corsOrigins.includes(origin) || config.corsOrigins.includes('*')),
      credentials: true,
      exposedHeaders: ['X-Request-Id'],
    }),
  );

  app.use(healthRoutes(runtime));
  app.use(express.json({ limit: config.bodyLimit, verify: requireUtf8 }));
  app.use(express.urlencoded({ extended: false, limit: config.bodyLimit }));

  const openapi = new OpenApiRegistry();
  app.use(
    '/api/v1',
    async (req, _res, next) => {
      req.ctx = await contextFor(runtime, req);
      next();
    },
    apiRouter(openapi, config.serviceVersion),
  );
  app.use('/graphql', graphql);

  app.use((req, _res, next) => next(new AppError(404, 'NOT_FOUND', `Route ${req.method} ${req.path} not found`)));
  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => sendError(runtime, req, res, error));
  return app;
}

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

export function sendError(runtime: Runtime, req: Request, res: Response, error: unknown): void {
  const { error: appError, expected } = toAppError(error);
  if (!expected) runtime.log.error({ reqId: req.requestId, err: error instanceof Error ? { message: error.message, stack: error.stack } : error }, 'unhandled error');
  if (res.headersSent) {
    res.end();
    return;
  }
  const retryAfter = (appError.details as { retryAfterSeconds?: number } | undefined)?.retryAfterSeconds;
  if (appError.status === 429 && retryAfter) res.setHeader('Retry-After', String(retryAfter));
  res.status(appError.status).json(appError.toBody());
}
