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

/** An agent's answer to one request over its channel (`{type: "response"}`). */
export interface AgentResponse {
  ok: boolean;
  result?: unknown;
  error?: unknown;
}

/**
 * The agent channels (WebSocket) as the services use them: src/services/agent-channel.ts implements
 * it, and the runtime carries this instance's, so it is declared here.
 */
export interface AgentChannels {
  /**
   * Sends `{type: "request"}` to the device's agent on whichever instance holds its channel and
   * resolves with its response; rejects 409 AGENT_NOT_CONNECTED when no instance does, 504
   * AGENT_TIMEOUT when the answer takes longer than `timeoutMs`.
   */
  call(deviceId: string, method: string, params: Record<string, unknown>, timeoutMs: number): Promise<AgentResponse>;
  /** Whether this instance holds an open channel of the device. */
  connectedHere(deviceId: string): boolean;
}

/**
 * This instance's webhook delivery worker as the services use it: src/services/webhooks/webhook-worker.ts
 * implements it (first attempts are claimed from the deliveries table; retries come through Agenda).
 */
export interface WebhookDeliveryQueue {
  /** New pending deliveries were committed (here, or on another instance: published on commit). */
  wake(): void;
  /** A retry (or a sweep's re-queue) of one delivery came due: attempt it when its webhook has a free slot. */
  submit(deliveryId: string): Promise<void>;
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
    /** one delivery request, DNS to body; a claim's lease outlives it by leaseMarginMs */
    deliveryTimeoutMs: number;
    leaseMarginMs: number;
    /** delivery requests in flight on this instance, over all webhooks … */
    concurrency: number;
    /** … and to any one webhook (a slow receiver holds at most this many of the slots) */
    perWebhookConcurrency: number;
    /** how often the worker looks for claims left by a crashed instance whose lease ran out */
    recoverEveryMs: number;
    /** consecutive failed deliveries, spanning at least autoFailMinSpanMs, that set a webhook to `failed` */
    autoFailAfter: number;
    autoFailMinSpanMs: number;
    /** a pending/retrying delivery overdue by this much, and not held by a worker, is re-queued by the sweep */
    sweepGraceMs: number;
  };
  agentChannel: {
    /** how long a request forwarded to the other instances waits for the one holding the agent's channel to take it (else 409 not connected) */
    acceptTimeoutMs: number;
  };
}

export const DEFAULT_TUNABLES: Tunables = {
  webhooks: {
    resolve: undefined,
    deliveryTimeoutMs: 30_000,
    leaseMarginMs: 15_000,
    concurrency: 64,
    perWebhookConcurrency: 8,
    recoverEveryMs: 5_000,
    autoFailAfter: 10,
    autoFailMinSpanMs: 3_600_000,
    sweepGraceMs: 120_000,
  },
  agentChannel: { acceptTimeoutMs: 2_000 },
};

/** Per-area overrides of the defaults. */
export type TunableOverrides = { [Area in keyof Tunables]?: Partial<Tunables[Area]> };

export function resolveTunables(overrides: TunableOverrides = {}): Tunables {
  return { webhooks: { ...DEFAULT_TUNABLES.webhooks, ...overrides.webhooks }, agentChannel: { ...DEFAULT_TUNABLES.agentChannel, ...overrides.agentChannel } };
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
  /** the agent channels held by this instance, and the way to reach those held by others */
  agentChannels: AgentChannels;
  /** this instance's webhook delivery worker */
  webhookDeliveries: WebhookDeliveryQueue;
  clock: Clock;
  tunables: Tunables;
}
