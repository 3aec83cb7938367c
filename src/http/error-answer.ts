import type { IncomingMessage, ServerResponse } from 'node:http';
import { type AppError, toAppError } from '../errors.js';
import type { Runtime } from '../runtime.js';

/**
 * What an error answers, whatever shape the body then takes (REST's envelope, GraphQL's `{errors}`):
 * the AppError, an unexpected one logged under the request id, with `Retry-After` set on a 429 and on
 * a 503 (the database out of reach: `toAppError` classifies it).
 * Null when the answer had already begun (it is ended as it is).
 */
export function errorAnswer(runtime: Runtime, req: IncomingMessage & { requestId?: string }, res: ServerResponse, error: unknown): AppError | null {
  const { error: appError, expected } = toAppError(error);
  if (!expected) runtime.log.error({ reqId: req.requestId, err: error instanceof Error ? { message: error.message, stack: error.stack } : error }, 'unhandled error');
  if (res.headersSent) {
    res.end();
    return null;
  }
  const retryAfter = (appError.details as { retryAfterSeconds?: number } | undefined)?.retryAfterSeconds;
  if ((appError.status === 429 || appError.status === 503) && retryAfter) res.setHeader('Retry-After', String(retryAfter));
  return appError;
}
