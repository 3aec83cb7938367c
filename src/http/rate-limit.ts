import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type { Principal } from '../auth/context.js';
import type { Config } from '../config.js';
import { rateLimited } from '../errors.js';
import type { Runtime } from '../runtime.js';
import { onePer } from '../memo.js';

/** Created by Migration20261124111000_rate_limits in the shape rate-limiter-flexible expects; its rows are counters, not entities. */
const RATE_LIMIT_TABLE = 'rate_limit';

/** A budget of requests per key and minute, named so that different budgets never share a counter. */
export interface RateLimit {
  name: string;
  perMinute: (config: Config) => number;
}

const limitersOf = onePer((_runtime: Runtime) => new Map<string, RateLimiterPostgres>());

function limiterFor(runtime: Runtime, limit: RateLimit): RateLimiterPostgres {
  const byName = limitersOf(runtime);
  let limiter = byName.get(limit.name);
  if (!limiter) {
    const points = limit.perMinute(runtime.config);
    limiter = new RateLimiterPostgres({
      storeClient: runtime.orm.em.getConnection().getKnex(),
      storeType: 'knex',
      tableName: RATE_LIMIT_TABLE,
      // The migration made it; the library's own CREATE would race the first requests.
      tableCreated: true,
      keyPrefix: limit.name,
      points,
      duration: 60,
      // Once a key is used up, this instance refuses it from memory until its window ends: a flood
      // past the limit costs no queries.
      inMemoryBlockOnConsumed: points,
    });
    byName.set(limit.name, limiter);
  }
  return limiter;
}

/**
 * Counts one request for `key` in the service's database, so every instance draws on the same
 * budget (one upsert per request; none once the key is used up). The window starts at the key's
 * first request. Over the limit: 429 RATE_LIMITED with Retry-After.
 */
export async function consumeRateLimit(runtime: Runtime, limit: RateLimit, key: string): Promise<void> {
  try {
    await limiterFor(runtime, limit).consume(key);
  } catch (error) {
    if (error instanceof RateLimiterRes) throw rateLimited(undefined, Math.max(1, Math.ceil(error.msBeforeNext / 1000)));
    throw error;
  }
}

/** Every caller's own budget (API_RATE_LIMIT_PER_MINUTE), drawn on by REST requests, GraphQL requests and subscribes alike. */
const CALLER_LIMIT: RateLimit = { name: 'caller', perMinute: (config) => config.apiRateLimitPerMinute };

/**
 * Counts one request against its authenticated caller's budget (a user's, or an API key's): one
 * budget whichever front door the request came through. Anonymous requests and the service's own
 * work are not counted here (the public routes have their per-IP limits).
 */
export async function consumeCallerBudget(runtime: Runtime, principal: Principal | null): Promise<void> {
  if (!principal || principal.kind === 'system' || runtime.config.apiRateLimitPerMinute === 0) return;
  await consumeRateLimit(runtime, CALLER_LIMIT, `${principal.kind}:${principal.id}`);
}
