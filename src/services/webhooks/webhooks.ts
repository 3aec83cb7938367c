import DataLoader from 'dataloader';
import { z } from 'zod';
import { WEBHOOK_EVENT_TYPES } from '../../events/types.js';
import { Webhook, WebhookDelivery, type StoredWebhookHeader, type WebhookRetryPolicy, type WebhookStatus } from '../../../entities/webhook.js';
import type { RequestContext } from '../../auth/context.js';
import type { Loaders } from '../../auth/loaders.js';
import { hasPermission } from '../../auth/permissions.js';
import { authorize, loadOwned, requirePrincipal, targetOrgId } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { badRequest } from '../../errors.js';
import { checkOutboundUrl, UnsafeUrlError, type GuardOptions } from '../../net/outbound-guard.js';
import { pageOptions, PageQuery, toPage, type Page } from '../../pagination.js';
import { enumValues, parseInput, timestamp, uuid } from '../../validation.js';
import { recordAudit } from '../audit/api.js';

export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

export const DEFAULT_RETRY_POLICY: WebhookRetryPolicy = { maxRetries: 5, initialDelayMs: 1000, backoffMultiplier: 2, maxDelayMs: 300_000 };
export const MAX_WEBHOOK_HEADERS = 20;

export function guardOptions(ctx: RequestContext): GuardOptions {
  return { allowPrivateNetworkTargets: ctx.runtime.config.allowPrivateNetworkTargets, resolve: ctx.runtime.tunables.webhooks.resolve };
}

// API ↔ stored status.
const WebhookStatusSchema = z
  .enum(['active', 'paused', 'failed'])
  .meta({ title: 'WebhookStatus', description: 'Whether a webhook receives deliveries.' })
  .register(enumValues, {
    active: 'Receives deliveries of its events.',
    paused: 'Paused by a user: no deliveries until it is active again.',
    failed: 'Stopped by the service after repeated failures: no deliveries until a user sets it active.',
  });
export type WebhookApiStatus = z.output<typeof WebhookStatusSchema>;
const TO_STORED: Record<WebhookApiStatus, WebhookStatus> = { active: 'active', paused: 'disabled', failed: 'error' };
const TO_API: Record<WebhookStatus, WebhookApiStatus> = { active: 'active', disabled: 'paused', error: 'failed' };

// Names the service sets itself, hop-by-hop headers, and every X-Service-* header: refused in custom headers.
const RESERVED_HEADERS = new Set([
  'host',
  'content-type',
  'content-length',
  'user-agent',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'expect',
]);
export function isReservedHeader(name: string): boolean {
  const lower = name.toLowerCase();
  return RESERVED_HEADERS.has(lower) || lower.startsWith('x-service-');
}

const HeaderInput = z.strictObject({
  key: z
    .string()
    .min(1)
    .max(100)
    .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/, 'must be an HTTP header name (token characters only)')
    .refine((key) => !isReservedHeader(key), 'is set by the service and cannot be overridden')
    .describe('The header name (HTTP token characters); Host, Content-Type, X-Service-* and hop-by-hop headers are refused.'),
  value: z
    .string()
    .max(2000)
    .regex(/^[^\r\n\0]*$/, 'must not contain CR, LF or NUL')
    .describe('The header value, up to 2000 characters (write-only: never shown again).'),
}).meta({ title: 'WebhookHeaderInput', description: 'A custom HTTP header sent with every delivery.' });

const HeadersInput = z
  .array(HeaderInput)
  .max(MAX_WEBHOOK_HEADERS)
  .refine((headers) => new Set(headers.map((h) => h.key.toLowerCase())).size === headers.length, 'must not repeat a header name')
  .describe(`Custom headers sent with every delivery, at most ${MAX_WEBHOOK_HEADERS}, names not repeated.`);

/** Any subset; missing fields take the defaults, and the merged policy is checked as a whole. */
export const RetryPolicyInput = z
  .strictObject({
    maxRetries: z.number().int().min(0).max(20).optional().describe('0 to 20 (default 5)'),
    initialDelayMs: z.number().int().min(100).max(3_600_000).optional().describe('100 to 3,600,000 (default 1,000)'),
    backoffMultiplier: z.number().min(1).max(10).optional().describe('1 to 10 (default 2)'),
    maxDelayMs: z.number().int().min(100).max(86_400_000).optional().describe('initialDelayMs to 86,400,000 (default 300,000)'),
  })
  .meta({ title: 'WebhookRetryPolicyInput', description: 'any subset; missing fields take the defaults' });

const EventsInput = z
  .array(z.enum(WEBHOOK_EVENT_TYPES))
  .min(1)
  .max(WEBHOOK_EVENT_TYPES.length)
  .transform((events) => [...new Set(events)])
  .describe('The event names to deliver (device.online, device.offline, …), at least one.');

const Name = z.string().trim().min(1).max(255).describe('Display name: 1 to 255 characters, surrounding spaces trimmed.');
const Url = z.string().min(1).max(2048).describe('Where deliveries are POSTed: an https URL to a public address, up to 2048 characters.');
const Secret = z.string().min(1).max(512);

export const CreateWebhookSchema = z.strictObject({
  orgId: uuid().optional().describe('required for partner and system callers'),
  name: Name,
  url: Url.describe('https only'),
  secret: Secret.optional().describe('signing secret (write-only)'),
  events: EventsInput,
  headers: HeadersInput.default([]),
  retryPolicy: RetryPolicyInput.optional().describe('How failed deliveries are retried; the defaults when left out.'),
}).describe('A new webhook of an organization.');
export type CreateWebhookInput = z.input<typeof CreateWebhookSchema>;

export const UpdateWebhookSchema = z
  .strictObject({
    name: Name.optional(),
    url: Url.optional(),
    secret: Secret.nullable().optional().describe('null removes the secret (deliveries are then unsigned)'),
    events: EventsInput.optional(),
    headers: HeadersInput.optional().describe('replaces the whole list'),
    status: WebhookStatusSchema.optional().describe('active resumes deliveries, paused stops them.'),
    retryPolicy: RetryPolicyInput.nullable().optional().describe('the fields given replace the current ones; null restores the defaults'),
  })
  .refine((input) => Object.values(input).some((v) => v !== undefined), 'Provide at least one field to change').describe('Changes to a webhook; at least one field, a field left out keeps its value.');
export type UpdateWebhookInput = z.input<typeof UpdateWebhookSchema>;

export const ListWebhooksQuery = PageQuery.extend({
  orgId: uuid().optional().describe('required for partner and system callers'),
  status: WebhookStatusSchema.optional().describe('Only webhooks in this state.'),
}).strict();
export type ListWebhooksInput = z.input<typeof ListWebhooksQuery>;

export const WebhookViewSchema = z
  .object({
    id: uuid().describe('Unique ID.'),
    orgId: uuid().describe('The organization whose events it receives.'),
    name: z.string().describe('Display name.'),
    // Editors see it without userinfo credentials and signed query parameters; everyone else the origin only, since tokens also live in paths.
    url: z.string().describe('editors (organizations:write): without embedded credentials or signed query parameters; other readers: the origin only'),
    hasSecret: z.boolean().describe('Whether deliveries are signed (X-Service-Signature); the secret itself is never shown.'),
    events: z.array(z.string()).describe('The event names delivered.'),
    headers: z.array(z.object({ key: z.string().describe('The header name.') }).meta({ title: 'WebhookHeader', description: 'A custom header; its value is write-only' })).describe('Custom headers sent with deliveries (names only).'),
    status: WebhookStatusSchema.describe('Whether it receives deliveries.'),
    retryPolicy: z
      .object({
        maxRetries: z.number().int().describe('Retries after the first attempt before a delivery fails for good.'),
        initialDelayMs: z.number().int().describe('Wait before the first retry, in milliseconds.'),
        backoffMultiplier: z.number().describe('Each retry waits this many times longer than the one before.'),
        maxDelayMs: z.number().int().describe('The longest wait between attempts, in milliseconds.'),
      })
      .meta({ title: 'WebhookRetryPolicy', description: 'How failed deliveries are retried (exponential backoff).' })
      .describe('How failed deliveries are retried.'),
    successCount: z.number().int().describe('Deliveries that succeeded, ever.'),
    failureCount: z.number().int().describe('Attempts that failed, ever.'),
    lastDeliveryAt: timestamp().nullable().describe('When a delivery was last attempted; null if never.'),
    lastSuccessAt: timestamp().nullable().describe('When a delivery last succeeded; null if never.'),
    createdBy: uuid().nullable().describe('The user who created it; null when that user is gone.'),
    createdAt: timestamp().describe('When it was created.'),
    updatedAt: timestamp().describe('When it last changed.'),
  })
  .meta({ title: 'Webhook', description: 'An HTTPS endpoint that receives the organization’s events as signed POSTs.' });
export type WebhookView = z.output<typeof WebhookViewSchema>;

const count = () => z.number().int();
export const DeliveryStatsSchema = z
  .object({
    total: count().describe('Every delivery of the webhook.'),
    pending: count().describe('Deliveries waiting for their first attempt.'),
    delivered: count().describe('Deliveries the receiver accepted (2xx).'),
    failed: count().describe('Deliveries that failed for good (dead-lettered).'),
    retrying: count().describe('Deliveries waiting for a retry.'),
    lastDeliveredAt: timestamp().nullable().describe('When a delivery last succeeded; null if none has.'),
  })
  .meta({ title: 'WebhookDeliveryStats', description: 'A webhook’s deliveries counted by state.' });
export type DeliveryStats = z.output<typeof DeliveryStatsSchema>;

export type WebhookDetailView = WebhookView & { deliveryStats: DeliveryStats };

// Query parameters that carry credentials or signatures (OAuth, API keys, AWS SigV4, GCS, Azure SAS...).
const SENSITIVE_PARAMS = new Set([
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'auth',
  'sig',
  'signature',
  'key',
  'apikey',
  'api_key',
  'api-key',
  'secret',
  'client_secret',
  'password',
  'code',
  'x-amz-signature',
  'x-amz-credential',
  'x-amz-security-token',
  'x-goog-signature',
  'x-goog-credential',
  'se',
  'sp',
  'sv',
  'sr',
  'st',
  'ss',
  'srt',
  'spr',
  'skoid',
  'sktid',
  'skt',
  'ske',
  'sks',
  'skv',
]);
const SENSITIVE_PARAM_PATTERN = /token|secret|passw|signature|credential|api[-_]?key/i;

/** The URL as responses show it: no `user:pass@`, no credential-bearing query parameters. */
export function redactUrl(raw: string): string {
  const url = new URL(raw);
  const sensitive = [...url.searchParams.keys()].filter((name) => SENSITIVE_PARAMS.has(name.toLowerCase()) || SENSITIVE_PARAM_PATTERN.test(name));
  // Untouched URLs come back exactly as written (URL serialization would add a trailing slash, re-encode the query).
  if (!url.username && !url.password && sensitive.length === 0) return raw;
  url.username = '';
  url.password = '';
  for (const name of sensitive) url.searchParams.delete(name);
  return url.toString();
}

// Webhooks are organization configuration: reading them needs `organizations:read`, changing them `organizations:write`.
export const WEBHOOK_PERMISSION = { read: 'organizations:read', write: 'organizations:write' } as const;

/**
 * The URL as this caller may see it. Secrets hide in paths too (chat-platform incoming-webhook URLs end
 * in their token) where no pattern finds them, so only those who may edit the webhook see more than
 * the origin; the authorization that loaded it has already checked the organization.
 */
function urlFor(ctx: RequestContext, raw: string): string {
  return hasPermission(requirePrincipal(ctx).permissions, WEBHOOK_PERMISSION.write) ? redactUrl(raw) : new URL(raw).origin;
}

export function effectiveRetryPolicy(webhook: Pick<Webhook, 'retryPolicy'>): WebhookRetryPolicy {
  return { ...DEFAULT_RETRY_POLICY, ...webhook.retryPolicy };
}

export function webhookView(ctx: RequestContext, webhook: Webhook): WebhookView {
  return {
    id: webhook.id,
    orgId: webhook.orgId,
    name: webhook.name,
    url: urlFor(ctx, ctx.runtime.secrets.decrypt(webhook.url)),
    hasSecret: webhook.secret !== null,
    events: webhook.events,
    headers: webhook.headers.map((h) => ({ key: h.key })),
    status: TO_API[webhook.status],
    retryPolicy: effectiveRetryPolicy(webhook),
    successCount: webhook.successCount,
    failureCount: webhook.failureCount,
    lastDeliveryAt: webhook.lastDeliveryAt?.toISOString() ?? null,
    lastSuccessAt: webhook.lastSuccessAt?.toISOString() ?? null,
    createdBy: webhook.createdBy,
    createdAt: webhook.createdAt.toISOString(),
    updatedAt: webhook.updatedAt.toISOString(),
  };
}

/**
 * Loads a webhook the caller may read (`write`: change, with MFA). Another tenant's webhook answers
 * 404 like a missing one.
 */
export function requireWebhook(ctx: RequestContext, id: string, access: 'read' | 'write'): Promise<Webhook> {
  return loadOwned(ctx, Webhook, id, WEBHOOK_PERMISSION[access], { mfa: access === 'write', resource: 'Webhook' });
}

async function assertSafeUrl(ctx: RequestContext, url: string): Promise<void> {
  try {
    await checkOutboundUrl(url, guardOptions(ctx));
  } catch (error) {
    if (error instanceof UnsafeUrlError) throw badRequest('Invalid webhook URL');
    throw error;
  }
}

/** The override to store: `input` over `current` (PATCH changes only the fields it names), checked with the defaults filled in. */
function mergedRetryPolicy(current: Partial<WebhookRetryPolicy> | null, input: z.output<typeof RetryPolicyInput>): Partial<WebhookRetryPolicy> {
  const given = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined)) as Partial<WebhookRetryPolicy>;
  const policy = { ...current, ...given };
  const merged = { ...DEFAULT_RETRY_POLICY, ...policy };
  if (merged.maxDelayMs < merged.initialDelayMs) throw badRequest('retryPolicy.maxDelayMs: must be at least initialDelayMs');
  return policy;
}

function sealHeaders(ctx: RequestContext, headers: { key: string; value: string }[]): StoredWebhookHeader[] {
  return headers.map((h) => ({ key: h.key, value: ctx.runtime.secrets.encrypt(h.value) }));
}

export async function listWebhooks(ctx: RequestContext, raw: ListWebhooksInput): Promise<Page<WebhookView>> {
  const query = parseInput(ListWebhooksQuery, raw);
  const orgId = await targetOrgId(ctx, query.orgId, 'Webhook');
  await authorize(ctx, WEBHOOK_PERMISSION.read, { orgId, resource: 'Webhook' });
  const where = { orgId, ...(query.status ? { status: TO_STORED[query.status] } : {}) };
  const [rows, total] = await ctx.em.findAndCount(Webhook, where, { orderBy: { createdAt: 'desc', id: 'desc' }, ...pageOptions(query) });
  return toPage(
    rows.map((w) => webhookView(ctx, w)),
    total,
    query,
  );
}

export async function getWebhook(ctx: RequestContext, id: string): Promise<WebhookDetailView> {
  const webhook = await requireWebhook(ctx, id, 'read');
  return { ...webhookView(ctx, webhook), deliveryStats: await deliveryStats(ctx, webhook.id) };
}

/**
 * Counts by status and the last successful delivery of a webhook the caller has already been shown
 * (GraphQL `Webhook.deliveryStats`). The webhooks of one list are counted together: a request-scoped
 * DataLoader turns every webhook's statistics into one query, however many webhooks.
 */
export async function webhookDeliveryStats(ctx: RequestContext, webhook: Pick<WebhookView, 'id' | 'orgId'>): Promise<DeliveryStats> {
  // Queued before the decision so that every webhook of a list joins one batch; nothing is answered unless the decision allows it.
  const stats = statsLoader(ctx).load(webhook.id);
  stats.catch(() => {});
  await authorize(ctx, WEBHOOK_PERMISSION.read, { orgId: webhook.orgId, resource: 'Webhook' });
  return stats;
}

/** Per request (its Loaders), the batching loader of delivery statistics. */
const statsLoaders = new WeakMap<Loaders, DataLoader<string, DeliveryStats>>();

function statsLoader(ctx: RequestContext): DataLoader<string, DeliveryStats> {
  let loader = statsLoaders.get(ctx.loaders);
  // No cache: a later mutation in the same request must not be answered from an earlier read.
  if (!loader) statsLoaders.set(ctx.loaders, (loader = new DataLoader((ids) => deliveryStatsOf(ctx, ids), { cache: false })));
  return loader;
}

async function deliveryStats(ctx: RequestContext, webhookId: string): Promise<DeliveryStats> {
  return (await deliveryStatsOf(ctx, [webhookId]))[0]!;
}

async function deliveryStatsOf(ctx: RequestContext, webhookIds: readonly string[]): Promise<DeliveryStats[]> {
  const ids = [...new Set(webhookIds)];
  const rows = (await ctx.em.execute(
    `select webhook_id, status, count(*)::int as count, max(delivered_at) as last from webhook_delivery
     where webhook_id in (${ids.map(() => '?').join(', ')}) group by webhook_id, status`,
    ids,
  )) as { webhook_id: string; status: keyof DeliveryStats; count: number; last: Date | null }[];
  const byWebhook = new Map(ids.map((id) => [id, { total: 0, pending: 0, delivered: 0, failed: 0, retrying: 0, lastDeliveredAt: null } as DeliveryStats]));
  for (const row of rows) {
    const stats = byWebhook.get(row.webhook_id)!;
    (stats[row.status] as number) = row.count;
    stats.total += row.count;
    if (row.status === 'delivered' && row.last) stats.lastDeliveredAt = new Date(row.last).toISOString();
  }
  // A webhook named twice in one batch gets its own copy.
  return webhookIds.map((id) => ({ ...byWebhook.get(id)! }));
}

export async function createWebhook(ctx: RequestContext, raw: CreateWebhookInput): Promise<WebhookView> {
  const input = parseInput(CreateWebhookSchema, raw);
  const orgId = await targetOrgId(ctx, input.orgId, 'Webhook');
  const principal = await authorize(ctx, WEBHOOK_PERMISSION.write, { orgId, mfa: true, resource: 'Webhook' });
  await assertSafeUrl(ctx, input.url);
  const retryPolicy = input.retryPolicy ? mergedRetryPolicy(null, input.retryPolicy) : null;
  return withTransaction(ctx, async (tx) => {
    const webhook = tx.em.create(Webhook, {
      orgId,
      name: input.name,
      url: tx.runtime.secrets.encrypt(input.url),
      secret: input.secret === undefined ? null : tx.runtime.secrets.encrypt(input.secret),
      events: input.events,
      headers: sealHeaders(tx, input.headers),
      retryPolicy,
      createdBy: principal.userId,
    });
    await tx.em.flush();
    const changes = ['name', 'url', 'events'];
    if (input.secret !== undefined) changes.push('secret');
    if (input.headers.length > 0) changes.push('headers');
    if (retryPolicy) changes.push('retryPolicy');
    await recordAudit(tx, { action: 'webhook.create', resourceType: 'webhook', resourceId: webhook.id, orgId, changes });
    return webhookView(tx, webhook);
  });
}

export async function updateWebhook(ctx: RequestContext, id: string, raw: UpdateWebhookInput): Promise<WebhookView> {
  const input = parseInput(UpdateWebhookSchema, raw);
  const webhook = await requireWebhook(ctx, id, 'write');
  if (input.url !== undefined) await assertSafeUrl(ctx, input.url);
  const retryPolicy = input.retryPolicy ? mergedRetryPolicy(webhook.retryPolicy, input.retryPolicy) : input.retryPolicy;
  return withTransaction(ctx, async (tx) => {
    const { secrets } = tx.runtime;
    const changes = Object.entries(input)
      .filter(([, value]) => value !== undefined)
      .map(([field]) => field);
    if (input.name !== undefined) webhook.name = input.name;
    if (input.url !== undefined) webhook.url = secrets.encrypt(input.url);
    if (input.secret !== undefined) webhook.secret = input.secret === null ? null : secrets.encrypt(input.secret);
    if (input.events !== undefined) webhook.events = input.events;
    if (input.headers !== undefined) webhook.headers = sealHeaders(tx, input.headers);
    if (retryPolicy !== undefined) webhook.retryPolicy = retryPolicy;
    if (input.status !== undefined) {
      webhook.status = TO_STORED[input.status];
      // Re-activation starts a fresh failure streak.
      if (input.status === 'active') Object.assign(webhook, { consecutiveFailures: 0, failingSince: null });
    }
    await tx.em.persistAndFlush(webhook);
    await recordAudit(tx, { action: 'webhook.update', resourceType: 'webhook', resourceId: webhook.id, orgId: webhook.orgId, changes });
    return webhookView(tx, webhook);
  });
}

export async function deleteWebhook(ctx: RequestContext, id: string): Promise<void> {
  const webhook = await requireWebhook(ctx, id, 'write');
  await withTransaction(ctx, async (tx) => {
    const deliveries = await tx.em.nativeDelete(WebhookDelivery, { webhookId: webhook.id });
    await tx.em.nativeDelete(Webhook, { id: webhook.id });
    await recordAudit(tx, { action: 'webhook.delete', resourceType: 'webhook', resourceId: webhook.id, orgId: webhook.orgId, details: { deliveries } });
  });
}

/** The URL, secret and custom headers as the delivery worker needs them. */
export function unsealWebhook(ctx: RequestContext, webhook: Pick<Webhook, 'url' | 'secret' | 'headers'>): { url: string; secret: string | null; headers: { key: string; value: string }[] } {
  const { secrets } = ctx.runtime;
  return {
    url: secrets.decrypt(webhook.url),
    secret: webhook.secret === null ? null : secrets.decrypt(webhook.secret),
    headers: webhook.headers.map((h) => ({ key: h.key, value: secrets.decrypt(h.value) })),
  };
}
