import { randomUUID } from 'node:crypto';
import DataLoader from 'dataloader';
import { z } from 'zod';
import { WebhookDelivery } from '../../../entities/webhook.js';
import type { RequestContext } from '../../auth/context.js';
import type { Loaders } from '../../auth/loaders.js';
import { authorize, canAccessOrg, isUuid, targetOrgId } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { badRequest, notFound } from '../../errors.js';
import { filterIterable } from '../../events/subscriptions.js';
import { CursorQuery, decodeCursor, encodeCursor, pageInfoOf, pageOptions, PageQuery, toPage, type Connection, type CursorPosition, type Page } from '../../pagination.js';
import { parseInput, queryBoolean, timestamp, uuid } from '../../validation.js';
import { recordAudit } from '../audit/api.js';
import { requireWebhook, WEBHOOK_PERMISSION, type WebhookView } from './webhooks.js';
import { onePer } from '../../memo.js';
import { uuidArray } from '../../db/arrays.js';
import { announce, DELIVERY_UPDATED_TOPIC, DeliveryStatus, notifyWorkers, type DeliveryUpdate } from './delivery-pipeline.js';

// What callers see of deliveries: lists, the dead-letter queue, live updates, test and re-drive. The pipeline
// that makes and sends them is delivery-pipeline.ts.

const MAX_DELIVERY_PAGE = 100;

export const ListDeliveriesQuery = z.strictObject({
  page: z.coerce.number().int().min(1).default(1),
  limit: z.coerce.number().int().min(1).max(MAX_DELIVERY_PAGE).default(50),
  status: DeliveryStatus.optional(),
});

export const DeliveriesConnectionArgs = z.strictObject({
  first: z.number().int().min(1).max(MAX_DELIVERY_PAGE).default(50).describe(`1 to ${MAX_DELIVERY_PAGE}`),
  after: CursorQuery.shape.cursor.describe('Returns the deliveries after this cursor (the previous page\'s `pageInfo.endCursor`); from the newest when left out.'),
  status: DeliveryStatus.optional().describe('Only deliveries in this state.'),
});

export type DeliveriesConnectionInput = z.input<typeof DeliveriesConnectionArgs>;

export const TestWebhookSchema = z.strictObject({
  // Any name: a receiver may want to see how it handles a type it does not know.
  event: z.string().trim().min(1).max(100).default('webhook.test').describe('The event name to send (any name; webhook.test by default).'),
  payload: z.record(z.string(), z.unknown()).optional().describe('The data to send (JSON object); a sample when left out.'),
}).describe('A test delivery to send.');
export type TestWebhookInput = z.input<typeof TestWebhookSchema>;

export const ListDeadLettersQuery = PageQuery.extend({
  orgId: uuid().optional().describe('required for partner and system callers'),
  webhookId: uuid().optional().describe('Only failed deliveries of this webhook.'),
  redriven: z.boolean().or(queryBoolean).optional().describe('true: only re-driven ones; false: only those never re-driven'),
}).strict();
export type ListDeadLettersInput = z.input<typeof ListDeadLettersQuery>;

export const WebhookDeliveryViewSchema = z
  .object({
    id: uuid().describe('Unique ID (sent as X-Service-Delivery-Id).'),
    webhookId: uuid().describe('The webhook.'),
    orgId: uuid().describe('The webhook’s organization.'),
    status: DeliveryStatus.describe('Where it stands.'),
    event: z.string().describe('The event name.'),
    eventId: z.string().describe('The event’s ID (sent as X-Service-Event-Id; the same for every webhook it went to).'),
    payload: z.record(z.string(), z.unknown()).describe('The JSON body sent.'),
    responseStatus: z.number().int().nullable().describe('The HTTP status of the last attempt’s answer; null before one or when none came.'),
    responseBody: z.string().nullable().describe('first 1,000 characters'),
    attempt: z.number().int().describe('attempts made'),
    nextAttemptAt: timestamp().nullable().describe('When the next attempt is due; null when none is scheduled.'),
    responseTimeMs: z.number().int().nullable().describe('How long the last attempt took, in milliseconds; null before one.'),
    errorMessage: z.string().nullable().describe('Why the last attempt failed; null when it did not.'),
    createdAt: timestamp().describe('When it was queued.'),
    deliveredAt: timestamp().nullable().describe('When the receiver accepted it; null until then.'),
    deadLetteredAt: timestamp().nullable().describe('when it entered the dead-letter queue'),
    redrivenAt: timestamp().nullable().describe('When it was re-driven from the dead-letter queue; null if never.'),
    retryOf: uuid().nullable().describe('the failed delivery this one re-drives'),
  })
  .meta({ title: 'WebhookDelivery', description: 'One event sent (or to be sent) to a webhook, and how it went.' });
export type WebhookDeliveryView = z.output<typeof WebhookDeliveryViewSchema>;


/** The answers of the test and retry operations: the queued delivery, as the spec shows it. */
export const WebhookTestResultSchema = z
  .object({
    message: z.string().describe('A human-readable summary.'),
    delivery: z
      .object({
        id: uuid().describe('The queued delivery.'),
        webhookId: uuid().describe('Its webhook.'),
        status: DeliveryStatus.describe('Its state (pending when queued).'),
        event: z.string().describe('The event name sent.'),
        attempt: z.number().int().describe('Attempts made so far.'),
      })
      .meta({ title: 'WebhookTestDelivery', description: 'The test delivery queued.' })
      .describe('The test delivery queued.'),
  })
  .meta({ title: 'WebhookTestResult', description: 'What testWebhook queued.' });
export const WebhookRetryResultSchema = z
  .object({
    message: z.string().describe('A human-readable summary.'),
    delivery: z
      .object({ id: uuid().describe('The new delivery.'), status: DeliveryStatus.describe('Its state (pending when queued).'), attempt: z.number().int().describe('Attempts made so far.') })
      .meta({ title: 'WebhookRetriedDelivery', description: 'The delivery that re-drives a failed one.' })
      .describe('The new delivery.'),
  })
  .meta({ title: 'WebhookRetryResult', description: 'What retryWebhookDelivery queued.' });

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

// ---- reads ----------------------------------------------------------------

export async function listDeliveries(ctx: RequestContext, webhookId: string, raw: z.input<typeof ListDeliveriesQuery>): Promise<Page<WebhookDeliveryView>> {
  const query = parseInput(ListDeliveriesQuery, raw);
  const webhook = await requireWebhook(ctx, webhookId, 'read');
  const where = { webhookId: webhook.id, ...(query.status ? { status: query.status } : {}) };
  const [rows, total] = await ctx.em.findAndCount(WebhookDelivery, where, { orderBy: { createdAt: 'desc', id: 'desc' }, ...pageOptions(query) });
  return toPage(rows.map(deliveryView), total, query);
}

/** Keyset-paged deliveries of one webhook, newest first, as a GraphQL connection. */
export async function deliveriesConnection(ctx: RequestContext, webhookId: string, raw: DeliveriesConnectionInput): Promise<Connection<WebhookDeliveryView>> {
  const webhook = await requireWebhook(ctx, webhookId, 'read');
  return webhookDeliveriesConnection(ctx, webhook, raw);
}

type ConnectionArgs = Omit<z.output<typeof DeliveriesConnectionArgs>, 'after'> & { after: CursorPosition | null };

/**
 * A webhook's deliveries, newest first, keyset-paged as a GraphQL connection, for a webhook the caller
 * has already been shown (GraphQL `Webhook.deliveries`). The webhooks of one list are read together:
 * request-scoped DataLoaders turn every webhook's page into two queries, and their totals (counted
 * only when `totalCount` is selected) into one, however many webhooks.
 */
export async function webhookDeliveriesConnection(
  ctx: RequestContext,
  webhook: Pick<WebhookView, 'id' | 'orgId'>,
  raw: DeliveriesConnectionInput,
): Promise<Connection<WebhookDeliveryView>> {
  const parsed = parseInput(DeliveriesConnectionArgs, raw);
  const args: ConnectionArgs = { ...parsed, after: parsed.after ? decodeCursor(parsed.after, 'date') : null };
  const loaders = connectionLoaders(ctx, args);
  // Queued before the decision so that every webhook of a list joins one batch; nothing is answered unless the decision allows it.
  const page = loaders.pages.load(webhook.id);
  page.catch(() => {});
  await authorize(ctx, WEBHOOK_PERMISSION.read, { orgId: webhook.orgId, resource: 'Webhook' });
  const rows = await page;
  const edges = rows.slice(0, args.first).map((d) => ({ node: deliveryView(d), cursor: deliveryCursor(d) }));
  return {
    edges,
    pageInfo: pageInfoOf(edges, rows.length > args.first, args.after !== null),
    totalCount: () => loaders.totals.load(webhook.id),
  };
}

const deliveryCursor = (d: WebhookDelivery) => encodeCursor({ value: d.createdAt.toISOString(), id: d.id });

interface ConnectionLoaders {
  /** up to `first + 1` rows of each webhook (one more than the page tells whether there is a next one) */
  pages: DataLoader<string, WebhookDelivery[]>;
  totals: DataLoader<string, number>;
}

/** Per request (its Loaders), the batching loaders of each argument shape (first, after, status). */
const connectionLoadersOf = onePer((_loaders: Loaders) => new Map<string, ConnectionLoaders>());

function connectionLoaders(ctx: RequestContext, args: ConnectionArgs): ConnectionLoaders {
  const byShape = connectionLoadersOf(ctx.loaders);
  const shape = JSON.stringify([args.first, args.after, args.status ?? null]);
  let loaders = byShape.get(shape);
  // No cache: a later mutation in the same request must not be answered from an earlier read.
  if (!loaders) {
    loaders = {
      pages: new DataLoader((ids) => deliveryPages(ctx, args, ids), { cache: false }),
      totals: new DataLoader((ids) => deliveryTotals(ctx, args, ids), { cache: false }),
    };
    byShape.set(shape, loaders);
  }
  return loaders;
}

/** The rows each webhook's page shows: ids ranked per webhook after the cursor, then the rows. */
async function deliveryPages(ctx: RequestContext, args: ConnectionArgs, webhookIds: readonly string[]): Promise<WebhookDelivery[][]> {
  const params: unknown[] = [uuidArray([...new Set(webhookIds)])];
  let where = 'webhook_id = any(?::uuid[])';
  if (args.status) {
    where += ' and status = ?';
    params.push(args.status);
  }
  if (args.after) {
    where += ' and (created_at, id) < (?::timestamptz, ?::uuid)';
    params.push(args.after.value, args.after.id);
  }
  const ranked = (await ctx.em.execute(
    `select id from (select id, row_number() over (partition by webhook_id order by created_at desc, id desc) as n from webhook_delivery where ${where}) ranked
      where n <= ?`,
    [...params, args.first + 1],
  )) as { id: string }[];
  const rows = ranked.length === 0 ? [] : await ctx.em.find(WebhookDelivery, { id: { $in: ranked.map((r) => r.id) } }, { orderBy: { createdAt: 'desc', id: 'desc' } });
  return webhookIds.map((webhookId) => rows.filter((row) => row.webhookId === webhookId));
}

async function deliveryTotals(ctx: RequestContext, args: ConnectionArgs, webhookIds: readonly string[]): Promise<number[]> {
  const totals = (await ctx.em.execute(
    `select webhook_id, count(*)::int as total from webhook_delivery where webhook_id = any(?::uuid[])${args.status ? ' and status = ?' : ''} group by webhook_id`,
    [uuidArray([...new Set(webhookIds)]), ...(args.status ? [args.status] : [])],
  )) as { webhook_id: string; total: number }[];
  const byWebhook = new Map(totals.map((t) => [t.webhook_id, t.total]));
  return webhookIds.map((id) => byWebhook.get(id) ?? 0);
}

/** Deliveries that ended `failed` (the dead-letter queue) of one organization, newest first. Re-drive them with `retryDelivery`. */
export async function listDeadLetters(ctx: RequestContext, raw: ListDeadLettersInput): Promise<Page<WebhookDeliveryView>> {
  const query = parseInput(ListDeadLettersQuery, raw);
  const orgId = await targetOrgId(ctx, query.orgId, 'Webhook');
  await authorize(ctx, WEBHOOK_PERMISSION.read, { orgId, resource: 'Webhook' });
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
  else await authorize(ctx, WEBHOOK_PERMISSION.read);
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
    await notifyWorkers(tx);
    await recordAudit(tx, {
      action: 'webhook.test',
      resourceType: 'webhook',
      resourceId: webhook.id,
      orgId: webhook.orgId,
      details: { deliveryId: created.id, event: input.event },
    });
    return created;
  });
  announce(ctx, [delivery]);
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
    await notifyWorkers(tx);
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
  announce(ctx, [delivery]);
  return { message: 'Delivery queued for retry', delivery: { id: delivery.id, status: delivery.status, attempt: delivery.attempt } };
}
