import type { Config } from '../config.js';
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
