import crypto, { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { WebhookDelivery, type StoredWebhookHeader, type Webhook, type WebhookDeliveryStatus, type WebhookRetryPolicy, type WebhookStatus } from '../../../entities/webhook.js';
import type { RequestContext } from '../../auth/context.js';
import { withTransaction } from '../../db/transaction.js';
import { publishOnCommit } from '../../events/pubsub.js';
import type { DomainEvent } from '../../events/types.js';
import { guardedRequest, UnsafeUrlError, type PinnedConnectionPool } from '../../net/outbound-guard.js';
import { enumValues, uuid } from '../../validation.js';
import { recordAudit } from '../audit/api.js';
import { effectiveRetryPolicy, guardOptions, isReservedHeader, unsealWebhook } from './webhooks.js';
import { uuidArray } from '../../db/arrays.js';

// The delivery pipeline: fan-out of events into deliveries, their jobs and sweep, and the worker's steps
// (claim, attempt, record). The API over deliveries (lists, test, retry) is webhook-deliveries.ts.

export const DELIVER_JOB = 'webhooks.deliver';
export const SWEEP_JOB = 'webhooks.sweep';
export const DELIVERY_UPDATED_TOPIC = 'webhook-delivery-updated';
/** Published (on commit) by every transaction that commits pending deliveries: wakes the delivery worker of every instance. */
export const DELIVERIES_COMMITTED_TOPIC = 'webhook-deliveries-committed';
export const WEBHOOK_USER_AGENT = 'Service-Webhooks/1.0';
const MAX_STORED_RESPONSE_CHARS = 1000;
// Agenda may fire a job a moment before the stored due time; within this margin the claim still succeeds.
const CLAIM_EARLY_TOLERANCE_MS = 500;
const SWEEP_BATCH = 500;

export const DeliveryStatus = z
  .enum(['pending', 'delivered', 'failed', 'retrying'])
  .meta({ title: 'WebhookDeliveryStatus', description: 'Where a webhook delivery stands.' })
  .register(enumValues, {
    pending: 'Waiting for its first attempt.',
    delivered: 'The receiver answered 2xx.',
    failed: 'Every attempt failed: it is in the dead-letter queue (retryWebhookDelivery re-drives it).',
    retrying: 'An attempt failed; another is scheduled (nextAttemptAt).',
  });

/** What the `webhookDeliveryUpdated` subscription carries: ids and status only (NOTIFY payloads are small). */
export const DeliveryUpdateSchema = z
  .object({ id: uuid().describe('The delivery.'), webhookId: uuid().describe('Its webhook.'), orgId: uuid().describe('The webhook’s organization.'), status: DeliveryStatus.describe('Its new state.'), attempt: z.number().int().describe('Attempts made so far.'), event: z.string().describe('The event name.') })
  .meta({ title: 'WebhookDeliveryUpdate', description: 'A delivery changed state' });
export type DeliveryUpdate = z.output<typeof DeliveryUpdateSchema>;

/** The `webhooks.deliver` job's data: the delivery, re-read when the job runs. */
export const DeliverJobSchema = z.object({ deliveryId: z.uuid() });
export type DeliverJobData = z.output<typeof DeliverJobSchema>;

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

/**
 * The outbox subscriber's work, inside the dispatcher's transaction: one pending delivery per active
 * webhook of each event's organization subscribed to its type, for a whole batch of events in one
 * query for the webhooks and one multi-row insert. `on conflict do nothing` on (webhook, event) makes a
 * redelivered event a no-op. Delivery ids are time-ordered (UUIDv7), so the worker, which claims in
 * (createdAt, id) order, takes a webhook's deliveries in the order they were fanned out: a batch's in
 * the order its events were committed (two batches fanned out at once may interleave). A publication
 * in the same transaction wakes the delivery worker of every instance once the rows are committed.
 */
export async function fanOutEvents(tx: RequestContext, events: DomainEvent[]): Promise<void> {
  const orgIds = [...new Set(events.map((e) => e.orgId).filter((id): id is string => id !== null))];
  if (orgIds.length === 0) return;
  const hooks = (await tx.em.execute(`select id, org_id, events from webhook where org_id = any(?::uuid[]) and status = 'active'`, [uuidArray(orgIds)])) as {
    id: string;
    org_id: string;
    events: string[];
  }[];
  if (hooks.length === 0) return;
  const byOrg = new Map<string, typeof hooks>();
  for (const hook of hooks) {
    const ofOrg = byOrg.get(hook.org_id);
    if (ofOrg) ofOrg.push(hook);
    else byOrg.set(hook.org_id, [hook]);
  }
  const eventRows: { i: number; id: string; type: string; org_id: string; payload: Record<string, unknown> }[] = [];
  const deliveryRows: { id: string; webhook_id: string; e: number }[] = [];
  for (const event of events) {
    const subscribed = event.orgId ? (byOrg.get(event.orgId) ?? []).filter((hook) => hook.events.includes(event.type)) : [];
    if (subscribed.length === 0) continue;
    const i = eventRows.length;
    const payload = { id: event.id, type: event.type, timestamp: event.timestamp, orgId: event.orgId, data: event.data };
    eventRows.push({ i, id: event.id, type: event.type, org_id: event.orgId!, payload });
    for (const hook of subscribed) deliveryRows.push({ id: orderedUuid(), webhook_id: hook.id, e: i });
  }
  if (deliveryRows.length === 0) return;
  const inserted = (await tx.em.execute(
    `insert into webhook_delivery (id, webhook_id, org_id, status, event, event_id, payload, attempt, created_at)
     select d.id, d.webhook_id, e.org_id, 'pending', e.type, e.id, e.payload, 0, ?
       from jsonb_to_recordset(?::jsonb) as d(id uuid, webhook_id uuid, e int)
       join jsonb_to_recordset(?::jsonb) as e(i int, id text, type text, org_id uuid, payload jsonb) on e.i = d.e
      order by d.id
     on conflict do nothing
     returning id, webhook_id, org_id, event`,
    [new Date(), JSON.stringify(deliveryRows), JSON.stringify(eventRows)],
  )) as { id: string; webhook_id: string; org_id: string; event: string }[];
  if (inserted.length === 0) return;
  await notifyWorkers(tx);
  const fresh = inserted.map((r): DeliveryUpdate => ({ id: r.id, webhookId: r.webhook_id, orgId: r.org_id, status: 'pending', attempt: 0, event: r.event }));
  tx.afterCommit(() => announce(tx, fresh));
}

/** Hands a due retry (or a sweep's re-queue) to this instance's delivery worker (the `webhooks.deliver` job). */
export async function deliver(ctx: RequestContext, job: DeliverJobData): Promise<void> {
  await ctx.runtime.webhookDeliveries.submit(job.deliveryId);
}

/**
 * Hands retries back to the job queue, due now: those a stopping worker was given but never attempted
 * (their webhook had no free slot yet), so another instance, or this one once restarted, takes them at once.
 */
export async function requeueDeliveries(ctx: RequestContext, deliveryIds: string[]): Promise<void> {
  for (const id of deliveryIds) await queue(ctx, { id });
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

// ---- the delivery worker's steps (webhook-worker.ts runs them) ----

/** A delivery the worker holds the lease of, with what it needs of its webhook to send it. */
export interface ClaimedDelivery {
  id: string;
  webhookId: string;
  orgId: string;
  event: string;
  eventId: string;
  payload: Record<string, unknown>;
  /** attempts made before this one */
  attempt: number;
  /** the claim: only its holder may record the attempt */
  leaseUntil: Date;
  webhook: Pick<Webhook, 'status' | 'url' | 'secret' | 'headers' | 'retryPolicy'>;
}

export interface AttemptOutcome {
  responseStatus: number | null;
  responseBody: string | null;
  responseTimeMs: number | null;
  error: string | null;
  /** fail at once, without retries (unsafe URL, inactive webhook) */
  final: boolean;
}

export interface ClaimOptions {
  /** how many deliveries at most */
  limit: number;
  /** webhooks with no free slot: none of theirs are claimed */
  saturated: string[];
  /** free slots of the webhooks that have some in flight (others: `perWebhook`) */
  freeSlots: Record<string, number>;
  perWebhook: number;
  /** only deliveries whose earlier claim ran out (a crashed instance's) */
  abandonedOnly: boolean;
}

export interface ClaimResult {
  claimed: ClaimedDelivery[];
  /** rows looked at: equal to the scan's limit when there may be more behind them */
  scanned: number;
  scanLimit: number;
}

interface ClaimedRow {
  id: string;
  webhook_id: string;
  org_id: string;
  event: string;
  event_id: string;
  payload: Record<string, unknown>;
  attempt: number;
  url: string;
  secret: string | null;
  headers: StoredWebhookHeader[];
  webhook_status: WebhookStatus;
  retry_policy: Partial<WebhookRetryPolicy> | null;
  scanned?: number;
}

const CLAIMED_COLUMNS = `c.id, c.webhook_id, c.org_id, c.event, c.event_id, c.payload, c.attempt,
  w.url, w.secret, w.headers, w.status as webhook_status, w.retry_policy`;

/**
 * Parameters: due by, now, saturated webhooks, scan limit, free slots by webhook (JSON), slots of any
 * other webhook, limit, lease. `abandonedOnly`: only rows whose earlier claim ran out.
 */
const CLAIM_DUE_SQL = (abandonedOnly: boolean) => `
  with scan as (
    select id, webhook_id, created_at from webhook_delivery
     where status = 'pending'
       and (next_attempt_at is null or next_attempt_at <= ?)
       and (locked_until is null or locked_until <= ?)
       ${abandonedOnly ? 'and locked_until is not null' : ''}
       and not (webhook_id = any(?::uuid[]))
     order by created_at, id
     limit ?
     for update skip locked
  ), picked as (
    select id from (
      select id, webhook_id, created_at, row_number() over (partition by webhook_id order by created_at, id) as rn from scan
    ) ranked
     where rn <= coalesce((?::jsonb ->> webhook_id::text)::int, ?)
     order by created_at, id
     limit ?
  ), claimed as (
    update webhook_delivery d set locked_until = ? from picked where d.id = picked.id
    returning d.id, d.webhook_id, d.org_id, d.event, d.event_id, d.payload, d.attempt, d.created_at
  )
  select ${CLAIMED_COLUMNS}, (select count(*) from scan)::int as scanned
    from claimed c join webhook w on w.id = c.webhook_id
   order by c.created_at, c.id`;

function leaseFor(ctx: RequestContext, now: Date): Date {
  const { deliveryTimeoutMs, leaseMarginMs } = ctx.runtime.tunables.webhooks;
  return new Date(now.getTime() + deliveryTimeoutMs + leaseMarginMs);
}

const toClaimed = (row: ClaimedRow, leaseUntil: Date): ClaimedDelivery => ({
  id: row.id,
  webhookId: row.webhook_id,
  orgId: row.org_id,
  event: row.event,
  eventId: row.event_id,
  payload: row.payload,
  attempt: row.attempt,
  leaseUntil,
  webhook: { status: row.webhook_status, url: row.url, secret: row.secret, headers: row.headers, retryPolicy: row.retry_policy },
});

/**
 * Claims due pending deliveries (first attempts; retries come through `claimDeliveriesById`) in
 * (createdAt, id) order with one statement: the candidates are locked `for update skip locked`, so
 * two instances never take the same row, then at most each webhook's free slots are taken from them
 * and leased (`lockedUntil`). A webhook with no free slot is skipped, so one slow receiver's backlog
 * never stands in front of the others' deliveries.
 */
export async function claimDueDeliveries(ctx: RequestContext, options: ClaimOptions): Promise<ClaimResult> {
  const now = ctx.runtime.clock.now();
  const leaseUntil = leaseFor(ctx, now);
  const scanLimit = Math.max(options.limit * 4, 100);
  const params = [
    new Date(now.getTime() + CLAIM_EARLY_TOLERANCE_MS),
    now,
    uuidArray(options.saturated),
    scanLimit,
    JSON.stringify(options.freeSlots),
    options.perWebhook,
    options.limit,
    leaseUntil,
  ];
  // A burst fills the table faster than statistics follow: estimating a handful of pending rows, the planner would
  // rather collect them all through a bitmap and sort them than walk the pending index in order and stop at the
  // limit (10 ms instead of under 1 with a 20,000-row backlog). The setting lasts for this transaction only.
  const rows = await ctx.em.transactional(async (em) => {
    await em.execute('set local enable_bitmapscan = off');
    return (await em.execute(CLAIM_DUE_SQL(options.abandonedOnly), params)) as ClaimedRow[];
  });
  return { claimed: rows.map((row) => toClaimed(row, leaseUntil)), scanned: rows[0]?.scanned ?? 0, scanLimit };
}

/** The webhook of each delivery that is still waiting for an attempt (pending or retrying), so the worker can fit it into that webhook's slots. */
export async function webhooksOfWaitingDeliveries(ctx: RequestContext, ids: string[]): Promise<Map<string, string>> {
  if (ids.length === 0) return new Map();
  const rows = (await ctx.em.execute(`select id, webhook_id from webhook_delivery where id = any(?::uuid[]) and status in ('pending', 'retrying')`, [
    uuidArray(ids),
  ])) as { id: string; webhook_id: string }[];
  return new Map(rows.map((row) => [row.id, row.webhook_id]));
}

/**
 * Claims the named deliveries that are due and not held by anyone (one conditional update: of
 * several jobs or instances asking for one delivery, only one gets the lease).
 */
export async function claimDeliveriesById(ctx: RequestContext, ids: string[]): Promise<ClaimedDelivery[]> {
  if (ids.length === 0) return [];
  const now = ctx.runtime.clock.now();
  const leaseUntil = leaseFor(ctx, now);
  const rows = (await ctx.em.execute(
    `with claimed as (
       update webhook_delivery d set locked_until = ?
        where d.id = any(?::uuid[]) and d.status in ('pending', 'retrying')
          and (d.next_attempt_at is null or d.next_attempt_at <= ?)
          and (d.locked_until is null or d.locked_until <= ?)
       returning d.id, d.webhook_id, d.org_id, d.event, d.event_id, d.payload, d.attempt, d.created_at
     )
     select ${CLAIMED_COLUMNS} from claimed c join webhook w on w.id = c.webhook_id order by c.created_at, c.id`,
    [leaseUntil, uuidArray(ids), new Date(now.getTime() + CLAIM_EARLY_TOLERANCE_MS), now],
  )) as ClaimedRow[];
  return rows.map((row) => toClaimed(row, leaseUntil));
}

const refused = (error: string): AttemptOutcome => ({ responseStatus: null, responseBody: null, responseTimeMs: null, error, final: true });

function basicAuthorization(url: string): string | null {
  const { username, password } = new URL(url);
  if (!username && !password) return null;
  return `Basic ${Buffer.from(`${decodeURIComponent(username)}:${decodeURIComponent(password)}`).toString('base64')}`;
}

/**
 * One attempt of a claimed delivery: the webhook must still be active; the URL is checked against
 * SSRF again (DNS resolved now) and the request goes to exactly the addresses that passed, over a
 * kept-alive connection to those addresses when `connections` has one. Never throws.
 */
export async function attemptDelivery(ctx: RequestContext, delivery: ClaimedDelivery, connections?: PinnedConnectionPool): Promise<AttemptOutcome> {
  if (delivery.webhook.status !== 'active') return refused('Webhook is not active');
  const started = performance.now();
  try {
    const { url, secret, headers: custom } = unsealWebhook(ctx, delivery.webhook);
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

    const response = await guardedRequest(
      url,
      { method: 'POST', headers, body, timeoutMs: ctx.runtime.tunables.webhooks.deliveryTimeoutMs, maxBodyBytes: 4 * MAX_STORED_RESPONSE_CHARS, connections },
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

export interface FinishedAttempt {
  delivery: ClaimedDelivery;
  outcome: AttemptOutcome;
}

/**
 * Records finished attempts, several at once (the worker groups those that finish while a write is
 * under way): each delivery's new state in one statement, where the lease is still the one it was
 * claimed with (a worker whose lease ran out has lost the delivery to another, and records nothing);
 * then the webhooks' counters, locked in id order so two instances' writes never deadlock; retries
 * are scheduled through Agenda once committed, and the new states published.
 */
export async function recordAttempts(ctx: RequestContext, attempts: FinishedAttempt[]): Promise<void> {
  if (attempts.length === 0) return;
  const now = ctx.runtime.clock.now();
  const rows = attempts.map(({ delivery, outcome }) => {
    const attempt = delivery.attempt + 1;
    const policy = effectiveRetryPolicy(delivery.webhook);
    const delivered = outcome.responseStatus !== null && outcome.error === null;
    let status: WebhookDeliveryStatus = 'failed';
    let nextAttemptAt: Date | null = null;
    if (delivered) status = 'delivered';
    else if (!outcome.final && attempt <= policy.maxRetries) {
      status = 'retrying';
      nextAttemptAt = new Date(now.getTime() + retryDelayMs(policy, attempt - 1));
    }
    return { delivery, outcome, attempt, status, nextAttemptAt };
  });
  const recorded = await withTransaction(ctx, async (tx) => {
    const updated = (await tx.em.execute(
      `update webhook_delivery d
          set status = v.status, attempt = v.attempt, response_status = v.response_status, response_body = v.response_body,
              response_time_ms = v.response_time_ms, error_message = v.error_message, next_attempt_at = v.next_attempt_at,
              locked_until = null, delivered_at = v.delivered_at, dead_lettered_at = v.dead_lettered_at
         from jsonb_to_recordset(?::jsonb) as v(id uuid, lease timestamptz, status text, attempt int, response_status int, response_body text,
              response_time_ms int, error_message text, next_attempt_at timestamptz, delivered_at timestamptz, dead_lettered_at timestamptz)
        where d.id = v.id and d.locked_until = v.lease
        returning d.id`,
      [
        JSON.stringify(
          rows.map((r) => ({
            id: r.delivery.id,
            lease: r.delivery.leaseUntil.toISOString(),
            status: r.status,
            attempt: r.attempt,
            response_status: r.outcome.responseStatus,
            response_body: r.outcome.responseBody,
            response_time_ms: r.outcome.responseTimeMs,
            error_message: r.outcome.error,
            next_attempt_at: r.nextAttemptAt?.toISOString() ?? null,
            delivered_at: r.status === 'delivered' ? now.toISOString() : null,
            dead_lettered_at: r.status === 'failed' ? now.toISOString() : null,
          })),
        ),
      ],
    )) as { id: string }[];
    const ids = new Set(updated.map((u) => u.id));
    const kept = rows.filter((r) => ids.has(r.delivery.id));
    if (kept.length === 0) return kept;

    const byWebhook = new Map<string, typeof kept>();
    for (const r of kept) {
      const ofWebhook = byWebhook.get(r.delivery.webhookId);
      if (ofWebhook) ofWebhook.push(r);
      else byWebhook.set(r.delivery.webhookId, [r]);
    }
    const webhookIds = [...byWebhook.keys()].sort();
    // `no key update`: the fan-out's inserts hold key-share locks on these rows (the foreign key) and must not wait for it.
    await tx.em.execute(`select id from webhook where id = any(?::uuid[]) order by id for no key update`, [uuidArray(webhookIds)]);
    // Webhooks whose attempts all succeeded: their counters in one statement.
    const allDelivered = webhookIds.filter((id) => byWebhook.get(id)!.every((r) => r.status === 'delivered'));
    if (allDelivered.length > 0) {
      await tx.em.execute(
        `update webhook w set success_count = success_count + v.n, last_delivery_at = ?, last_success_at = ?, consecutive_failures = 0, failing_since = null
           from jsonb_to_recordset(?::jsonb) as v(id uuid, n int) where w.id = v.id`,
        [now, now, JSON.stringify(allDelivered.map((id) => ({ id, n: byWebhook.get(id)!.length })))],
      );
    }
    // The others one attempt at a time, in the order they finished: the failure streak depends on it.
    for (const id of webhookIds.filter((w) => !allDelivered.includes(w))) {
      for (const r of byWebhook.get(id)!) await updateWebhookCounters(tx, { id, orgId: r.delivery.orgId }, r.status, now);
    }
    for (const r of kept) {
      const when = r.nextAttemptAt;
      if (when) tx.afterCommit(() => queue(tx, r.delivery, when));
    }
    return kept;
  });
  const lost = attempts.length - recorded.length;
  if (lost > 0) ctx.log.warn({ lost }, 'webhook attempts not recorded: their claim had run out and passed to another worker');
  if (recorded.length > 0) {
    ctx.runtime.pubsub.publishMany(
      DELIVERY_UPDATED_TOPIC,
      recorded.map(
        (r): DeliveryUpdate => ({ id: r.delivery.id, webhookId: r.delivery.webhookId, orgId: r.delivery.orgId, status: r.status, attempt: r.attempt, event: r.delivery.event }),
      ),
    );
  }
}

// ---- internals ------------------------------------------------------------

let lastMs = 0;
let sequence = 0;
/** A UUIDv7 (RFC 9562): 48-bit milliseconds, then a 12-bit counter within the millisecond, so ids made by this process sort in the order they were made. */
function orderedUuid(): string {
  const nowMs = Date.now();
  if (nowMs > lastMs) {
    lastMs = nowMs;
    sequence = 0;
  } else if (++sequence > 0xfff) {
    lastMs += 1;
    sequence = 0;
  }
  const bytes = randomBytes(16);
  bytes.writeUIntBE(lastMs, 0, 6);
  bytes[6] = 0x70 | (sequence >> 8);
  bytes[7] = sequence & 0xff;
  bytes[8] = 0x80 | (bytes[8]! & 0x3f);
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

async function queue(ctx: RequestContext, delivery: { id: string }, when = new Date()): Promise<void> {
  const data: DeliverJobData = { deliveryId: delivery.id };
  await ctx.runtime.jobs.schedule(DELIVER_JOB, data as unknown as Record<string, unknown>, when);
}

/** In the transaction that commits pending deliveries: every instance's worker looks for them once committed. */
export async function notifyWorkers(tx: RequestContext): Promise<void> {
  await publishOnCommit(tx.em, DELIVERIES_COMMITTED_TOPIC, {});
}

/** For committed pending deliveries: wakes this instance's worker at once (the NOTIFY wakes the others) and publishes their state. */
export function announce(ctx: RequestContext, deliveries: DeliveryUpdate[]): void {
  ctx.runtime.webhookDeliveries.wake();
  ctx.runtime.pubsub.publishMany(
    DELIVERY_UPDATED_TOPIC,
    deliveries.map((d): DeliveryUpdate => ({ id: d.id, webhookId: d.webhookId, orgId: d.orgId, status: d.status, attempt: d.attempt, event: d.event })),
  );
}

/**
 * Success/failure counts, last delivery and success times, and the failure streak. A webhook whose
 * last `autoFailAfter` deliveries all failed, over at least `autoFailMinSpanMs`, is set to `failed`
 * (stored `error`) by the system, with an audit entry.
 */
async function updateWebhookCounters(tx: RequestContext, webhook: Pick<Webhook, 'id' | 'orgId'>, status: WebhookDeliveryStatus, now: Date): Promise<void> {
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
