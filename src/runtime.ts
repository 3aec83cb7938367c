import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from './config.js';
import type { PgPubSub } from './events/pubsub.js';
import type { Logger } from './logger.js';
import type { GuardOptions } from './net/outbound-guard.js';
import type { SecretBox } from './secrets.js';

/** The job queue as the rest of the service uses it; src/jobs/agenda.ts implements it (and imports this module, so it is declared here). */
export interface JobScheduler {
  schedule(name: string, data: Record<string, unknown>, when?: Date): Promise<void>;
  ping(): Promise<void>;
}

/** Where time-based rules read the time, so a test can move it instead of waiting for it. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/**
 * Internal knobs, not configuration: production runs on the defaults; tests pass their own through
 * `StartOptions.tunables` (a shorter timeout, a DNS table) for one server instance.
 */
export interface Tunables {
  webhooks: {
    /** DNS for webhook URLs; undefined: the system resolver */
    resolve: GuardOptions['resolve'];
    /** one delivery request, DNS to body; a claim's lease outlives it by a fixed margin */
    deliveryTimeoutMs: number;
    /** consecutive failed deliveries, spanning at least autoFailMinSpanMs, that set a webhook to `failed` */
    autoFailAfter: number;
    autoFailMinSpanMs: number;
    /** a pending/retrying delivery overdue by this much, and not held by a worker, is re-queued by the sweep */
    sweepGraceMs: number;
  };
}

export const DEFAULT_TUNABLES: Tunables = {
  webhooks: { resolve: undefined, deliveryTimeoutMs: 30_000, autoFailAfter: 10, autoFailMinSpanMs: 3_600_000, sweepGraceMs: 120_000 },
};

/** Per-area overrides of the defaults. */
export type TunableOverrides = { [Area in keyof Tunables]?: Partial<Tunables[Area]> };

export function resolveTunables(overrides: TunableOverrides = {}): Tunables {
  return { webhooks: { ...DEFAULT_TUNABLES.webhooks, ...overrides.webhooks } };
}

/** The long-lived parts of one server instance; every RequestContext points at it. */
export interface Runtime {
  config: Config;
  log: Logger;
  orm: MikroORM;
  databaseUrl: string;
  secrets: SecretBox;
  pubsub: PgPubSub;
  jobs: JobScheduler;
  clock: Clock;
  tunables: Tunables;
}
