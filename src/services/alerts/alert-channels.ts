import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { ALERT_CHANNEL_TYPES, AlertChannel, AlertChannelDelivery, CHANNEL_DELIVERY_STATUSES, CHANNEL_MESSAGE_KINDS, type AlertChannelType, type ChannelDeliveryStatus, type ChannelMessageKind } from '../../../entities/alert-channel.js';
import { AlertPolicy } from '../../../entities/alert-policy.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, loadOwned, targetOrgId, visibleSiteIds } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { badRequest, notFound } from '../../errors.js';
import { checkOutboundUrl, UnsafeUrlError } from '../../net/outbound-guard.js';
import { PageQuery, pageOptions, pageSchema, toPage, type Page } from '../../pagination.js';
import { enumValues, parseInput, timestamp, uuid } from '../../validation.js';
import { policyTarget } from './alert-policy-scope.js';
import { checkTargets } from '../devices/api.js';
import { recordAudit } from '../audit/api.js';
import { ChannelSendError, sendThroughChannel, type ChannelMessage, type SendableChannel } from './channel-senders.js';
import { WEBHOOK_PERMISSION, guardOptions } from '../webhooks/api.js';

/*
 * Notification channels of an organization's alerts, and their deliveries: a delivery is queued in
 * the transaction that decides it (a policy's fan-out, an escalation), sent by the `alert-channels.send`
 * job once committed, and retried with backoff (RETRY) until it is delivered or out of attempts. The
 * channel shows its latest outcome (`lastDelivery`).
 */

const RESOURCE = 'Alert channel';
export const SEND_JOB = 'alert-channels.send';
export const SWEEP_JOB = 'alert-channels.sweep';
/** 4 attempts: at once, then after 1, 2 and 4 seconds (an alert is news for minutes, not hours) */
export const RETRY = { maxAttempts: 4, initialDelayMs: 1000, multiplier: 2 };
/** how long a sender holds a claimed delivery: the request timeout and a margin */
const LEASE_MS = 60_000;
/** a due delivery no job picked up for this long (a crash between commit and scheduling) is queued again by the sweep */
const SWEEP_GRACE_MS = 60_000;

export const ALERT_CHANNEL_PERMISSION = { read: 'alerts:read', write: 'alerts:write' } as const;

// ── configuration by type ────────────────────────────────────────────────────────────────────────

const Url = z.string().min(1).max(2048).describe('https only; must pass the outbound address checks');
const EmailConfig = z.strictObject({ to: z.array(z.email({ message: 'must be an email address' })).min(1).max(50) });
const UrlConfig = z.strictObject({ url: Url });
const PagerDutyConfig = z.strictObject({ routingKey: z.string().trim().min(1).max(255) });
const SmsConfig = z.strictObject({ to: z.array(z.string().regex(/^\+[1-9]\d{6,14}$/, 'must be an E.164 phone number (+ and 7 to 15 digits)')).min(1).max(20) });

const CONFIG_SCHEMAS: Record<AlertChannelType, z.ZodObject> = { email: EmailConfig, slack: UrlConfig, teams: UrlConfig, webhook: UrlConfig, pagerduty: PagerDutyConfig, sms: SmsConfig };

type ParsedConfig = { to?: string[]; url?: string; routingKey?: string };

const ChannelTypeSchema = z
  .enum(ALERT_CHANNEL_TYPES)
  .meta({ title: 'AlertChannelType', description: 'Where a channel sends: email (SMTP), slack, teams (incoming webhooks), webhook (generic JSON), pagerduty (Events API v2), sms' })
  .register(enumValues, {
    email: 'An email over SMTP to the addresses of `config.to`.',
    slack: 'A message to a Slack incoming webhook (its URL is the secret).',
    teams: 'A card to a Microsoft Teams incoming webhook (its URL is the secret).',
    webhook: 'A JSON POST of the alert event to a URL (the secret).',
    pagerduty: 'A PagerDuty Events API v2 event with the routing key (the secret): triggers, then resolves, one incident per alert.',
    sms: 'A text message to the E.164 numbers of `config.to`, through the service’s SMS provider.',
  });
const DeliveryStatusSchema = z
  .enum(CHANNEL_DELIVERY_STATUSES)
  .meta({ title: 'AlertChannelDeliveryStatus', description: 'pending (not tried yet), delivered, retrying (failed, will be tried again) or failed (out of attempts)' })
  .register(enumValues, {
    pending: 'Queued, not tried yet.',
    delivered: 'The channel accepted it.',
    retrying: 'The latest attempt failed; it is tried again at `nextAttemptAt`.',
    failed: 'Out of attempts: it is not tried again.',
  });
const ConfigInput = z
  .record(z.string(), z.unknown())
  .describe('by type: email `{to: [addresses]}`; slack, teams, webhook `{url}`; pagerduty `{routingKey}`; sms `{to: [E.164 numbers]}`');

// ── inputs and views ─────────────────────────────────────────────────────────────────────────────

const Name = z.string().trim().min(1).max(255);

export const CreateAlertChannelSchema = z.strictObject({
  orgId: uuid().optional().describe('required for partner and system callers'),
  name: Name.describe('shown in lists and messages'),
  type: ChannelTypeSchema.describe('cannot change later'),
  config: ConfigInput,
  enabled: z.boolean().optional().describe('default true; a disabled channel receives nothing'),
}).meta({ title: 'CreateAlertChannelInput', description: 'A new alert channel of an organization' });
export type CreateAlertChannelInput = z.input<typeof CreateAlertChannelSchema>;

export const UpdateAlertChannelSchema = z
  .strictObject({
    name: Name.optional().describe('a new name'),
    config: ConfigInput.optional().describe("replaces the whole configuration (the channel's type stays)"),
    enabled: z.boolean().optional().describe('false: the channel receives no alerts until enabled again'),
  })
  .meta({ title: 'UpdateAlertChannelInput', description: 'The fields to change; at least one' })
  .refine((input) => Object.values(input).some((v) => v !== undefined), 'Provide at least one field to change');
export type UpdateAlertChannelInput = z.input<typeof UpdateAlertChannelSchema>;

export const ListAlertChannelsQuery = PageQuery.extend({
  orgId: uuid().optional().describe('required for partner and system callers'),
  type: ChannelTypeSchema.optional().describe('only channels of this type'),
}).strict();
export type ListAlertChannelsInput = z.input<typeof ListAlertChannelsQuery>;

const LastDeliverySchema = z
  .object({
    status: DeliveryStatusSchema.describe('its state after the latest attempt'),
    error: z.string().nullable().describe('what went wrong with the latest attempt; null once delivered'),
    at: timestamp().describe('when the latest attempt ended'),
  })
  .meta({ title: 'AlertChannelLastDelivery', description: "The channel's latest delivery (retrying: it failed and will be tried again; failed: out of attempts)" });

export const AlertChannelViewSchema = z
  .object({
    id: uuid().describe('the channel'),
    orgId: uuid().describe('the organization it belongs to'),
    name: z.string().describe('shown in lists and messages'),
    type: ChannelTypeSchema.describe('where it sends'),
    config: z
      .object({
        to: z.array(z.string()).optional().describe('email and sms: the recipients'),
        url: z.string().optional().describe('slack, teams, webhook: a masked hint of the URL (the URL itself is write-only)'),
        routingKey: z.string().optional().describe('pagerduty: a masked hint of the routing key (write-only)'),
      })
      .meta({ title: 'AlertChannelConfig', description: 'The configuration as shown: secrets appear as masked hints only' }),
    enabled: z.boolean().describe('a disabled channel receives no alerts'),
    lastDelivery: LastDeliverySchema.nullable().describe('the latest delivery’s outcome; null before the first'),
    createdBy: uuid().nullable().describe('the user who created it'),
    createdAt: timestamp().describe('when it was created'),
    updatedAt: timestamp().describe('when it last changed'),
  })
  .meta({ title: 'AlertChannel', description: "A destination of an organization's alert notifications" });
export type AlertChannelView = z.output<typeof AlertChannelViewSchema>;
export const AlertChannelPageSchema = pageSchema(AlertChannelViewSchema, 'AlertChannelPage').meta({ title: 'AlertChannelPage', description: 'A page of alert channels, newest first' });

export const AlertChannelTestResultSchema = z
  .object({
    success: z.boolean().describe('whether the test message was delivered'),
    status: DeliveryStatusSchema.describe('delivered, or retrying: it failed and will be tried again like any delivery'),
    error: z.string().nullable().describe('what went wrong; null when delivered'),
    responseStatus: z.number().int().nullable().describe('the receiver’s HTTP status (null for email, or when no answer came)'),
    deliveryId: uuid().describe('the delivery recorded for the test'),
  })
  .meta({ title: 'AlertChannelTestResult', description: 'The outcome of a test message' });
export type AlertChannelTestResult = z.output<typeof AlertChannelTestResultSchema>;

/** The secret as responses hint at it: a URL's origin and its last four characters, a key's last four. */
function hintOf(type: AlertChannelType, secret: string): string {
  const tail = secret.length > 12 ? secret.slice(-4) : '';
  if (type === 'pagerduty') return `••••${tail}`;
  return `${new URL(secret).origin}/••••${tail}`;
}

function channelView(channel: AlertChannel): AlertChannelView {
  const config: AlertChannelView['config'] = {};
  if (channel.type === 'email' || channel.type === 'sms') config.to = (channel.config as ParsedConfig).to ?? [];
  else if (channel.type === 'pagerduty') config.routingKey = channel.secretHint ?? '';
  else config.url = channel.secretHint ?? '';
  return {
    id: channel.id,
    orgId: channel.orgId,
    name: channel.name,
    type: channel.type,
    config,
    enabled: channel.enabled,
    lastDelivery: channel.lastDeliveryStatus && channel.lastDeliveryAt ? { status: channel.lastDeliveryStatus, error: channel.lastDeliveryError, at: channel.lastDeliveryAt.toISOString() } : null,
    createdBy: channel.createdBy,
    createdAt: channel.createdAt.toISOString(),
    updatedAt: channel.updatedAt.toISOString(),
  };
}

/** The type's configuration, checked (a 400 names `config.<field>`), its URL passed through the SSRF guard. */
async function parseConfig(ctx: RequestContext, type: AlertChannelType, raw: Record<string, unknown>): Promise<ParsedConfig> {
  const { config } = parseInput(z.object({ config: CONFIG_SCHEMAS[type] }), { config: raw }) as { config: ParsedConfig };
  if (config.url !== undefined) {
    try {
      await checkOutboundUrl(config.url, guardOptions(ctx));
    } catch (error) {
      if (error instanceof UnsafeUrlError) throw badRequest(`config.url: ${error.message}`, [{ path: 'config.url', message: error.message }]);
      throw error;
    }
  }
  return config;
}

/** What is stored of a configuration: the shown part in `config`, the secret sealed, and its hint. */
function sealConfig(ctx: RequestContext, type: AlertChannelType, config: ParsedConfig): Pick<AlertChannel, 'config' | 'secret' | 'secretHint'> {
  const secret = config.url ?? config.routingKey ?? null;
  return {
    config: config.to ? { to: [...new Set(config.to)] } : {},
    secret: secret === null ? null : ctx.runtime.secrets.encrypt(secret),
    secretHint: secret === null ? null : hintOf(type, secret),
  };
}

/**
 * Setting where a slack, teams or webhook channel sends (its outbound URL) needs what webhooks need
 * (`organizations:write`, with MFA) besides `alerts:write`: both send the organization's data to the
 * address given. Other channel edits keep `alerts:write` alone.
 */
async function authorizeOutboundUrl(ctx: RequestContext, orgId: string, type: AlertChannelType): Promise<void> {
  if (CONFIG_SCHEMAS[type] === UrlConfig) await authorize(ctx, WEBHOOK_PERMISSION.write, { orgId, mfa: true, resource: RESOURCE });
}

/** A channel the caller may read (`write`: change, with MFA, as its secrets send data out); another tenant's is 404. */
export function requireAlertChannel(ctx: RequestContext, id: string, access: 'read' | 'write'): Promise<AlertChannel> {
  return loadOwned(ctx, AlertChannel, id, ALERT_CHANNEL_PERMISSION[access], { resource: RESOURCE, mfa: access === 'write' });
}

/** Other domains naming channels (an automation's notify steps): all must be the organization's, else 404 as another tenant's. */
export async function requireOrgChannels(tx: RequestContext, orgId: string, ids: readonly string[]): Promise<void> {
  if (ids.length > 0 && (await tx.em.count(AlertChannel, { id: { $in: [...ids] }, orgId })) !== ids.length) throw notFound(RESOURCE);
}

export async function listAlertChannels(ctx: RequestContext, raw: ListAlertChannelsInput): Promise<Page<AlertChannelView>> {
  const query = parseInput(ListAlertChannelsQuery, raw);
  const orgId = await targetOrgId(ctx, query.orgId, RESOURCE);
  await authorize(ctx, ALERT_CHANNEL_PERMISSION.read, { orgId, resource: RESOURCE });
  const where = { orgId, ...(query.type ? { type: query.type } : {}) };
  const [rows, total] = await ctx.em.findAndCount(AlertChannel, where, { orderBy: { createdAt: 'desc', id: 'desc' }, ...pageOptions(query) });
  return toPage(rows.map(channelView), total, query);
}

export async function getAlertChannel(ctx: RequestContext, id: string): Promise<AlertChannelView> {
  return channelView(await requireAlertChannel(ctx, id, 'read'));
}

export async function createAlertChannel(ctx: RequestContext, raw: CreateAlertChannelInput): Promise<AlertChannelView> {
  const input = parseInput(CreateAlertChannelSchema, raw);
  const orgId = await targetOrgId(ctx, input.orgId, RESOURCE);
  const principal = await authorize(ctx, ALERT_CHANNEL_PERMISSION.write, { orgId, mfa: true, resource: RESOURCE });
  await authorizeOutboundUrl(ctx, orgId, input.type);
  const config = await parseConfig(ctx, input.type, input.config);
  return withTransaction(ctx, async (tx) => {
    const channel = tx.em.create(AlertChannel, { orgId, name: input.name, type: input.type, ...sealConfig(tx, input.type, config), enabled: input.enabled ?? true, createdBy: principal.userId });
    await tx.em.flush();
    await recordAudit(tx, { action: 'alert_channel.create', resourceType: 'alert_channel', resourceId: channel.id, orgId, changes: ['name', 'type', 'config'], details: { name: channel.name, type: channel.type } });
    return channelView(channel);
  });
}

/**
 * Users limited to some sites change only channels that just policies within their sites use:
 * another policy's channel, repointed, would bring them its alerts.
 */
async function checkPolicyTargets(ctx: RequestContext, channel: AlertChannel): Promise<void> {
  if (!visibleSiteIds(ctx, channel.orgId)) return;
  for (const policy of await ctx.em.find(AlertPolicy, { orgId: channel.orgId })) {
    if (policy.channelIds.includes(channel.id) || policy.escalationSteps.some((step) => step.channelIds.includes(channel.id))) await checkTargets(ctx, policyTarget(policy), { stored: true });
  }
}

export async function updateAlertChannel(ctx: RequestContext, id: string, raw: UpdateAlertChannelInput): Promise<AlertChannelView> {
  const input = parseInput(UpdateAlertChannelSchema, raw);
  const channel = await requireAlertChannel(ctx, id, 'write');
  await checkPolicyTargets(ctx, channel);
  if (input.config !== undefined) await authorizeOutboundUrl(ctx, channel.orgId, channel.type);
  const config = input.config === undefined ? undefined : await parseConfig(ctx, channel.type, input.config);
  return withTransaction(ctx, async (tx) => {
    const changes = Object.entries(input)
      .filter(([, value]) => value !== undefined)
      .map(([field]) => field);
    if (input.name !== undefined) channel.name = input.name;
    if (input.enabled !== undefined) channel.enabled = input.enabled;
    if (config) Object.assign(channel, sealConfig(tx, channel.type, config));
    await tx.em.persistAndFlush(channel);
    await recordAudit(tx, { action: 'alert_channel.update', resourceType: 'alert_channel', resourceId: channel.id, orgId: channel.orgId, changes, details: { name: channel.name } });
    return channelView(channel);
  });
}

/** The channel and its deliveries go; the policies naming it lose it. */
export async function deleteAlertChannel(ctx: RequestContext, id: string): Promise<void> {
  const channel = await requireAlertChannel(ctx, id, 'write');
  await checkPolicyTargets(ctx, channel);
  await withTransaction(ctx, async (tx) => {
    await tx.em.nativeDelete(AlertChannel, { id: channel.id });
    // Policies keep their other channels.
    for (const policy of await tx.em.find(AlertPolicy, { orgId: channel.orgId })) {
      const steps = policy.escalationSteps.map((step) => ({ ...step, channelIds: step.channelIds.filter((c) => c !== channel.id) }));
      if (!policy.channelIds.includes(channel.id) && steps.every((step, i) => step.channelIds.length === policy.escalationSteps[i]!.channelIds.length)) continue;
      policy.channelIds = policy.channelIds.filter((c) => c !== channel.id);
      policy.escalationSteps = steps;
    }
    await tx.em.flush();
    await recordAudit(tx, { action: 'alert_channel.delete', resourceType: 'alert_channel', resourceId: channel.id, orgId: channel.orgId, details: { name: channel.name, type: channel.type } });
  });
}

// ── deliveries ───────────────────────────────────────────────────────────────────────────────────

const MessageKindSchema = z
  .enum(CHANNEL_MESSAGE_KINDS)
  .meta({ title: 'AlertChannelMessageKind', description: 'What a delivery told the channel: an alert triggered, escalated or resolved, a test, or an automation step' })
  .register(enumValues, {
    triggered: 'An alert was raised, sent by a policy that takes it.',
    escalated: 'An alert was still unacknowledged when an escalation step of its policy came due.',
    resolved: 'An alert the channel was told of is resolved.',
    test: 'A test message someone asked for; about no alert.',
    automation: "An automation's notify step (or its onFailure: notify); about no alert.",
  });

export const ListChannelDeliveriesQuery = PageQuery.extend({
  status: DeliveryStatusSchema.optional().describe('only deliveries in this state'),
}).strict();
export type ListChannelDeliveriesInput = z.input<typeof ListChannelDeliveriesQuery>;

export const ChannelDeliveryViewSchema = z
  .object({
    id: uuid().describe('the delivery'),
    channelId: uuid().describe('the channel it went to'),
    kind: MessageKindSchema.describe('what it told the channel'),
    alertId: uuid().nullable().describe('the alert it was about; null for tests'),
    policyId: uuid().nullable().describe('the policy that sent it; null for tests'),
    status: DeliveryStatusSchema.describe('its state'),
    attempt: z.number().int().describe('attempts made'),
    error: z.string().nullable().describe('what went wrong with the latest attempt'),
    responseStatus: z.number().int().nullable().describe('the receiver’s HTTP status at the latest attempt'),
    nextAttemptAt: timestamp().nullable().describe('retrying: when it is tried again'),
    deliveredAt: timestamp().nullable().describe('when it was delivered'),
    createdAt: timestamp().describe('when it was queued'),
  })
  .meta({ title: 'AlertChannelDelivery', description: 'One message to a channel, across its attempts' });
export type ChannelDeliveryView = z.output<typeof ChannelDeliveryViewSchema>;
export const ChannelDeliveryPageSchema = pageSchema(ChannelDeliveryViewSchema, 'AlertChannelDeliveryPage').meta({ title: 'AlertChannelDeliveryPage', description: 'A page of a channel’s deliveries, newest first' });

const iso = (d: Date | null) => d?.toISOString() ?? null;

/** A channel's deliveries, newest first. */
export async function listChannelDeliveries(ctx: RequestContext, channelId: string, raw: ListChannelDeliveriesInput): Promise<Page<ChannelDeliveryView>> {
  const query = parseInput(ListChannelDeliveriesQuery, raw);
  const channel = await requireAlertChannel(ctx, channelId, 'read');
  const where = { channelId: channel.id, ...(query.status ? { status: query.status } : {}) };
  const [rows, total] = await ctx.em.findAndCount(AlertChannelDelivery, where, { orderBy: { createdAt: 'desc', id: 'desc' }, ...pageOptions(query) });
  return toPage(
    rows.map((d) => ({
      id: d.id,
      channelId: d.channelId,
      kind: d.kind,
      alertId: d.alertId,
      policyId: d.policyId,
      status: d.status,
      attempt: d.attempt,
      error: d.error,
      responseStatus: d.responseStatus,
      nextAttemptAt: iso(d.nextAttemptAt),
      deliveredAt: iso(d.deliveredAt),
      createdAt: d.createdAt.toISOString(),
    })),
    total,
    query,
  );
}

export interface QueuedMessage {
  channelId: string;
  orgId: string;
  kind: ChannelMessageKind;
  alertId: string | null;
  policyId: string | null;
  /** one delivery per channel and key: a repeated fan-out adds nothing */
  dedupKey: string;
  message: ChannelMessage;
}

/**
 * Queues messages in the caller's transaction (enabled channels of the message's organization only; one per channel and dedup key)
 * and schedules their sends once it commits. Answers how many were new.
 */
export async function queueChannelMessages(tx: RequestContext, messages: QueuedMessage[]): Promise<number> {
  if (messages.length === 0) return 0;
  const now = tx.runtime.clock.now();
  const values = messages.map(() => '(?::uuid, ?::uuid, ?::uuid, ?, ?::uuid, ?::uuid, ?, ?::jsonb, ?::timestamptz, ?::timestamptz)').join(', ');
  const params = messages.flatMap((m) => [randomUUID(), m.channelId, m.orgId, m.kind, m.alertId, m.policyId, m.dedupKey, JSON.stringify(m.message), now, now]);
  const rows = (await tx.em.execute(
    `insert into alert_channel_delivery (id, channel_id, org_id, kind, alert_id, policy_id, dedup_key, message, next_attempt_at, created_at)
     select v.* from (values ${values}) as v(id, channel_id, org_id, kind, alert_id, policy_id, dedup_key, message, next_attempt_at, created_at)
     join alert_channel c on c.id = v.channel_id and c.org_id = v.org_id and c.enabled
     on conflict (channel_id, dedup_key) do nothing returning id`,
    params,
  )) as { id: string }[];
  const ids = rows.map((r) => r.id);
  if (ids.length > 0) tx.afterCommit(() => Promise.all(ids.map((deliveryId) => tx.runtime.jobs.schedule(SEND_JOB, { deliveryId }))).then(() => undefined));
  return ids.length;
}

export const SendJobSchema = z.object({ deliveryId: uuid() });

function retryDelayMs(attempt: number): number {
  return RETRY.initialDelayMs * RETRY.multiplier ** (attempt - 1);
}

function unsealed(ctx: RequestContext, channel: AlertChannel): SendableChannel {
  return { id: channel.id, type: channel.type, config: channel.config as ParsedConfig, secret: channel.secret === null ? null : ctx.runtime.secrets.decrypt(channel.secret) };
}

interface Outcome {
  ok: boolean;
  error: string | null;
  responseStatus: number | null;
}

async function attempt(ctx: RequestContext, channel: AlertChannel, delivery: Pick<AlertChannelDelivery, 'id' | 'message'>): Promise<Outcome> {
  try {
    const responseStatus = await sendThroughChannel(ctx, unsealed(ctx, channel), delivery.message as unknown as ChannelMessage, delivery.id);
    return { ok: true, error: null, responseStatus };
  } catch (error) {
    if (error instanceof ChannelSendError) return { ok: false, error: error.message.slice(0, 1000), responseStatus: error.responseStatus };
    throw error;
  }
}

/** Writes an attempt's outcome on the delivery and its channel, and schedules the retry once committed; answers the delivery's new status. */
function record(ctx: RequestContext, delivery: AlertChannelDelivery, outcome: Outcome, retries: boolean): Promise<ChannelDeliveryStatus> {
  return withTransaction(ctx, async (tx) => {
    const now = tx.runtime.clock.now();
    const status = outcome.ok ? 'delivered' : retries && delivery.attempt < RETRY.maxAttempts ? 'retrying' : 'failed';
    const nextAttemptAt = status === 'retrying' ? new Date(now.getTime() + retryDelayMs(delivery.attempt)) : null;
    await tx.em.nativeUpdate(
      AlertChannelDelivery,
      { id: delivery.id },
      { status, error: outcome.error, responseStatus: outcome.responseStatus, nextAttemptAt, lockedUntil: null, deliveredAt: outcome.ok ? now : null },
    );
    await tx.em.nativeUpdate(AlertChannel, { id: delivery.channelId }, { lastDeliveryStatus: status, lastDeliveryError: outcome.error, lastDeliveryAt: now });
    if (nextAttemptAt) tx.afterCommit(() => tx.runtime.jobs.schedule(SEND_JOB, { deliveryId: delivery.id }, nextAttemptAt));
    return status;
  });
}

/**
 * The `alert-channels.send` job: claims the delivery (a lease, so two instances never send it at
 * once), sends it, records the outcome and schedules the retry.
 */
export async function sendDelivery(ctx: RequestContext, deliveryId: string): Promise<void> {
  const now = ctx.runtime.clock.now();
  const claimed = (await ctx.em.execute(
    `update alert_channel_delivery set attempt = attempt + 1, locked_until = ?
      where id = ? and status in ('pending', 'retrying') and (locked_until is null or locked_until < ?) returning id`,
    [new Date(now.getTime() + LEASE_MS), deliveryId, now],
  )) as { id: string }[];
  if (claimed.length === 0) return;
  const delivery = await ctx.em.findOneOrFail(AlertChannelDelivery, { id: deliveryId }, { refresh: true });
  const channel = await ctx.em.findOne(AlertChannel, { id: delivery.channelId });
  if (!channel) return;
  const outcome = channel.enabled ? await attempt(ctx, channel, delivery) : { ok: false, error: 'The channel is disabled', responseStatus: null };
  await record(ctx, delivery, outcome, channel.enabled);
}

/** The backstop: due deliveries no job is about to send (lost between a commit and its scheduling, or a crash) are queued again. */
export async function sweepChannelDeliveries(ctx: RequestContext): Promise<number> {
  const now = ctx.runtime.clock.now();
  const rows = (await ctx.em.execute(
    `select id from alert_channel_delivery where status in ('pending', 'retrying') and next_attempt_at < ? and (locked_until is null or locked_until < ?) limit 500`,
    [new Date(now.getTime() - SWEEP_GRACE_MS), now],
  )) as { id: string }[];
  for (const row of rows) await ctx.runtime.jobs.schedule(SEND_JOB, { deliveryId: row.id });
  return rows.length;
}

/**
 * Sends a test message through the channel now and answers the outcome of that attempt, which the
 * channel also shows; a failed test is retried like any delivery (the answer says `retrying`).
 */
export async function testAlertChannel(ctx: RequestContext, id: string): Promise<AlertChannelTestResult> {
  const channel = await requireAlertChannel(ctx, id, 'write');
  const now = ctx.runtime.clock.now();
  const message: ChannelMessage = {
    kind: 'test',
    orgId: channel.orgId,
    alertId: null,
    title: `Test message for channel "${channel.name}"`,
    message: 'This is a test notification from rmm-service.',
    severity: 'info',
    status: 'test',
    deviceId: null,
    ruleId: null,
    triggeredAt: null,
    escalationStep: null,
    timestamp: now.toISOString(),
  };
  const delivery = await withTransaction(ctx, async (tx) => {
    const created = tx.em.create(AlertChannelDelivery, { channelId: channel.id, orgId: channel.orgId, kind: 'test', message: message as unknown as Record<string, unknown>, attempt: 1, createdAt: now });
    await tx.em.flush();
    await recordAudit(tx, { action: 'alert_channel.test', resourceType: 'alert_channel', resourceId: channel.id, orgId: channel.orgId, details: { name: channel.name, type: channel.type } });
    return created;
  });
  const outcome = await attempt(ctx, channel, delivery);
  const status = await record(ctx, delivery, outcome, true);
  return { success: outcome.ok, status, error: outcome.error, responseStatus: outcome.responseStatus, deliveryId: delivery.id };
}
