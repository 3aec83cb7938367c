import type { Request, RequestHandler } from 'express';
import { rateLimited } from '../errors.js';

/**
 * Fixed-window request counter, in memory: each server instance counts on its own, so N instances
 * allow up to N times the limit. Windows are aligned to the clock; every key's count resets together
 * at each boundary, which also keeps the map from growing beyond one window's worth of keys.
 */
export class FixedWindowLimiter {
  private window = -1;
  private counts = new Map<string, number>();

  constructor(private readonly windowMs: number) {}

  /** Counts one hit for `key`; returns null when allowed, else the seconds until the window ends. */
  hit(key: string, limit: number, now = Date.now()): number | null {
    const window = Math.floor(now / this.windowMs);
    if (window !== this.window) {
      this.window = window;
      this.counts = new Map();
    }
    const count = (this.counts.get(key) ?? 0) + 1;
    this.counts.set(key, count);
    if (count <= limit) return null;
    return Math.max(1, Math.ceil(((window + 1) * this.windowMs - now) / 1000));
  }
}

/** Express middleware: 429 RATE_LIMITED with Retry-After once `limit(req)` requests from one key are used up in a window. */
export function rateLimit(options: { windowMs: number; limit: (req: Request) => number; key?: (req: Request) => string }): RequestHandler {
  const limiter = new FixedWindowLimiter(options.windowMs);
  const keyOf = options.key ?? ((req: Request) => req.ip ?? 'unknown');
  return (req, _res, next) => {
    const retryAfter = limiter.hit(keyOf(req), options.limit(req));
    next(retryAfter === null ? undefined : rateLimited(undefined, retryAfter));
  };
}
