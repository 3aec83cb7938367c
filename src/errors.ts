import { DriverException, ForeignKeyConstraintViolationException, NotFoundError, UniqueConstraintViolationException } from '@mikro-orm/core';
import { ZodError } from 'zod';

/** The one error envelope of the API: REST bodies are `{code, message, details?}`, GraphQL carries `code` in extensions. */
export interface ErrorBody {
  code: string;
  message: string;
  details?: unknown;
}

export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details?: unknown,
  ) {
    super(message);
    this.name = 'AppError';
  }

  toBody(): ErrorBody {
    return this.details === undefined ? { code: this.code, message: this.message } : { code: this.code, message: this.message, details: this.details };
  }
}

export const badRequest = (message: string, details?: unknown) => new AppError(400, 'VALIDATION_ERROR', message, details);
export const unauthenticated = (message = 'Authentication required') => new AppError(401, 'UNAUTHENTICATED', message);
export const forbidden = (message = 'You do not have permission to perform this action') => new AppError(403, 'FORBIDDEN', message);
export const mfaRequired = () => new AppError(403, 'MFA_REQUIRED', 'Multi-factor authentication is required for this action');
export const notFound = (resource = 'Resource') => new AppError(404, 'NOT_FOUND', `${resource} not found`);
export const conflict = (message: string, details?: unknown) => new AppError(409, 'CONFLICT', message, details);
export const rateLimited = (message = 'Too many requests, try again later', retryAfterSeconds?: number) =>
  new AppError(429, 'RATE_LIMITED', message, retryAfterSeconds === undefined ? undefined : { retryAfterSeconds });
export const internalError = () => new AppError(500, 'INTERNAL_ERROR', 'Internal server error');
/** How long a caller (an agent included) is told to wait before trying again while the database is unreachable. */
export const UNAVAILABLE_RETRY_AFTER_SECONDS = 5;
export const serviceUnavailable = (message = 'The service is temporarily unavailable, try again later', retryAfterSeconds = UNAVAILABLE_RETRY_AFTER_SECONDS) =>
  new AppError(503, 'SERVICE_UNAVAILABLE', message, { retryAfterSeconds });

export function validationDetails(error: ZodError): { path: string; message: string }[] {
  return error.issues.map((issue) => ({ path: issue.path.join('.'), message: issue.message }));
}

export function fromZodError(error: ZodError): AppError {
  const details = validationDetails(error);
  const first = details[0];
  const message = first ? (first.path ? `${first.path}: ${first.message}` : first.message) : 'Invalid input';
  return badRequest(message, details);
}

/**
 * Maps anything thrown to the envelope. Unknown errors become a bare 500 (no stack, no SQL); the
 * caller logs the original. Returns `expose: false` for those so the adapter knows to log them.
 */
export function toAppError(error: unknown): { error: AppError; expected: boolean } {
  if (error instanceof AppError) return { error, expected: error.status < 500 };
  if (error instanceof ZodError) return { error: fromZodError(error), expected: true };
  if (error instanceof UniqueConstraintViolationException) return { error: conflict('A record with these values already exists'), expected: true };
  if (error instanceof ForeignKeyConstraintViolationException) return { error: conflict('The record is referenced by, or references, another record'), expected: true };
  if (error instanceof NotFoundError) return { error: notFound(), expected: true };
  if (isHttpParserError(error)) {
    if (error.type === 'entity.parse.failed') return { error: badRequest('Malformed JSON in request body'), expected: true };
    if (error.type === 'entity.too.large') return { error: new AppError(413, 'PAYLOAD_TOO_LARGE', 'Request body is too large'), expected: true };
    return { error: badRequest(error.message), expected: true };
  }
  if (error instanceof DriverException && (error as DriverException & { code?: string }).code === '22P02') {
    return { error: badRequest('Malformed identifier'), expected: true };
  }
  // Logged (unexpected), but answered as what it is: the database is out of reach for now, not the request at fault.
  if (isConnectionError(error)) return { error: serviceUnavailable(), expected: false };
  return { error: internalError(), expected: false };
}

/** Node's socket errors when the database's host refuses, drops or never answers a connection. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT']);
/** PostgreSQL's: shut down by an administrator, crash shutdown, cannot connect now (starting or stopping), too many connections. */
const SERVER_CODES = new Set(['57P01', '57P02', '57P03', '53300']);
/** pg's and the pool's own words for a connection lost or never obtained (they carry no code). */
const CONNECTION_MESSAGES = /Connection terminated|connection error and is not queryable|Timeout acquiring a connection|Client was closed and is not queryable|Connection ended unexpectedly/;

/**
 * Whether the error says the database cannot be reached (refused, dropped, shut down, the pool timed
 * out) rather than that a statement failed: the request may succeed once it is back, so it answers 503.
 * MikroORM and knex wrap the driver's error (copying its `code`, or as `cause`), Node wraps several
 * address attempts in an AggregateError: each layer is looked at.
 */
export function isConnectionError(error: unknown, depth = 0): boolean {
  if (typeof error !== 'object' || error === null || depth > 5) return false;
  const { code, message, cause, errors, name } = error as { code?: unknown; message?: unknown; cause?: unknown; errors?: unknown; name?: unknown };
  if (name === 'ConnectionException' || name === 'KnexTimeoutError') return true;
  if (typeof code === 'string' && (SOCKET_CODES.has(code) || SERVER_CODES.has(code) || /^08[0-9A-Z]{3}$/.test(code))) return true;
  if (typeof message === 'string' && CONNECTION_MESSAGES.test(message)) return true;
  if (Array.isArray(errors) && errors.some((inner) => isConnectionError(inner, depth + 1))) return true;
  return isConnectionError(cause, depth + 1);
}

/** body-parser's errors: typed ones, and those it passes on from zlib (a corrupt compressed body) with only a 4xx status to expose. */
function isHttpParserError(error: unknown): error is { type?: string; message: string; status: number } {
  if (typeof error !== 'object' || error === null) return false;
  const { type, status, expose } = error as { type?: unknown; status?: unknown; expose?: unknown };
  return typeof status === 'number' && (typeof type === 'string' || (expose === true && status >= 400 && status < 500));
}
