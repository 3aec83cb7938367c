import { randomUUID } from 'node:crypto';
import { Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Organization } from './organization.js';

/** Stored values; the API shows `disabled` as `paused` and `error` as `failed`. */
export type WebhookStatus = 'active' | 'disabled' | 'error';
export type WebhookDeliveryStatus = 'pending' | 'delivered' | 'failed' | 'retrying';

export interface WebhookRetryPolicy {
  maxRetries: number;
  initialDelayMs: number;
  backoffMultiplier: number;
  maxDelayMs: number;
}

/** A custom header; `value` is ciphertext (values often carry credentials). */
export interface StoredWebhookHeader {
  key: string;
  value: string;
}

/** An organization's HTTPS endpoint for event notifications. `url`, `secret` and header values are encrypted at rest. */
@Entity()
@Index({ properties: ['orgId', 'status'] })
export class Webhook extends BaseEntity<
  | 'secret'
  | 'headers'
  | 'status'
  | 'retryPolicy'
  | 'successCount'
  | 'failureCount'
  | 'consecutiveFailures'
  | 'failingSince'
  | 'lastDeliveryAt'
  | 'lastSuccessAt'
  | 'createdBy'
> {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'text', hidden: true })
  url!: string;

  @Property({ type: 'text', nullable: true, hidden: true })
  secret: string | null = null;

  @Property({ type: 'json' })
  events!: string[];

  @Property({ type: 'json', hidden: true })
  headers: StoredWebhookHeader[] = [];

  @Property({ type: 'string', length: 20 })
  status: WebhookStatus = 'active';

  /** null: the defaults */
  @Property({ type: 'json', nullable: true })
  retryPolicy: Partial<WebhookRetryPolicy> | null = null;

  @Property({ type: 'integer' })
  successCount = 0;

  @Property({ type: 'integer' })
  failureCount = 0;

  /** deliveries that ended `failed` since the last success; drives the automatic switch to `error` */
  @Property({ type: 'integer' })
  consecutiveFailures = 0;

  @Property({ type: 'timestamptz', nullable: true })
  failingSince: Date | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  lastDeliveryAt: Date | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  lastSuccessAt: Date | null = null;

  @Property({ type: 'uuid', nullable: true })
  createdBy: string | null = null;
}

/**
 * One event sent (or to be sent) to one webhook, across its automatic retries. A re-drive of a
 * failed delivery is a new row pointing at the original (`retryOf`). The partial unique index makes
 * the fan-out of one event idempotent: one original delivery per (webhook, event).
 */
@Entity()
@Index({ properties: ['webhookId', 'createdAt'] })
// Partial indexes: most deliveries end `delivered` and are never dead-lettered, and then leave these (the sweep's and
// the dead-letter list's), so writing a delivery's outcome touches fewer indexes.
@Index({
  name: 'webhook_delivery_waiting_index',
  expression: `create index "webhook_delivery_waiting_index" on "webhook_delivery" ("status", "next_attempt_at") where "status" in ('pending', 'retrying')`,
})
@Index({
  name: 'webhook_delivery_dead_letter_index',
  expression: `create index "webhook_delivery_dead_letter_index" on "webhook_delivery" ("org_id", "dead_lettered_at") where "dead_lettered_at" is not null`,
})
// The delivery worker claims due first attempts in (createdAt, id) order from this (src/services/webhooks/delivery-pipeline.ts).
@Index({
  name: 'webhook_delivery_pending_index',
  expression: `create index "webhook_delivery_pending_index" on "webhook_delivery" ("created_at", "id") where "status" = 'pending'`,
})
@Unique({
  name: 'webhook_delivery_event_unique',
  expression: 'create unique index "webhook_delivery_event_unique" on "webhook_delivery" ("webhook_id", "event_id") where "retry_of" is null',
})
export class WebhookDelivery {
  [OptionalProps]?:
    | 'id'
    | 'createdAt'
    | 'status'
    | 'attempt'
    | 'responseStatus'
    | 'responseBody'
    | 'responseTimeMs'
    | 'errorMessage'
    | 'nextAttemptAt'
    | 'deliveredAt'
    | 'lockedUntil'
    | 'deadLetteredAt'
    | 'redrivenAt'
    | 'retryOf';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Webhook, { mapToPk: true, fieldName: 'webhook_id', deleteRule: 'cascade' })
  webhookId!: string;

  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @Property({ type: 'string', length: 20 })
  status: WebhookDeliveryStatus = 'pending';

  @Property({ type: 'string', length: 100 })
  event!: string;

  @Property({ type: 'string', length: 100 })
  eventId!: string;

  /** the POST body: `{id, type, timestamp, orgId, data}` */
  @Property({ type: 'json' })
  payload!: Record<string, unknown>;

  @Property({ type: 'integer', nullable: true })
  responseStatus: number | null = null;

  @Property({ type: 'text', nullable: true })
  responseBody: string | null = null;

  /** attempts made */
  @Property({ type: 'integer' })
  attempt = 0;

  @Property({ type: 'timestamptz', nullable: true })
  nextAttemptAt: Date | null = null;

  @Property({ type: 'integer', nullable: true })
  responseTimeMs: number | null = null;

  @Property({ type: 'text', nullable: true })
  errorMessage: string | null = null;

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();

  @Property({ type: 'timestamptz', nullable: true })
  deliveredAt: Date | null = null;

  /** a worker holds the row until then while it sends: the claim that prevents double sends */
  @Property({ type: 'timestamptz', nullable: true })
  lockedUntil: Date | null = null;

  /** set when the delivery ends `failed`: the dead-letter queue is these rows */
  @Property({ type: 'timestamptz', nullable: true })
  deadLetteredAt: Date | null = null;

  /** last time this dead letter was re-driven through the retry route */
  @Property({ type: 'timestamptz', nullable: true })
  redrivenAt: Date | null = null;

  /** the failed delivery this one re-drives */
  @Property({ type: 'uuid', nullable: true })
  retryOf: string | null = null;
}
