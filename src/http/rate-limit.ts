import type { Principal } from '../auth/context.js';
import type { Config } from '../config.js';
import { Coalescer } from '../db/coalesce.js';
import { preparedRows, statement } from '../db/prepared.js';
import { rateLimited } from '../errors.js';
import type { Runtime } from '../runtime.js';
import { onePer } from '../memo.js';

/** A budget of requests per key and minute, named so that different budgets never share a counter. */
export interface RateLimit {
  name: string;
  perMinute: (config: Config) => number;
}

const WINDOW_MS = 60_000;

/**
 * Adds each key's requests to its counter in `rate_limit` (Migration20261124111000_rate_limits): a
 * window starts at a key's first request and lasts a minute; a key whose window ended starts again.
 * The keys of one statement are distinct (`countRequests` sums a batch's calls per key).
 */
const COUNT_REQUESTS = statement(`
  insert into rate_limit (key, points, expire)
  select k.key, k.points, ?::bigint + ${WINDOW_MS} from unnest(?::text[], ?::int[]) as k(key, points)
  on conflict (key) do update set
    points = case when rate_limit.expire is null or rate_limit.expire <= ? then excluded.points else rate_limit.points + excluded.points end,
    expire = case when rate_limit.expire is null or rate_limit.expire <= ? then excluded.expire else rate_limit.expire end
  returning key, points, expire`);

interface Counted {
  /** the counter once this request is counted: over the budget means refused */
  points: number;
  expire: number;
}

/** One call of the counter: a key and how many requests it counts (a batch's operations count each). */
interface Count {
  key: string;
  points: number;
}

/**
 * Requests arriving together are counted by one statement, so a budget that every request draws on
 * costs PostgreSQL a share of one upsert per request, not one each. Each call still sees a count made
 * after it arrived, so every instance draws on the same budget.
 */
const requestCounter = onePer(
  (runtime: Runtime) =>
    new Coalescer<Count, Counted>(
      async (counts) => {
        const sums = new Map<string, number>();
        for (const { key, points } of counts) sums.set(key, (sums.get(key) ?? 0) + points);
        const now = runtime.clock.now().getTime();
        const rows = await preparedRows<{ key: string; points: number; expire: string }>(runtime.orm, COUNT_REQUESTS, [now, [...sums.keys()], [...sums.values()], now, now]);
        const counted = new Map(rows.map((row) => [row.key, { points: row.points, expire: Number(row.expire) }]));
        // The batch's calls of one key take the counter's last values in arrival order: each its total
        // less what the later calls of its key added.
        const later = new Map<string, number>();
        const answers: Counted[] = [];
        for (let i = counts.length - 1; i >= 0; i--) {
          const { key, points } = counts[i]!;
          const total = counted.get(key)!;
          const after = later.get(key) ?? 0;
          later.set(key, after + points);
          answers[i] = { points: total.points - after, expire: total.expire };
        }
        return answers;
      },
      { maxBatch: 200, inFlight: 2 },
    ),
);

/** Keys used up, with the end of their window: refused from memory until then, so a flood past the limit costs no queries. */
const usedUp = onePer((_runtime: Runtime) => new Map<string, number>());

/**
 * Counts `points` requests (one by default) for `key` in the service's database, so every instance
 * draws on the same budget. Over the limit: 429 RATE_LIMITED with Retry-After.
 */
export async function consumeRateLimit(runtime: Runtime, limit: RateLimit, key: string, points = 1): Promise<void> {
  const counterKey = `${limit.name}:${key}`;
  const blocked = usedUp(runtime);
  const now = runtime.clock.now().getTime();
  const until = blocked.get(counterKey);
  if (until !== undefined) {
    if (until > now) throw rateLimited(undefined, Math.max(1, Math.ceil((until - now) / 1000)));
    blocked.delete(counterKey);
  }
  const { points: count, expire } = await requestCounter(runtime).submit({ key: counterKey, points });
  if (count <= limit.perMinute(runtime.config)) return;
  if (blocked.size >= 10_000) for (const [other, end] of blocked) if (end <= now) blocked.delete(other);
  blocked.set(counterKey, expire);
  throw rateLimited(undefined, Math.max(1, Math.ceil((expire - now) / 1000)));
}

/** Every caller's own budget (API_RATE_LIMIT_PER_MINUTE), drawn on by REST requests, GraphQL requests and subscribes alike. */
const CALLER_LIMIT: RateLimit = { name: 'caller', perMinute: (config) => config.apiRateLimitPerMinute };

/**
 * Counts `requests` (one by default; a GraphQL batch's operations each) against its authenticated
 * caller's budget (a user's, or an API key's): one budget whichever front door the request came
 * through. Anonymous requests and the service's own work are not counted here (the public routes have
 * their per-IP limits).
 */
export async function consumeCallerBudget(runtime: Runtime, principal: Principal | null, requests = 1): Promise<void> {
  if (!principal || principal.kind === 'system' || runtime.config.apiRateLimitPerMinute === 0) return;
  await consumeRateLimit(runtime, CALLER_LIMIT, `${principal.kind}:${principal.id}`, requests);
}

/**
 * Counts `requests` of an anonymous caller against a caller's budget, keyed by its client address: for
 * writes anyone may make (GraphQL's automatic persisted-query registrations), which an authenticated
 * caller's own budget counts.
 */
export async function consumeAddressBudget(runtime: Runtime, ip: string | null, requests: number): Promise<void> {
  if (requests === 0 || runtime.config.apiRateLimitPerMinute === 0) return;
  await consumeRateLimit(runtime, CALLER_LIMIT, `address:${ip ?? 'unknown'}`, requests);
}
