import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * Structured JSON logs on stdout; secrets never reach them (redacted paths below). Written
 * asynchronously: a request's log line is queued, not waited for (pino flushes the queue on exit).
 */
export function createLogger(level: string): Logger {
  return pino(
    {
      level,
      base: { service: 'rmm-service' },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: ['req.headers.authorization', 'req.headers["x-api-key"]', 'req.headers.cookie', '*.password', '*.secret', '*.clientSecret', '*.token'],
        censor: '[redacted]',
      },
    },
    pino.destination({ dest: 1, sync: false }),
  );
}
