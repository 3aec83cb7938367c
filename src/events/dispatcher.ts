import type { EntityManager } from '@mikro-orm/postgresql';
import { RequestContext } from '../auth/context.js';
import { listen, type Listener } from '../db/listener.js';
import type { Runtime } from '../runtime.js';
import { OUTBOX_CHANNEL, toDomainEvent, type OutboxEventFields } from './outbox.js';
import { subscriberWants, type DomainEvent, type EventSubscriber } from './types.js';
import { uuidArray } from '../db/arrays.js';

export const DOMAIN_EVENT_TOPIC = 'domain-event';
const MAX_BACKOFF_MS = 10 * 60_000;
// Large enough that a burst is fanned out in a few statements, small enough that one batch's
// transaction stays short (events reach subscriptions once their batch has committed).
const BATCH = 500;
const PARALLEL_DRAINS = 2;

type OutboxRow = OutboxEventFields & { attempts: number };

/** A PostgreSQL array literal of uuids (bound as one text parameter, cast with `::uuid[]`). */

/**
 * Hands committed outbox events to subscribers, at least once. Events are claimed with
 * `FOR UPDATE SKIP LOCKED` and handled in the same transaction that marks them dispatched, so
 * several instances never handle one event twice, and a crash before commit leaves them to be
 * picked up again. Wakes on NOTIFY and also polls, so nothing waits on a lost notification.
 */
export class OutboxDispatcher {
  private listener: Listener | null = null;
  private timer: NodeJS.Timeout | null = null;
  private readonly running = new Set<Promise<void>>();
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
    await Promise.all([...this.running]);
  }

  /**
   * Drains the outbox. A kick during a drain starts a second one beside it (a burst is fanned out by two
   * transactions at a time, each on its own batch: they skip each other's locked rows); with two under
   * way, it schedules one more pass once one ends.
   */
  kick(): void {
    if (this.stopped) return;
    if (this.running.size >= PARALLEL_DRAINS) {
      this.again = true;
      return;
    }
    const drain: Promise<void> = this.drain()
      .catch((error: Error) => this.runtime.log.error({ err: error.message }, 'outbox drain failed'))
      .finally(() => {
        this.running.delete(drain);
        if (this.again && !this.stopped) {
          this.again = false;
          this.kick();
        }
      });
    this.running.add(drain);
  }

  private async drain(): Promise<void> {
    while (!this.stopped && (await this.dispatchBatch())) {
      // keep going until the outbox has nothing ready
    }
  }

  /**
   * Claims up to BATCH ready events (raw rows, no entities) and hands them to each subscriber in one
   * savepoint, through `handleBatch` where a subscriber has one (the webhook fan-out inserts every
   * event's deliveries in one statement). If that fails, each event is handed over again in its own
   * savepoint, so one failing event is retried later without holding back the others. The batch is
   * marked dispatched in one statement; work the subscribers queued with `afterCommit` runs once it
   * has committed, and the events are then published to subscriptions in as few NOTIFYs as fit.
   */
  private async dispatchBatch(): Promise<boolean> {
    const ctx = RequestContext.system(this.runtime, 'outbox');
    let dispatched: DomainEvent[] = [];
    let claimed = 0;
    try {
      await ctx.em.transactional(async (em) => {
        const tx = ctx.withEm(em as EntityManager);
        const rows = (await tx.em.execute(
          `select id, type, org_id as "orgId", data, created_at as "createdAt", attempts from outbox_event
            where dispatched_at is null and available_at <= ? order by created_at limit ? for update skip locked`,
          [new Date(), BATCH],
        )) as OutboxRow[];
        claimed = rows.length;
        if (claimed === 0) return;
        const events = rows.map(toDomainEvent);
        const batchError = await this.handAll(tx, events);
        // A batch of one has nothing to isolate: its event failed.
        const failed =
          batchError === null ? new Map<string, Error>() : events.length === 1 ? new Map([[events[0]!.id, batchError]]) : await this.handEach(tx, events);
        dispatched = events.filter((event) => !failed.has(event.id));
        if (dispatched.length > 0) {
          await tx.em.execute(`update outbox_event set dispatched_at = ? where id = any(?::uuid[])`, [new Date(), uuidArray(dispatched.map((e) => e.id))]);
        }
        for (const row of rows) {
          const error = failed.get(row.id);
          if (error) await this.noteFailure(tx, row, error);
        }
      });
    } catch (error) {
      ctx.dropCommitHooksAfter(0);
      throw error;
    }
    await ctx.runCommitHooks();
    if (dispatched.length > 0) this.runtime.pubsub.publishMany(DOMAIN_EVENT_TOPIC, dispatched);
    return claimed > 0;
  }

  /** Every subscriber with every event it wants, in one savepoint. Answers what one of them threw (the savepoint rolled back), or null. */
  private async handAll(tx: RequestContext, events: DomainEvent[]): Promise<Error | null> {
    const hooksBefore = tx.commitHookCount();
    try {
      await tx.em.transactional(async (inner) => {
        const itx = tx.withEm(inner as EntityManager);
        for (const subscriber of this.subscribers) {
          const wanted = events.filter((event) => subscriberWants(subscriber, event.type));
          if (wanted.length === 0) continue;
          if (subscriber.handleBatch) await subscriber.handleBatch(itx, wanted);
          else for (const event of wanted) await subscriber.handle(itx, event);
        }
      });
      return null;
    } catch (error) {
      tx.dropCommitHooksAfter(hooksBefore);
      if (events.length > 1) {
        this.runtime.log.warn({ events: events.length, err: (error as Error).message.slice(0, 1000) }, 'event batch failed; handing its events over one at a time');
      }
      return error as Error;
    }
  }

  /** Each event in its own savepoint; answers the ones that failed. */
  private async handEach(tx: RequestContext, events: DomainEvent[]): Promise<Map<string, Error>> {
    const failed = new Map<string, Error>();
    for (const event of events) {
      const hooksBefore = tx.commitHookCount();
      try {
        await tx.em.transactional(async (inner) => {
          const itx = tx.withEm(inner as EntityManager);
          for (const subscriber of this.subscribers) {
            if (subscriberWants(subscriber, event.type)) await subscriber.handle(itx, event);
          }
        });
      } catch (error) {
        tx.dropCommitHooksAfter(hooksBefore);
        failed.set(event.id, error as Error);
      }
    }
    return failed;
  }

  /** The event stays in the outbox and comes back after an exponential backoff. */
  private async noteFailure(tx: RequestContext, row: OutboxRow, error: Error): Promise<void> {
    const attempts = row.attempts + 1;
    const availableAt = new Date(Date.now() + Math.min(1000 * 2 ** attempts, MAX_BACKOFF_MS));
    await tx.em.execute(`update outbox_event set attempts = ?, last_error = ?, available_at = ? where id = ?`, [attempts, error.message.slice(0, 2000), availableAt, row.id]);
    this.runtime.log.error({ eventId: row.id, type: row.type, attempts, err: error.message }, 'event subscriber failed; will retry');
  }
}
