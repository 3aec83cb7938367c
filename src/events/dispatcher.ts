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

/**
 * Hands committed outbox events to subscribers, at least once. Each event is claimed with
 * `FOR UPDATE SKIP LOCKED` and handled in the same transaction that marks it dispatched, so
 * several instances never handle one event twice, and a crash before commit leaves it to be
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
    while (!this.stopped && (await this.dispatchOne())) {
      // keep going until the outbox has nothing ready
    }
  }

  private async dispatchOne(): Promise<boolean> {
    const ctx = RequestContext.system(this.runtime, 'outbox');
    let claimed: OutboxEvent | null = null;
    try {
      await ctx.em.transactional(async (em) => {
        const [row] = await (em as EntityManager).find(
          OutboxEvent,
          { dispatchedAt: null, availableAt: { $lte: new Date() } },
          { orderBy: { createdAt: 'asc' }, limit: 1, lockMode: LockMode.PESSIMISTIC_PARTIAL_WRITE },
        );
        if (!row) return;
        claimed = row;
        const event = toDomainEvent(row);
        const tx = ctx.withEm(em as EntityManager);
        for (const subscriber of this.subscribers) {
          if (subscriberWants(subscriber, event.type)) await subscriber.handle(tx, event);
        }
        row.dispatchedAt = new Date();
      });
    } catch (error) {
      if (!claimed) throw error;
      await this.recordFailure(claimed, error as Error);
      return true;
    }
    if (claimed) this.runtime.pubsub.publish(DOMAIN_EVENT_TOPIC, toDomainEvent(claimed));
    return claimed !== null;
  }

  private async recordFailure(row: OutboxEvent, error: Error): Promise<void> {
    const attempts = row.attempts + 1;
    const delay = Math.min(1000 * 2 ** attempts, MAX_BACKOFF_MS);
    this.runtime.log.error({ eventId: row.id, type: row.type, attempts, err: error.message }, 'event subscriber failed; will retry');
    await this.runtime.orm.em
      .fork()
      .nativeUpdate(OutboxEvent, { id: row.id }, { attempts, lastError: error.message.slice(0, 2000), availableAt: new Date(Date.now() + delay) });
  }
}
