import { randomUUID } from 'node:crypto';
import { Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Organization } from './organization.js';

export const ALERT_CHANNEL_TYPES = ['email', 'slack', 'teams', 'webhook', 'pagerduty', 'sms'] as const;
export type AlertChannelType = (typeof ALERT_CHANNEL_TYPES)[number];
export const CHANNEL_DELIVERY_STATUSES = ['pending', 'delivered', 'retrying', 'failed'] as const;
export type ChannelDeliveryStatus = (typeof CHANNEL_DELIVERY_STATUSES)[number];
/** what a delivery tells the channel: an alert raised, escalated or resolved, or a test message */
export const CHANNEL_MESSAGE_KINDS = ['triggered', 'escalated', 'resolved', 'test', 'automation'] as const;
export type ChannelMessageKind = (typeof CHANNEL_MESSAGE_KINDS)[number];

/**
 * Where an organization's alerts are sent: an email list, a Slack or Teams incoming webhook, a
 * generic webhook, a PagerDuty service (Events API v2) or SMS numbers. `config` holds what may be
 * shown (recipients); `secret` the sealed part (the URL of slack/teams/webhook, PagerDuty's routing
 * key), never returned, only its `secretHint`.
 */
@Entity()
@Index({ properties: ['orgId', 'createdAt'] })
export class AlertChannel extends BaseEntity<'secret' | 'secretHint' | 'enabled' | 'lastDeliveryStatus' | 'lastDeliveryError' | 'lastDeliveryAt' | 'createdBy'> {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'string', length: 20 })
  type!: AlertChannelType;

  /** the shown part of the configuration: `{to: [...]}` for email and sms, `{}` otherwise */
  @Property({ type: 'json' })
  config!: Record<string, unknown>;

  /** ciphertext of the URL (slack, teams, webhook) or routing key (pagerduty) */
  @Property({ type: 'text', nullable: true, hidden: true })
  secret: string | null = null;

  /** a masked form of the secret, enough to recognize it */
  @Property({ type: 'string', length: 255, nullable: true })
  secretHint: string | null = null;

  @Property({ type: 'boolean' })
  enabled = true;

  /** the latest delivery's outcome (kept here so the channel list needs no join) */
  @Property({ type: 'string', length: 20, nullable: true })
  lastDeliveryStatus: ChannelDeliveryStatus | null = null;

  @Property({ type: 'text', nullable: true })
  lastDeliveryError: string | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  lastDeliveryAt: Date | null = null;

  @Property({ type: 'uuid', nullable: true })
  createdBy: string | null = null;
}

/**
 * One message to one channel, across its retries. `dedupKey` makes the policies' fan-out idempotent
 * (the outbox delivers at least once): one delivery per channel and (alert, kind, escalation step).
 */
@Entity()
@Index({ properties: ['channelId', 'createdAt'] })
@Index({
  name: 'alert_channel_delivery_waiting_index',
  expression: `create index "alert_channel_delivery_waiting_index" on "alert_channel_delivery" ("next_attempt_at") where "status" in ('pending', 'retrying')`,
})
@Unique({ properties: ['channelId', 'dedupKey'] })
export class AlertChannelDelivery {
  [OptionalProps]?: 'id' | 'createdAt' | 'status' | 'attempt' | 'alertId' | 'policyId' | 'dedupKey' | 'error' | 'responseStatus' | 'nextAttemptAt' | 'lockedUntil' | 'deliveredAt';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => AlertChannel, { mapToPk: true, fieldName: 'channel_id', deleteRule: 'cascade' })
  channelId!: string;

  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @Property({ type: 'string', length: 20 })
  kind!: ChannelMessageKind;

  /** no foreign key: a delivery outlives the alert it reported */
  @Property({ type: 'uuid', nullable: true })
  alertId: string | null = null;

  @Property({ type: 'uuid', nullable: true })
  policyId: string | null = null;

  @Property({ type: 'string', length: 200, nullable: true })
  dedupKey: string | null = null;

  /** the facts the message is formatted from at send time (`ChannelMessage`) */
  @Property({ type: 'json' })
  message!: Record<string, unknown>;

  @Property({ type: 'string', length: 20 })
  status: ChannelDeliveryStatus = 'pending';

  /** attempts made */
  @Property({ type: 'integer' })
  attempt = 0;

  @Property({ type: 'text', nullable: true })
  error: string | null = null;

  @Property({ type: 'integer', nullable: true })
  responseStatus: number | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  nextAttemptAt: Date | null = null;

  /** a worker holds the row until then while it sends, so two never send it at once */
  @Property({ type: 'timestamptz', nullable: true })
  lockedUntil: Date | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  deliveredAt: Date | null = null;

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();
}
