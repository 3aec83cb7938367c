import type { Config } from '../config.js';
import type { RequestContext } from '../auth/context.js';
import type { Runtime } from '../runtime.js';

/** A job a domain contributes to the registry (its manifest's `jobs`). Handlers stay thin: parse, rebuild a context, call a service. */
export interface JobDefinition<Data = Record<string, unknown>> {
  name: string;
  handler: (runtime: Runtime, data: Data) => Promise<void>;
  /** how long a worker may hold the job before another may take it over (default 60 s) */
  lockLifetimeMs?: number;
  /** parallel runs of this job per instance (default 5) */
  concurrency?: number;
  /** recurring: runs on this interval (Agenda syntax, e.g. '1 minute') on one instance at a time, first soon after start-up */
  every?: string | ((config: Config) => string);
}

/**
 * Work a domain does when its time comes by the service clock (schedules due, occurrences to start,
 * runs to resume): run by the one `due-work.tick` job (src/jobs/due-work.ts) with the clock's `now`,
 * so tests move time instead of waiting. Idempotent: a tick may overlap another instance's.
 */
export interface DueWork {
  name: string;
  /** at most this often (default: every tick, 5 s) */
  everySeconds?: number;
  run: (ctx: RequestContext, now: Date) => Promise<void>;
}
