import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { RequestContext } from '../auth/context.js';
import { OutboxEvent } from '../../entities/outbox.js';
import type { DomainEvent, DomainEventMap, DomainEventType } from './types.js';

export const OUTBOX_CHANNEL = 'service_outbox';

/** Transactions (and savepoints: each has its own EntityManager) whose NOTIFY is already queued. */
const notified = new WeakSet<EntityManager>();

/**
 * Writes an event to the outbox in the caller's transaction: it commits or rolls back with the
 * change. The NOTIFY is transactional too, so the dispatcher wakes only once the row is visible; one
 * per transaction is enough (PostgreSQL folds repeated ones into one anyway), so the second and later
 * events of a transaction cost one insert each. A savepoint that rolls back takes its NOTIFY with it,
 * and its events: the outer transaction's own NOTIFY is sent from its own EntityManager.
 */
export async function emit<T extends DomainEventType>(
  tx: RequestContext,
  event: { type: T; orgId: string | null; data: DomainEventMap[T] },
): Promise<DomainEvent<T>> {
  if (!tx.em.isInTransaction()) throw new Error(`emit(${event.type}) outside a transaction: wrap the write in withTransaction()`);
  const row = new OutboxEvent();
  row.type = event.type;
  row.orgId = event.orgId;
  row.data = event.data;
  await tx.em.execute(`insert into outbox_event (id, type, org_id, data, created_at, available_at, attempts) values (?, ?, ?, ?, ?, ?, 0)`, [
    row.id,
    row.type,
    row.orgId,
    JSON.stringify(row.data),
    row.createdAt,
    row.availableAt,
  ]);
  await notifyOnce(tx);
  return toDomainEvent(row) as DomainEvent<T>;
}

/**
 * `emit` for many events of one type in one transaction (a report that brings many new records): one
 * insert for all of them, and the transaction's one NOTIFY. The events share their creation time.
 */
export async function emitMany<T extends DomainEventType>(tx: RequestContext, type: T, events: { orgId: string | null; data: DomainEventMap[T] }[]): Promise<void> {
  if (!tx.em.isInTransaction()) throw new Error(`emitMany(${type}) outside a transaction: wrap the write in withTransaction()`);
  if (events.length === 0) return;
  const now = new Date();
  await tx.em.execute(
    `insert into outbox_event (id, type, org_id, data, created_at, available_at, attempts)
      select e.id, ?, e.org_id, e.data, ?, ?, 0 from jsonb_to_recordset(?::jsonb) as e(id uuid, org_id uuid, data jsonb)`,
    [type, now, now, JSON.stringify(events.map((event) => ({ id: randomUUID(), org_id: event.orgId, data: event.data })))],
  );
  await notifyOnce(tx);
}

async function notifyOnce(tx: RequestContext): Promise<void> {
  if (!notified.has(tx.em)) {
    await tx.em.execute(`select pg_notify('${OUTBOX_CHANNEL}', '')`);
    notified.add(tx.em);
  }
}

/** What an outbox row holds of its event (the entity, or a row read as such). */
export type OutboxEventFields = Pick<OutboxEvent, 'id' | 'type' | 'orgId' | 'data' | 'createdAt'>;

export function toDomainEvent(row: OutboxEventFields): DomainEvent {
  // Rows are written by emit() only, so their type is one of the vocabulary's.
  return { id: row.id, type: row.type as DomainEventType, orgId: row.orgId, timestamp: new Date(row.createdAt).toISOString(), data: row.data } as DomainEvent;
}
