import { randomUUID } from 'node:crypto';
import { Entity, Index, PrimaryKey, Property } from '@mikro-orm/core';

/** A domain event written in the same transaction as the change that caused it; the dispatcher hands it on after commit. */
@Entity({ tableName: 'outbox_event' })
@Index({ properties: ['dispatchedAt', 'availableAt'] })
export class OutboxEvent {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'string', length: 100 })
  type!: string;

  @Property({ type: 'uuid', nullable: true })
  orgId: string | null = null;

  @Property({ type: 'json' })
  data!: Record<string, unknown>;

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();

  @Property({ type: 'timestamptz' })
  availableAt: Date = new Date();

  @Property({ type: 'timestamptz', nullable: true })
  dispatchedAt: Date | null = null;

  @Property({ type: 'integer' })
  attempts = 0;

  @Property({ type: 'text', nullable: true })
  lastError: string | null = null;
}
