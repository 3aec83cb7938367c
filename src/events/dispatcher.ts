import { LockMode } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/postgresql';
import { OutboxEvent } from '../../entities/outbox.js';
import { RequestContext } from '../auth/context.js';
import { listen, type Listener } from '../db/listener.js';
import type { Runtime } from '../runtime.js';
import { OUTBOX_CHANNEL, toDomainEvent } from './outbox.js';
import { subscriberWants, type EventSubscriber } from './types.js';

export const DOMAIN_EVENT_TOPIC = 'domain-event';
const MAX_BACKOFF_MS = 10 * 60_000;
const BATCH = 50;

/**
 * Hands committed outbox events to subscribers, at least once. Events are claimed with
 * `FOR UPDATE SKIP LOCKED` and handled in the same transaction that marks them dispatched, so
 * several instances never handle one event twice, and a crash before commit leaves them to be
 * picked up again. Wakes on NOTIFY and also polls, so nothing waits on a lost notification.
 */
export class OutboxDispatcher {
  private listener: Listener | null = null;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private stopped = false;

  constructor(
    private readonly runtime: Runtime,
    private readonly subscribers: EventSubscriber[],
    private readonly pollIntervalMs: number,
  ) {}

  async start(databaseUrl: string): Promise<void> {
    this.listener = await listen(databaseUrl, [OUTBOX_CHANNEL], () => this.kick(), this.runtime.log, () => this.kick());
    this.timer = setInterval(() => this.kick(), this.pollIntervalMs);
    this.timer.unref();
    this.kick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    await this.listener?.close();
    await this.running;
  }

  /** Drains the outbox; a kick during a drain schedules one more pass. */
  kick(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.drain()
      .catch((error: Error) => this.runtime.log.error({ err: error.message }, 'outbox drain failed'))
      .finally(() => {
        this.running = null;
        if (this.again && !this.stopped) {
          this.again = false;
          this.kick();
        }
      });
  }

  private async drain(): Promise<void> {
    while (!this.stopped && (await this.dispatchBatch())) {
      // keep going until the outbox has nothing ready
    }
  }

  /**
   * Claims up to BATCH ready events and hands each to its subscribers inside a savepoint, so one
   * failing event is retried later without holding back the others. Work the subscribers queued
   * with `afterCommit` runs once the batch has committed.
   */
  private async dispatchBatch(): Promise<boolean> {
    const ctx = RequestContext.system(this.runtime, 'outbox');
    const dispatched: OutboxEvent[] = [];
    let claimed = 0;
    try {
      await ctx.em.transactional(async (em) => {
        const tx = ctx.withEm(em as EntityManager);
        const rows = await tx.em.find(
          OutboxEvent,
          { dispatchedAt: null, availableAt: { $lte: new Date() } },
          { orderBy: { createdAt: 'asc' }, limit: BATCH, lockMode: LockMode.PESSIMISTIC_PARTIAL_WRITE },
        );
        claimed = rows.length;
        for (const row of rows) {
          const event = toDomainEvent(row);
          const hooksBefore = tx.commitHookCount();
          try {
            await tx.em.transactional(async (inner) => {
              const itx = ctx.withEm(inner as EntityManager);
              for (const subscriber of this.subscribers) {
                if (subscriberWants(subscriber, event.type)) await subscriber.handle(itx, event);
              }
            });
            row.dispatchedAt = new Date();
            dispatched.push(row);
          } catch (error) {
            tx.dropCommitHooksAfter(hooksBefore);
            this.noteFailure(row, error as Error);
          }
        }
      });
    } catch (error) {
      ctx.dropCommitHooksAfter(0);
      throw error;
    }
    await ctx.runCommitHooks();
    for (const row of dispatched) this.runtime.pubsub.publish(DOMAIN_EVENT_TOPIC, toDomainEvent(row));
    return claimed > 0;
  }

  /** The event stays in the outbox and comes back after an exponential backoff. */
  private noteFailure(row: OutboxEvent, error: Error): void {
    row.attempts += 1;
    row.lastError = error.message.slice(0, 2000);
    row.availableAt = new Date(Date.now() + Math.min(1000 * 2 ** row.attempts, MAX_BACKOFF_MS));
    this.runtime.log.error({ eventId: row.id, type: row.type, attempts: row.attempts, err: error.message }, 'event subscriber failed; will retry');
  }
}
