import type { RequestContext } from '../auth/context.js';
import { OutboxEvent } from '../../entities/outbox.js';
import type { DomainEvent, DomainEventMap, DomainEventType } from './types.js';

export const OUTBOX_CHANNEL = 'service_outbox';

/**
 * Writes an event to the outbox in the caller's transaction: it commits or rolls back with the
 * change. The NOTIFY is transactional too, so the dispatcher wakes only once the row is visible.
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
  await tx.em.insert(OutboxEvent, row);
  await tx.em.execute(`select pg_notify('${OUTBOX_CHANNEL}', '')`);
  return toDomainEvent(row) as DomainEvent<T>;
}

export function toDomainEvent(row: OutboxEvent): DomainEvent {
  // Rows are written by emit() only, so their type is one of the vocabulary's.
  return { id: row.id, type: row.type as DomainEventType, orgId: row.orgId, timestamp: new Date(row.createdAt).toISOString(), data: row.data } as DomainEvent;
}
