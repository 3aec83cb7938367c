import { RequestContext } from '../../auth/context.js';
import { PinnedConnectionPool } from '../../net/outbound-guard.js';
import type { Runtime, WebhookDeliveryQueue } from '../../runtime.js';
import {
  attemptDelivery,
  claimDeliveriesById,
  claimDueDeliveries,
  DELIVERIES_COMMITTED_TOPIC,
  recordAttempts,
  requeueDeliveries,
  webhooksOfWaitingDeliveries,
  type ClaimedDelivery,
  type FinishedAttempt,
} from './delivery-pipeline.js';

/** Finished attempts recorded by one transaction at most. */
const RECORD_BATCH = 500;
/** On stop, requests under way get this long (at most the delivery timeout) to finish and be recorded. */
const STOP_WAIT_MS = 10_000;
const RETRY_AFTER_ERROR_MS = 1000;

/**
 * The in-process delivery worker of one server instance: a pool of `concurrency` request slots, at
 * most `perWebhookConcurrency` of them for any one webhook.
 *
 * - First attempts: woken by the publication (NOTIFY, sent on commit) of every transaction that commits
 *   pending deliveries on any instance (and at once by this instance's own commits), it claims due
 *   pending deliveries in (createdAt, id) order with `for update skip locked` and a lease, never more
 *   for a webhook than it has free slots (so nothing claimed waits here while its lease runs), and
 *   skipping webhooks that have none: a receiver that hangs holds its own slots, not the others'.
 * - Retries stay scheduled through Agenda: the `webhooks.deliver` job, due at the backoff's time,
 *   `submit`s the delivery, which is claimed by id when its webhook has a free slot. Until then it is
 *   held here only (the job has ended): `stop` hands such retries back to Agenda, and after a crash the
 *   sweep job re-queues them once they are `sweepGraceMs` overdue.
 * - A crashed instance's claims: every `recoverEveryMs` it looks for pending deliveries whose lease ran
 *   out (a retry whose lease ran out is left to the sweep job, the backstop for anything else left behind).
 * - Outcomes are recorded in groups: those that finish while a write is under way go in the next one.
 * - Requests reuse keep-alive connections per checked address set (`PinnedConnectionPool`); the URL is
 *   checked before every attempt all the same.
 */
export class WebhookDeliveryWorker implements WebhookDeliveryQueue {
  private unsubscribe: (() => void) | null = null;
  private timer: NodeJS.Timeout | null = null;
  private readonly connections = new PinnedConnectionPool();
  /** requests under way here, by webhook */
  private readonly inFlight = new Map<string, number>();
  private active = 0;
  private claiming: Promise<void> | null = null;
  private again = false;
  /** what the next claim pass looks for: any due pending delivery, or only those whose claim ran out */
  private want: 'all' | 'abandoned' | null = null;
  /** webhooks that had no free slot left at the last claim, so may have due deliveries waiting */
  private readonly blocked = new Set<string>();
  /** submitted deliveries not looked at yet, with the jobs waiting for that */
  private submitted = new Map<string, (() => void)[]>();
  /** submitted deliveries whose webhook had no free slot, by webhook */
  private readonly deferred = new Map<string, Set<string>>();
  private readonly finished: { attempt: FinishedAttempt; done: () => void }[] = [];
  private recording: Promise<void> | null = null;
  private readonly attempts = new Set<Promise<void>>();
  private attemptContext: RequestContext | null = null;
  private stopped = false;
  /** set when stopping gave up waiting: outcomes still to come are not recorded (their lease expires instead) */
  private abandoned = false;

  constructor(private readonly runtime: () => Runtime) {}

  async start(): Promise<void> {
    const runtime = this.runtime();
    this.unsubscribe = runtime.pubsub.on(DELIVERIES_COMMITTED_TOPIC, () => this.wake());
    this.timer = setInterval(() => {
      this.look('abandoned');
      this.kick();
    }, runtime.tunables.webhooks.recoverEveryMs);
    this.timer.unref();
    // Deliveries committed while no instance was listening.
    this.wake();
  }

  wake(): void {
    this.look('all');
    this.kick();
  }

  /** Asks the next claim pass to look (a pass for any due delivery also finds the abandoned ones). */
  private look(what: 'all' | 'abandoned'): void {
    if (what === 'all' || this.want === null) this.want = what;
  }

  submit(deliveryId: string): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      this.submitted.set(deliveryId, [...(this.submitted.get(deliveryId) ?? []), resolve]);
      this.kick();
    });
  }

  /** Runs before the job queue stops (src/server.ts): retries not attempted here go back to it. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.unsubscribe?.();
    await this.claiming;
    const wait = Math.min(STOP_WAIT_MS, this.runtime().tunables.webhooks.deliveryTimeoutMs);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.allSettled([...this.attempts]), new Promise((resolve) => (timer = setTimeout(resolve, wait)))]);
    clearTimeout(timer);
    this.abandoned = this.attempts.size > 0;
    this.connections.close();
    await this.recording;
    const unattempted = [...this.submitted.keys(), ...[...this.deferred.values()].flatMap((ids) => [...ids])];
    try {
      await requeueDeliveries(this.context(), unattempted);
    } catch (error) {
      this.runtime().log.error({ err: (error as Error).message, deliveries: unattempted.length }, 'could not hand retries back to the job queue; the sweep will');
    }
    for (const waiting of this.submitted.values()) for (const resolve of waiting) resolve();
    this.submitted.clear();
    this.deferred.clear();
  }

  private context(): RequestContext {
    return RequestContext.system(this.runtime(), 'webhooks.deliver');
  }

  /** Runs claim passes until there is nothing to claim or no free slot; a kick during a pass asks for one more. */
  private kick(): void {
    if (this.stopped) return;
    if (this.claiming) {
      this.again = true;
      return;
    }
    this.claiming = this.claimLoop()
      .catch((error: Error) => {
        this.runtime().log.error({ err: error.message }, 'webhook delivery claim failed; trying again shortly');
        this.look('all');
        setTimeout(() => this.kick(), RETRY_AFTER_ERROR_MS).unref();
      })
      .finally(() => {
        this.claiming = null;
        if (this.again && !this.stopped) {
          this.again = false;
          this.kick();
        }
      });
  }

  private async claimLoop(): Promise<void> {
    const { concurrency, perWebhookConcurrency } = this.runtime().tunables.webhooks;
    // Under load, one statement claims several deliveries: wait until this many slots are free.
    const batchFloor = Math.max(1, Math.min(8, Math.ceil(concurrency / 8)));
    while (!this.stopped) {
      const free = concurrency - this.active;
      if (free <= 0) return;
      if (this.submitted.size > 0 || this.deferredReady(perWebhookConcurrency)) {
        await this.claimSubmitted(free, perWebhookConcurrency);
        continue;
      }
      if (!this.want || (this.active > 0 && free < batchFloor)) return;
      const want = this.want;
      this.want = null;
      const saturated: string[] = [];
      const freeSlots: Record<string, number> = {};
      for (const [webhookId, n] of this.inFlight) {
        if (n >= perWebhookConcurrency) saturated.push(webhookId);
        else freeSlots[webhookId] = perWebhookConcurrency - n;
      }
      const result = await claimDueDeliveries(this.context(), {
        limit: free,
        saturated,
        freeSlots,
        perWebhook: perWebhookConcurrency,
        abandonedOnly: want === 'abandoned',
      });
      for (const delivery of result.claimed) this.begin(delivery);
      // Webhooks left out for want of a slot: the next request of theirs to end looks again. One whose
      // requests all ended while the claim was under way has no such request left: look again now.
      const taken = new Map<string, number>();
      for (const delivery of result.claimed) taken.set(delivery.webhookId, (taken.get(delivery.webhookId) ?? 0) + 1);
      const capped = [...saturated, ...[...taken].filter(([webhookId, n]) => n >= (freeSlots[webhookId] ?? perWebhookConcurrency)).map(([webhookId]) => webhookId)];
      for (const webhookId of capped) {
        if ((this.inFlight.get(webhookId) ?? 0) >= perWebhookConcurrency) this.blocked.add(webhookId);
        else this.look('all');
      }
      // A full claim or a full scan: more may be due behind them.
      if (result.claimed.length >= free || result.scanned >= result.scanLimit) this.look(want);
    }
  }

  private deferredReady(perWebhook: number): boolean {
    for (const webhookId of this.deferred.keys()) if ((this.inFlight.get(webhookId) ?? 0) < perWebhook) return true;
    return false;
  }

  /** Submitted deliveries (retries): those whose webhook has a free slot are claimed by id, the others wait here for one. */
  private async claimSubmitted(free: number, perWebhook: number): Promise<void> {
    const waiting = this.submitted;
    this.submitted = new Map();
    try {
      const webhookOf = await webhooksOfWaitingDeliveries(this.context(), [...waiting.keys()]);
      for (const [id, webhookId] of webhookOf) this.deferred.set(webhookId, (this.deferred.get(webhookId) ?? new Set()).add(id));
      const pick: string[] = [];
      for (const [webhookId, ids] of this.deferred) {
        let slots = perWebhook - (this.inFlight.get(webhookId) ?? 0);
        for (const id of ids) {
          if (slots <= 0 || pick.length >= free) break;
          pick.push(id);
          ids.delete(id);
          slots--;
        }
        if (ids.size === 0) this.deferred.delete(webhookId);
      }
      for (const delivery of await claimDeliveriesById(this.context(), pick)) this.begin(delivery);
    } catch (error) {
      for (const id of waiting.keys()) if (!this.submitted.has(id)) this.submitted.set(id, []);
      throw error;
    } finally {
      for (const resolvers of waiting.values()) for (const resolve of resolvers) resolve();
    }
  }

  private begin(delivery: ClaimedDelivery): void {
    this.active++;
    this.inFlight.set(delivery.webhookId, (this.inFlight.get(delivery.webhookId) ?? 0) + 1);
    const run = this.run(delivery)
      .catch((error: Error) => this.runtime().log.error({ deliveryId: delivery.id, err: error.message }, 'webhook delivery failed unexpectedly'))
      .finally(() => this.attempts.delete(run));
    this.attempts.add(run);
  }

  private async run(delivery: ClaimedDelivery): Promise<void> {
    let outcome;
    try {
      // An attempt reads no rows: one context serves them all.
      this.attemptContext ??= this.context();
      outcome = await attemptDelivery(this.attemptContext, delivery, this.connections);
    } finally {
      this.release(delivery.webhookId);
    }
    if (this.abandoned) return;
    await new Promise<void>((done) => {
      this.finished.push({ attempt: { delivery, outcome }, done });
      this.recording ??= this.recordFinished();
    });
  }

  /** The request is over: its slot serves the next delivery while the outcome is being recorded. */
  private release(webhookId: string): void {
    this.active--;
    const n = (this.inFlight.get(webhookId) ?? 1) - 1;
    if (n > 0) this.inFlight.set(webhookId, n);
    else this.inFlight.delete(webhookId);
    if (this.blocked.delete(webhookId)) this.look('all');
    if (this.want || this.submitted.size > 0 || this.deferred.has(webhookId)) this.kick();
  }

  /** Records what has finished, a group at a time, until nothing is left. */
  private async recordFinished(): Promise<void> {
    while (this.finished.length > 0) {
      const group = this.finished.splice(0, RECORD_BATCH);
      await this.record(group.map((item) => item.attempt));
      for (const item of group) item.done();
    }
    this.recording = null;
  }

  /**
   * A failed write is tried again once; then each attempt on its own, so one that cannot be written does
   * not take the others with it. An attempt left unrecorded keeps its lease until it runs out, and is then
   * made again: at least once.
   */
  private async record(attempts: FinishedAttempt[]): Promise<void> {
    for (let tries = 1; tries <= 2; tries++) {
      try {
        await recordAttempts(this.context(), attempts);
        return;
      } catch (error) {
        this.runtime().log.warn({ err: (error as Error).message, attempts: attempts.length }, 'recording webhook attempts failed');
        await new Promise((resolve) => setTimeout(resolve, 100 * tries));
      }
    }
    for (const attempt of attempts) {
      try {
        await recordAttempts(this.context(), [attempt]);
      } catch (error) {
        this.runtime().log.error({ deliveryId: attempt.delivery.id, err: (error as Error).message }, 'recording a webhook attempt failed');
      }
    }
  }
}
