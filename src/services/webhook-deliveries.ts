import crypto, { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { Webhook, WebhookDelivery, type WebhookDeliveryStatus, type WebhookRetryPolicy } from '../../entities/webhook.js';
import type { RequestContext } from '../auth/context.js';
import { authorize, canAccessOrg, isUuid, targetOrgId } from '../auth/policy.js';
import { withTransaction } from '../db/transaction.js';
import { badRequest, notFound } from '../errors.js';
import { filterIterable } from '../events/subscriptions.js';
import type { DomainEvent } from '../events/types.js';
import { guardedRequest, UnsafeUrlError } from '../net/outbound-guard.js';
import { CursorQuery, encodeCursor, finishCursorPage, keysetWhere, pageOptions, PageQuery, toPage, type Page } from '../pagination.js';
import { parseInput, queryBoolean, timestamp, uuid } from '../validation.js';
import { recordAudit } from './audit.js';
import { effectiveRetryPolicy, guardOptions, isReservedHeader, requireWebhook, unsealWebhook } from './webhooks.js';

export const DELIVER_JOB = 'webhooks.deliver';
export const SWEEP_JOB = 'webhooks.sweep';
export const DELIVERY_UPDATED_TOPIC = 'webhook-delivery-updated';
export const WEBHOOK_USER_AGENT = 'Service-Webhooks/1.0';
const MAX_STORED_RESPONSE_CHARS = 1000;
const MAX_DELIVERY_PAGE = 100;
// Agenda may fire a job a moment before the stored due time; within this margin the claim still succeeds.
const CLAIM_EARLY_TOLERANCE_MS = 500;
// A claim outlives the request timeout by this much, and stays under the job's lock lifetime (60 s).
const LEASE_MARGIN_MS = 15_000;
const SWEEP_BATCH = 500;

const DeliveryStatus = z.enum(['pending', 'delivered', 'failed', 'retrying']).meta({ title: 'WebhookDeliveryStatus' });

export const ListDeliveriesQuery = z.strictObject({
  page: z.coerce.number().int().min(1).default(1),
  limit: z.coerce.number().int().min(1).max(MAX_DELIVERY_PAGE).default(50),
  status: DeliveryStatus.optional(),
});

export const DeliveriesConnectionArgs = z.strictObject({
  first: z.number().int().min(1).max(MAX_DELIVERY_PAGE).default(50).describe(`1 to ${MAX_DELIVERY_PAGE}`),
  after: CursorQuery.shape.cursor,
  status: DeliveryStatus.optional(),
});

export type DeliveriesConnectionInput = z.input<typeof DeliveriesConnectionArgs>;

export const TestWebhookSchema = z.strictObject({
  // Any name: a receiver may want to see how it handles a type it does not know.
  event: z.string().trim().min(1).max(100).default('webhook.test'),
  payload: z.record(z.string(), z.unknown()).optional(),
});
export type TestWebhookInput = z.input<typeof TestWebhookSchema>;

export const ListDeadLettersQuery = PageQuery.extend({
  orgId: uuid().optional().describe('required for partner and system callers'),
  webhookId: uuid().optional(),
  redriven: z.boolean().or(queryBoolean).optional().describe('true: only re-driven ones; false: only those never re-driven'),
}).strict();
export type ListDeadLettersInput = z.input<typeof ListDeadLettersQuery>;

export const WebhookDeliveryViewSchema = z
  .object({
    id: uuid(),
    webhookId: uuid(),
    orgId: uuid(),
    status: DeliveryStatus,
    event: z.string(),
    eventId: z.string(),
    payload: z.record(z.string(), z.unknown()),
    responseStatus: z.number().int().nullable(),
    responseBody: z.string().nullable().describe('first 1,000 characters'),
    attempt: z.number().int().describe('attempts made'),
    nextAttemptAt: timestamp().nullable(),
    responseTimeMs: z.number().int().nullable(),
    errorMessage: z.string().nullable(),
    createdAt: timestamp(),
    deliveredAt: timestamp().nullable(),
    deadLetteredAt: timestamp().nullable().describe('when it entered the dead-letter queue'),
    redrivenAt: timestamp().nullable(),
    retryOf: uuid().nullable().describe('the failed delivery this one re-drives'),
  })
  .meta({ title: 'WebhookDelivery' });
export type WebhookDeliveryView = z.output<typeof WebhookDeliveryViewSchema>;

/** What the `webhookDeliveryUpdated` subscription carries: ids and status only (NOTIFY payloads are small). */
export const DeliveryUpdateSchema = z
  .object({ id: uuid(), webhookId: uuid(), orgId: uuid(), status: DeliveryStatus, attempt: z.number().int(), event: z.string() })
  .meta({ title: 'WebhookDeliveryUpdate', description: 'A delivery changed state' });
export type DeliveryUpdate = z.output<typeof DeliveryUpdateSchema>;

/** The answers of the test and retry operations: the queued delivery, as the spec shows it. */
export const WebhookTestResultSchema = z
  .object({
    message: z.string(),
    delivery: z
      .object({ id: uuid(), webhookId: uuid(), status: DeliveryStatus, event: z.string(), attempt: z.number().int() })
      .meta({ title: 'WebhookTestDelivery' }),
  })
  .meta({ title: 'WebhookTestResult' });
export const WebhookRetryResultSchema = z
  .object({
    message: z.string(),
    delivery: z.object({ id: uuid(), status: DeliveryStatus, attempt: z.number().int() }).meta({ title: 'WebhookRetriedDelivery' }),
  })
  .meta({ title: 'WebhookRetryResult' });

export interface DeliverJobData {
  deliveryId: string;
}

const iso = (date: Date | null) => date?.toISOString() ?? null;

export function deliveryView(d: WebhookDelivery): WebhookDeliveryView {
  return {
    id: d.id,
    webhookId: d.webhookId,
    orgId: d.orgId,
    status: d.status,
    event: d.event,
    eventId: d.eventId,
    payload: d.payload,
    responseStatus: d.responseStatus,
    responseBody: d.responseBody,
    attempt: d.attempt,
    nextAttemptAt: iso(d.nextAttemptAt),
    responseTimeMs: d.responseTimeMs,
    errorMessage: d.errorMessage,
    createdAt: d.createdAt.toISOString(),
    deliveredAt: iso(d.deliveredAt),
    deadLetteredAt: iso(d.deadLetteredAt),
    redrivenAt: iso(d.redrivenAt),
    retryOf: d.retryOf,
  };
}

/** Delay before retry number `retry + 1`: `min(initialDelay * multiplier^retry, maxDelay)` (defaults: 1, 2, 4, 8, 16 s). */
export function retryDelayMs(policy: WebhookRetryPolicy, retry: number): number {
  return Math.min(policy.initialDelayMs * policy.backoffMultiplier ** retry, policy.maxDelayMs);
}

/** The exact bytes POSTed, with the payload fields in the documented order. */
export function deliveryBody(payload: Record<string, unknown>): string {
  const { id, type, timestamp, orgId, data } = payload;
  return JSON.stringify({ id, type, timestamp, orgId, data });
}

/** `sha256=` + hex HMAC-SHA256 of `<timestamp>.<raw body>` keyed with the webhook's secret. */
export function signDelivery(secret: string, timestamp: string, body: string): string {
  return `sha256=${crypto.createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex')}`;
}

// ---- reads ----------------------------------------------------------------

export async function listDeliveries(ctx: RequestContext, webhookId: string, raw: z.input<typeof ListDeliveriesQuery>): Promise<Page<WebhookDeliveryView>> {
  const query = parseInput(ListDeliveriesQuery, raw);
  const webhook = await requireWebhook(ctx, webhookId, 'read');
  const where = { webhookId: webhook.id, ...(query.status ? { status: query.status } : {}) };
  const [rows, total] = await ctx.em.findAndCount(WebhookDelivery, where, { orderBy: { createdAt: 'desc', id: 'desc' }, ...pageOptions(query) });
  return toPage(rows.map(deliveryView), total, query);
}

export interface DeliveryConnection {
  edges: { node: WebhookDeliveryView; cursor: string }[];
  pageInfo: { hasNextPage: boolean; endCursor: string | null };
  totalCount: number;
}

/** Keyset-paged deliveries, newest first, as a GraphQL connection. */
export async function deliveriesConnection(ctx: RequestContext, webhookId: string, raw: DeliveriesConnectionInput): Promise<DeliveryConnection> {
  const args = parseInput(DeliveriesConnectionArgs, raw);
  const webhook = await requireWebhook(ctx, webhookId, 'read');
  const base = { webhookId: webhook.id, ...(args.status ? { status: args.status } : {}) };
  const keyset = keysetWhere('createdAt', 'date', 'desc', args.after);
  const [rows, totalCount] = await Promise.all([
    ctx.em.find(WebhookDelivery, { ...base, ...keyset.where }, { orderBy: keyset.orderBy, limit: args.first + 1 }),
    ctx.em.count(WebhookDelivery, base),
  ]);
  const sortValue = (d: WebhookDelivery) => d.createdAt.toISOString();
  const page = finishCursorPage(rows, args.first, sortValue);
  const edges = page.items.map((d) => ({ node: deliveryView(d), cursor: encodeCursor({ value: sortValue(d), id: d.id }) }));
  return { edges, pageInfo: { hasNextPage: page.nextCursor !== null, endCursor: edges.at(-1)?.cursor ?? null }, totalCount };
}

/** Deliveries that ended `failed` (the dead-letter queue) of one organization, newest first. Re-drive them with `retryDelivery`. */
export async function listDeadLetters(ctx: RequestContext, raw: ListDeadLettersInput): Promise<Page<WebhookDeliveryView>> {
  const query = parseInput(ListDeadLettersQuery, raw);
  const orgId = await targetOrgId(ctx, query.orgId, 'Webhook');
  await authorize(ctx, 'organizations:read', { orgId, resource: 'Webhook' });
  const where = {
    orgId,
    deadLetteredAt: { $ne: null },
    ...(query.webhookId ? { webhookId: query.webhookId } : {}),
    ...(query.redriven === undefined ? {} : { redrivenAt: query.redriven ? { $ne: null } : null }),
  };
  const [rows, total] = await ctx.em.findAndCount(WebhookDelivery, where, { orderBy: { deadLetteredAt: 'desc', id: 'desc' }, ...pageOptions(query) });
  return toPage(rows.map(deliveryView), total, query);
}

/** Live delivery state changes of the webhooks the caller can see (one webhook when `webhookId` is given), from any instance. */
export async function subscribeDeliveryUpdates(ctx: RequestContext, webhookId: string | null): Promise<AsyncIterable<DeliveryUpdate>> {
  if (webhookId) await requireWebhook(ctx, webhookId, 'read');
  else await authorize(ctx, 'organizations:read');
  return filterIterable<DeliveryUpdate>(
    ctx.runtime.pubsub.subscribe(DELIVERY_UPDATED_TOPIC),
    async (update) => (!webhookId || update.webhookId === webhookId) && canAccessOrg(ctx, update.orgId),
  );
}

// ---- operations -----------------------------------------------------------

/** Sends one delivery through the normal pipeline (URL check, signing, retries) and answers before it is attempted. */
export async function testWebhook(ctx: RequestContext, webhookId: string, raw: TestWebhookInput = {}): Promise<z.output<typeof WebhookTestResultSchema>> {
  const input = parseInput(TestWebhookSchema, raw ?? {});
  const webhook = await requireWebhook(ctx, webhookId, 'write');
  const eventId = randomUUID();
  const timestamp = new Date().toISOString();
  const data = input.payload ?? { message: 'Test delivery from the webhook test operation', timestamp, webhookId: webhook.id };
  const delivery = await withTransaction(ctx, async (tx) => {
    const created = tx.em.create(WebhookDelivery, {
      webhookId: webhook.id,
      orgId: webhook.orgId,
      event: input.event,
      eventId,
      payload: { id: eventId, type: input.event, timestamp, orgId: webhook.orgId, data },
    });
    await tx.em.flush();
    await recordAudit(tx, {
      action: 'webhook.test',
      resourceType: 'webhook',
      resourceId: webhook.id,
      orgId: webhook.orgId,
      details: { deliveryId: created.id, event: input.event },
    });
    return created;
  });
  await queueAndAnnounce(ctx, delivery);
  return {
    message: 'Test delivery queued',
    delivery: { id: delivery.id, webhookId: delivery.webhookId, status: delivery.status, event: delivery.event, attempt: delivery.attempt },
  };
}

/** Re-drives a failed delivery (a dead letter) as a new record; the original stays as it was. */
export async function retryDelivery(ctx: RequestContext, webhookId: string, deliveryId: string): Promise<z.output<typeof WebhookRetryResultSchema>> {
  const webhook = await requireWebhook(ctx, webhookId, 'write');
  const original = isUuid(deliveryId) ? await ctx.em.findOne(WebhookDelivery, { id: deliveryId, webhookId: webhook.id }) : null;
  if (!original) throw notFound('Delivery');
  if (original.status !== 'failed') throw badRequest('Only failed deliveries can be retried');
  const delivery = await withTransaction(ctx, async (tx) => {
    const created = tx.em.create(WebhookDelivery, {
      webhookId: webhook.id,
      orgId: webhook.orgId,
      event: original.event,
      eventId: original.eventId,
      payload: original.payload,
      retryOf: original.id,
    });
    await tx.em.flush();
    await tx.em.nativeUpdate(WebhookDelivery, { id: original.id }, { redrivenAt: created.createdAt });
    await recordAudit(tx, {
      action: 'webhook.retry',
      resourceType: 'webhook',
      resourceId: webhook.id,
      orgId: webhook.orgId,
      details: { deliveryId: created.id, retryOf: original.id },
    });
    return created;
  });
  await queueAndAnnounce(ctx, delivery);
  return { message: 'Delivery queued for retry', delivery: { id: delivery.id, status: delivery.status, attempt: delivery.attempt } };
}

/**
 * The outbox subscriber's work, inside the dispatcher's transaction: one pending delivery and one job
 * per active webhook of the event's organization subscribed to its type. `on conflict do nothing` on
 * (webhook, event) makes a redelivered event a no-op.
 */
export async function fanOutEvent(tx: RequestContext, event: DomainEvent): Promise<void> {
  if (!event.orgId) return;
  const orgId = event.orgId;
  const webhooks = (await tx.em.find(Webhook, { orgId, status: 'active' })).filter((w) => w.events.includes(event.type));
  if (webhooks.length === 0) return;
  const payload = { id: event.id, type: event.type, timestamp: event.timestamp, orgId, data: event.data };
  const createdAt = new Date();
  const rows = webhooks.map((w) => ({ id: randomUUID(), webhookId: w.id, orgId, event: event.type, eventId: event.id, payload, createdAt }));
  const inserted = (await tx.em.createQueryBuilder(WebhookDelivery).insert(rows).onConflict().ignore().returning(['id']).execute('all')) as { id: string }[];
  const fresh = new Set(inserted.map((row) => row.id));
  // Jobs are queued once the rows are committed, so a worker never looks for a delivery it cannot see yet;
  // a crash in between leaves pending rows that the sweep queues.
  for (const row of rows.filter((r) => fresh.has(r.id))) tx.afterCommit(() => queueAndAnnounce(tx, { ...row, status: 'pending', attempt: 0 }));
}

/**
 * One attempt of one delivery (the `webhooks.deliver` job). Claims the row first, so a duplicate job,
 * a second instance or the sweep can never send it twice at once; then revalidates the URL, POSTs,
 * and records the outcome, scheduling the next retry or dead-lettering it.
 */
export async function deliver(ctx: RequestContext, job: DeliverJobData): Promise<void> {
  const leaseUntil = new Date(ctx.runtime.clock.now().getTime() + ctx.runtime.tunables.webhooks.deliveryTimeoutMs + LEASE_MARGIN_MS);
  const delivery = await claim(ctx, job, leaseUntil);
  if (!delivery) return;
  const webhook = await ctx.em.findOne(Webhook, { id: delivery.webhookId });
  if (!webhook) return; // deleted meanwhile, and its deliveries with it
  const attempted = webhook.status === 'active' ? await send(ctx, webhook, delivery) : refused('Webhook is not active');
  await record(ctx, webhook, delivery, leaseUntil, attempted);
}

/** Re-queues pending/retrying deliveries that are overdue and unclaimed: their job was lost (a crash between commit and scheduling). */
export async function sweepDeliveries(ctx: RequestContext): Promise<number> {
  const now = ctx.runtime.clock.now();
  const cutoff = new Date(now.getTime() - ctx.runtime.tunables.webhooks.sweepGraceMs);
  const stuck = await ctx.em.find(
    WebhookDelivery,
    {
      status: { $in: ['pending', 'retrying'] },
      $and: [
        { $or: [{ nextAttemptAt: { $lte: cutoff } }, { nextAttemptAt: null, createdAt: { $lte: cutoff } }] },
        { $or: [{ lockedUntil: null }, { lockedUntil: { $lte: now } }] },
      ],
    },
    { orderBy: { createdAt: 'asc' }, limit: SWEEP_BATCH },
  );
  for (const delivery of stuck) {
    // Due now: the next sweep leaves it alone for a grace period while this job gets its chance.
    await ctx.em.nativeUpdate(WebhookDelivery, { id: delivery.id }, { nextAttemptAt: now });
    await queue(ctx, delivery, now);
  }
  if (stuck.length > 0) ctx.log.warn({ count: stuck.length }, 're-queued webhook deliveries whose job was missing');
  return stuck.length;
}

// ---- delivery internals ---------------------------------------------------

interface AttemptOutcome {
  responseStatus: number | null;
  responseBody: string | null;
  responseTimeMs: number | null;
  error: string | null;
  /** fail at once, without retries (unsafe URL, inactive webhook) */
  final: boolean;
}

const refused = (error: string): AttemptOutcome => ({ responseStatus: null, responseBody: null, responseTimeMs: null, error, final: true });

async function queue(ctx: RequestContext, delivery: { id: string }, when = new Date()): Promise<void> {
  const data: DeliverJobData = { deliveryId: delivery.id };
  await ctx.runtime.jobs.schedule(DELIVER_JOB, data as unknown as Record<string, unknown>, when);
}

function publish(ctx: RequestContext, d: DeliveryUpdate): void {
  const update: DeliveryUpdate = { id: d.id, webhookId: d.webhookId, orgId: d.orgId, status: d.status, attempt: d.attempt, event: d.event };
  ctx.runtime.pubsub.publish(DELIVERY_UPDATED_TOPIC, update);
}

/** For committed deliveries: a job lost here is picked up by the sweep. */
async function queueAndAnnounce(ctx: RequestContext, delivery: DeliveryUpdate): Promise<void> {
  await queue(ctx, delivery);
  publish(ctx, delivery);
}

/** One conditional update: of several jobs for one delivery, only one gets the lease. */
async function claim(ctx: RequestContext, job: DeliverJobData, leaseUntil: Date): Promise<WebhookDelivery | null> {
  const now = ctx.runtime.clock.now();
  const claimed = await ctx.em.nativeUpdate(
    WebhookDelivery,
    {
      id: job.deliveryId,
      status: { $in: ['pending', 'retrying'] },
      $and: [
        { $or: [{ nextAttemptAt: null }, { nextAttemptAt: { $lte: new Date(now.getTime() + CLAIM_EARLY_TOLERANCE_MS) } }] },
        { $or: [{ lockedUntil: null }, { lockedUntil: { $lte: now } }] },
      ],
    },
    { lockedUntil: leaseUntil },
  );
  return claimed === 1 ? ctx.em.findOneOrFail(WebhookDelivery, { id: job.deliveryId }) : null;
}

function basicAuthorization(url: string): string | null {
  const { username, password } = new URL(url);
  if (!username && !password) return null;
  return `Basic ${Buffer.from(`${decodeURIComponent(username)}:${decodeURIComponent(password)}`).toString('base64')}`;
}

async function send(ctx: RequestContext, webhook: Webhook, delivery: WebhookDelivery): Promise<AttemptOutcome> {
  const { url, secret, headers: custom } = unsealWebhook(ctx, webhook);
  const body = deliveryBody(delivery.payload);
  const timestamp = String(Date.now());
  const headers: Record<string, string> = {
    'Content-Type': 'application/json',
    'User-Agent': WEBHOOK_USER_AGENT,
    'X-Service-Delivery-Id': delivery.id,
    'X-Service-Event-Id': delivery.eventId,
    'X-Service-Event-Type': delivery.event,
    'X-Service-Timestamp': timestamp,
  };
  if (secret !== null) {
    headers['X-Service-Signature'] = signDelivery(secret, timestamp, body);
    headers['X-Service-Signature-Timestamp'] = timestamp;
  }
  // Credentials in the URL become Basic auth, unless a custom Authorization header is configured.
  const basic = basicAuthorization(url);
  if (basic && !custom.some((h) => h.key.toLowerCase() === 'authorization')) headers.Authorization = basic;
  // Reserved names are refused at input; skipping them here keeps the standard and signature headers authoritative.
  for (const header of custom) if (!isReservedHeader(header.key)) headers[header.key] = header.value;

  const started = performance.now();
  try {
    const response = await guardedRequest(
      url,
      { method: 'POST', headers, body, timeoutMs: ctx.runtime.tunables.webhooks.deliveryTimeoutMs, maxBodyBytes: 4 * MAX_STORED_RESPONSE_CHARS },
      guardOptions(ctx),
    );
    const ok = response.status >= 200 && response.status < 300;
    return {
      responseStatus: response.status,
      responseBody: response.body.slice(0, MAX_STORED_RESPONSE_CHARS),
      responseTimeMs: response.elapsedMs,
      error: ok ? null : `HTTP ${response.status}`,
      final: false,
    };
  } catch (error) {
    // A name that does not resolve right now is a transient failure; any other guard refusal is final.
    if (error instanceof UnsafeUrlError && error.reason !== 'unresolvable') return refused('Unsafe webhook URL');
    return { responseStatus: null, responseBody: null, responseTimeMs: Math.round(performance.now() - started), error: (error as Error).message, final: false };
  }
}

async function record(ctx: RequestContext, webhook: Webhook, claimed: WebhookDelivery, leaseUntil: Date, outcome: AttemptOutcome): Promise<void> {
  const now = ctx.runtime.clock.now();
  const attempt = claimed.attempt + 1;
  const policy = effectiveRetryPolicy(webhook);
  const delivered = outcome.responseStatus !== null && outcome.error === null;
  let status: WebhookDeliveryStatus = 'failed';
  let nextAttemptAt: Date | null = null;
  if (delivered) status = 'delivered';
  else if (!outcome.final && attempt <= policy.maxRetries) {
    status = 'retrying';
    nextAttemptAt = new Date(now.getTime() + retryDelayMs(policy, attempt - 1));
  }
  const recorded = await withTransaction(ctx, async (tx) => {
    // Only the holder of the claim records: a worker whose lease ran out has lost the delivery to another.
    const updated = await tx.em.nativeUpdate(
      WebhookDelivery,
      { id: claimed.id, lockedUntil: leaseUntil },
      {
        status,
        attempt,
        responseStatus: outcome.responseStatus,
        responseBody: outcome.responseBody,
        responseTimeMs: outcome.responseTimeMs,
        errorMessage: outcome.error,
        nextAttemptAt,
        lockedUntil: null,
        deliveredAt: delivered ? now : null,
        deadLetteredAt: status === 'failed' ? now : null,
      },
    );
    if (updated === 0) return false;
    await updateWebhookCounters(tx, webhook, status, now);
    if (nextAttemptAt) tx.afterCommit(() => queue(tx, claimed, nextAttemptAt));
    return true;
  });
  if (recorded) publish(ctx, { id: claimed.id, webhookId: claimed.webhookId, orgId: claimed.orgId, status, attempt, event: claimed.event });
}

/**
 * Success/failure counts, last delivery and success times, and the failure streak. A webhook whose
 * last `autoFailAfter` deliveries all failed, over at least `autoFailMinSpanMs`, is set to `failed`
 * (stored `error`) by the system, with an audit entry.
 */
async function updateWebhookCounters(tx: RequestContext, webhook: Webhook, status: WebhookDeliveryStatus, now: Date): Promise<void> {
  if (status === 'delivered') {
    await tx.em.execute(
      `update webhook set success_count = success_count + 1, last_delivery_at = ?, last_success_at = ?, consecutive_failures = 0, failing_since = null where id = ?`,
      [now, now, webhook.id],
    );
    return;
  }
  if (status === 'retrying') {
    await tx.em.execute(`update webhook set last_delivery_at = ? where id = ?`, [now, webhook.id]);
    return;
  }
  const [streak] = (await tx.em.execute(
    `update webhook set failure_count = failure_count + 1, last_delivery_at = ?, consecutive_failures = consecutive_failures + 1,
       failing_since = coalesce(failing_since, ?) where id = ? returning consecutive_failures, failing_since, status`,
    [now, now, webhook.id],
  )) as { consecutive_failures: number; failing_since: Date; status: string }[];
  if (!streak || streak.status !== 'active') return;
  const span = now.getTime() - new Date(streak.failing_since).getTime();
  const { autoFailAfter, autoFailMinSpanMs } = tx.runtime.tunables.webhooks;
  if (streak.consecutive_failures < autoFailAfter || span < autoFailMinSpanMs) return;
  await tx.em.execute(`update webhook set status = 'error', updated_at = ? where id = ?`, [now, webhook.id]);
  await recordAudit(tx, {
    action: 'webhook.auto_failed',
    resourceType: 'webhook',
    resourceId: webhook.id,
    orgId: webhook.orgId,
    changes: ['status'],
    details: { consecutiveFailures: streak.consecutive_failures, failingSince: new Date(streak.failing_since).toISOString() },
  });
}
