import { z } from 'zod';
import { LockMode, type FilterQuery } from '@mikro-orm/core';
import { ApiKey } from '../../../entities/api-key.js';
import { generateApiKey } from '../../auth/api-key-format.js';
import type { Principal, RequestContext } from '../../auth/context.js';
import { expandPermissions, hasPermission, isValidPermission } from '../../auth/permissions.js';
import { authenticated, authorize, isUuid, requirePrincipal, tenantWhere, type AuthorizeOptions } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { badRequest, conflict, forbidden, notFound } from '../../errors.js';
import { PageQuery, pageOptions, pageSchema, toPage, type Page } from '../../pagination.js';
import { enumValues, isoDateTime, parseInput, timestamp, uuid } from '../../validation.js';
import { recordChange } from '../audit/api.js';

const ApiKeyStatusSchema = z
  .enum(['active', 'revoked', 'expired'])
  .meta({ title: 'ApiKeyStatus', description: 'Whether an API key still authenticates.' })
  .register(enumValues, { active: 'Authenticates requests.', revoked: 'Revoked by its owner or an administrator: refused.', expired: 'Past its expiresAt: refused.' });
export type ApiKeyStatus = z.output<typeof ApiKeyStatusSchema>;

/** How a key appears in every response: never the hash, and the full key only on create and rotate. */
export const ApiKeyViewSchema = z
  .object({
    id: uuid().describe('Unique ID.'),
    name: z.string().describe('Display name.'),
    prefix: z.string().describe('the visible start of the key, `rmm_<prefix>_…`'),
    scopes: z.array(z.string()).describe('The permissions the key grants (`resource:action`, wildcards allowed), never more than its owner holds.'),
    userId: uuid().describe('The user the key acts as.'),
    orgId: uuid().nullable().describe('The organization of the membership the key acts through; null for partner and system keys.'),
    partnerId: uuid().nullable().describe('The partner of the membership the key acts through; null for organization and system keys.'),
    expiresAt: timestamp().nullable().describe('When the key stops working; null if it does not expire.'),
    lastUsedAt: timestamp().nullable().describe('When the key last authenticated a request; null if never.'),
    revokedAt: timestamp().nullable().describe('When the key was revoked; null while it is not.'),
    createdAt: timestamp().describe('When the key was created.'),
    status: ApiKeyStatusSchema.describe('Whether the key still authenticates.'),
  })
  .meta({ title: 'ApiKey', description: 'An API key as stored: its prefix, never the key or its hash.' });
export type ApiKeyView = z.output<typeof ApiKeyViewSchema>;
export const ApiKeyPageSchema = pageSchema(ApiKeyViewSchema, 'ApiKeyPage');

/** The one response that carries the key itself. */
export const ApiKeyWithSecretSchema = ApiKeyViewSchema.extend({ key: z.string().describe('the full key; send it as the X-API-Key header') }).meta({
  title: 'ApiKeyWithSecret',
  description: 'Returned by createApiKey and rotateApiKey only: `key` is never shown again.',
});
export type ApiKeyWithSecret = z.output<typeof ApiKeyWithSecretSchema>;

// Kept as text (the service converts) so that parsing twice, in the adapter and the service, is harmless.
const futureDate = isoDateTime().refine((s) => Date.parse(s) > Date.now(), 'must be in the future');
const scopeList = z.array(z.string().min(1).max(100)).min(1, 'at least one scope is required').max(100);

export const CreateApiKeySchema = z
  .object({
    name: z.string().trim().min(1).max(255).describe('Display name: 1 to 255 characters, surrounding spaces trimmed.'),
    scopes: scopeList.describe('permissions (`resource:action`, wildcards allowed), within your own'),
    expiresAt: futureDate.optional().describe('in the future'),
  })
  .strict().describe('A new API key for the caller.');
export type CreateApiKeyInput = z.input<typeof CreateApiKeySchema>;

export const UpdateApiKeySchema = z
  .object({
    name: z.string().trim().min(1).max(255).optional().describe('Display name: 1 to 255 characters, surrounding spaces trimmed.'),
    scopes: scopeList.optional().describe('Replaces the granted permissions (`resource:action`, wildcards allowed), within your own.'),
    expiresAt: futureDate.nullable().optional().describe('in the future; null removes the expiry'),
  })
  .strict().describe('Changes to an API key; a field left out keeps its value.');
export type UpdateApiKeyInput = z.input<typeof UpdateApiKeySchema>;

export const ApiKeyListQuery = PageQuery.extend({
  status: ApiKeyStatusSchema.optional().describe('Only keys in this state.'),
  userId: uuid().optional().describe('Only keys of this user.'),
}).strict();
export type ApiKeyListInput = z.input<typeof ApiKeyListQuery>;

export function apiKeyView(key: ApiKey): ApiKeyView {
  return {
    id: key.id,
    name: key.name,
    prefix: key.prefix,
    scopes: key.scopes,
    userId: key.userId,
    orgId: key.orgId,
    partnerId: key.partnerId,
    expiresAt: key.expiresAt?.toISOString() ?? null,
    lastUsedAt: key.lastUsedAt?.toISOString() ?? null,
    revokedAt: key.revokedAt?.toISOString() ?? null,
    createdAt: key.createdAt.toISOString(),
    status: keyStatus(key),
  };
}

function keyStatus(key: ApiKey, now = new Date()): ApiKeyStatus {
  if (key.revokedAt) return 'revoked';
  if (key.expiresAt && key.expiresAt <= now) return 'expired';
  return 'active';
}

/**
 * Everyone sees their own keys. Holders of `api_keys:read` also see the keys of the tenants they
 * can see: organization admins their organization's, partner admins their organizations' and their
 * partner's own staff's, system admins all.
 */
export async function listApiKeys(ctx: RequestContext, query: ApiKeyListInput): Promise<Page<ApiKeyView>> {
  const input = parseInput(ApiKeyListQuery, query);
  const principal = requirePrincipal(ctx);
  const own: FilterQuery<ApiKey> = { userId: principal.userId };
  let visible: FilterQuery<ApiKey> = own;
  if (hasPermission(principal.permissions, 'api_keys:read')) {
    await authorize(ctx, 'api_keys:read');
    const tenants = await tenantWhere<ApiKey>(ctx, { org: 'orgId', partner: 'partnerId' });
    visible = tenants === null ? {} : { $or: [own, tenants] };
  } else {
    authenticated(ctx);
  }
  const now = new Date();
  const status: Record<ApiKeyStatus, FilterQuery<ApiKey>> = {
    revoked: { revokedAt: { $ne: null } },
    expired: { revokedAt: null, expiresAt: { $lte: now } },
    active: { revokedAt: null, $or: [{ expiresAt: null }, { expiresAt: { $gt: now } }] },
  };
  const where: FilterQuery<ApiKey>[] = [visible];
  if (input.userId) where.push({ userId: input.userId });
  if (input.status) where.push(status[input.status]);
  const [rows, total] = await ctx.em.findAndCount(ApiKey, { $and: where }, { orderBy: { createdAt: 'desc', id: 'desc' }, ...pageOptions(input) });
  return toPage(rows.map(apiKeyView), total, input);
}

export async function getApiKey(ctx: RequestContext, id: string): Promise<ApiKeyView> {
  const key = await loadKey(ctx, id);
  if (key.userId === requirePrincipal(ctx).userId) authenticated(ctx);
  else await authorize(ctx, 'api_keys:read', keyTenant(key));
  return apiKeyView(key);
}

export async function createApiKey(ctx: RequestContext, rawInput: CreateApiKeyInput): Promise<ApiKeyWithSecret> {
  const principal = await authorize(ctx, 'api_keys:write', { mfa: true });
  const input = parseInput(CreateApiKeySchema, rawInput);
  checkScopes(principal, input.scopes);
  const expiresAt = input.expiresAt ? new Date(input.expiresAt) : null;
  await checkExpiryWithinCallingKey(ctx, principal, expiresAt);
  if (!principal.userId || !principal.membershipId) throw forbidden('API keys belong to a user');
  const material = generateApiKey();
  return withTransaction(ctx, async (tx) => {
    const key = tx.em.create(ApiKey, {
      name: input.name,
      prefix: material.prefix,
      keyHash: material.hash,
      scopes: input.scopes,
      userId: principal.userId!,
      membershipId: principal.membershipId!,
      orgId: principal.orgId,
      partnerId: principal.partnerId,
      expiresAt,
    });
    await tx.em.flush();
    await recordChange(
      tx,
      {
        ...auditTarget(key),
        action: 'api_key.create',
        details: { name: key.name, prefix: key.prefix, scopes: key.scopes, expiresAt: key.expiresAt?.toISOString() ?? null },
      },
      { apiKeyId: key.id, userId: key.userId, name: key.name, scopes: key.scopes },
    );
    return { ...apiKeyView(key), key: material.key };
  });
}

export async function updateApiKey(ctx: RequestContext, id: string, rawInput: UpdateApiKeyInput): Promise<ApiKeyView> {
  const principal = await authorize(ctx, 'api_keys:write', { ...keyTenant(await loadKey(ctx, id)), mfa: true });
  const input = parseInput(UpdateApiKeySchema, rawInput);
  if (input.scopes) checkScopes(principal, input.scopes);
  if (input.expiresAt !== undefined) await checkExpiryWithinCallingKey(ctx, principal, input.expiresAt === null ? null : new Date(input.expiresAt));
  const changes = (Object.keys(input) as (keyof typeof input)[]).filter((k) => input[k] !== undefined);
  return withTransaction(ctx, async (tx) => {
    const key = await lockKey(tx, id);
    if (key.revokedAt) throw conflict('API key is revoked');
    if (input.name !== undefined) key.name = input.name;
    if (input.scopes !== undefined) key.scopes = input.scopes;
    if (input.expiresAt !== undefined) key.expiresAt = input.expiresAt === null ? null : new Date(input.expiresAt);
    await tx.em.flush();
    await recordChange(
      tx,
      { ...auditTarget(key), action: 'api_key.update', changes, details: input.scopes ? { scopes: input.scopes } : {} },
      { apiKeyId: key.id, userId: key.userId, changes },
    );
    return apiKeyView(key);
  });
}

/** Revoking an already revoked key changes nothing (idempotent). */
export async function revokeApiKey(ctx: RequestContext, id: string): Promise<ApiKeyView> {
  await authorize(ctx, 'api_keys:delete', { ...keyTenant(await loadKey(ctx, id)), mfa: true });
  return withTransaction(ctx, async (tx) => {
    const key = await lockKey(tx, id);
    if (key.revokedAt) return apiKeyView(key);
    key.revokedAt = new Date();
    await tx.em.flush();
    await recordChange(tx, { ...auditTarget(key), action: 'api_key.revoke', details: { prefix: key.prefix } }, { apiKeyId: key.id, userId: key.userId, reason: 'revoked' });
    return apiKeyView(key);
  });
}

/**
 * Revokes every live key of a user inside the caller's transaction (a password change that did not
 * keep them). Returns how many were revoked.
 */
export async function revokeKeysOfUser(tx: RequestContext, userId: string, reason: string): Promise<number> {
  const keys = await tx.em.find(ApiKey, { userId, revokedAt: null }, { lockMode: LockMode.PESSIMISTIC_WRITE });
  const now = new Date();
  for (const key of keys) {
    key.revokedAt = now;
    await recordChange(tx, { ...auditTarget(key), action: 'api_key.revoke', details: { prefix: key.prefix, reason } }, { apiKeyId: key.id, userId, reason });
  }
  await tx.em.flush();
  return keys.length;
}

/**
 * New material on the same row (id, name, scopes and expiry kept): the old key's hash is gone, so
 * it stops working with the commit. Only the owner may rotate: new material in an admin's hands
 * would let the admin act as the owner. Admins revoke instead.
 */
export async function rotateApiKey(ctx: RequestContext, id: string): Promise<ApiKeyWithSecret> {
  const loaded = await loadKey(ctx, id);
  const principal = await authorize(ctx, 'api_keys:write', { ...keyTenant(loaded), mfa: true });
  if (loaded.userId !== principal.userId) throw forbidden('Only the owner of an API key can rotate it');
  const material = generateApiKey();
  return withTransaction(ctx, async (tx) => {
    const key = await lockKey(tx, id);
    if (key.revokedAt) throw conflict('API key is revoked');
    const oldPrefix = key.prefix;
    key.prefix = material.prefix;
    key.keyHash = material.hash;
    key.lastUsedAt = null;
    await tx.em.flush();
    await recordChange(tx, { ...auditTarget(key), action: 'api_key.rotate', details: { oldPrefix, prefix: material.prefix } }, { apiKeyId: key.id, userId: key.userId });
    return { ...apiKeyView(key), key: material.key };
  });
}

/** Re-reads the key under a row lock, so concurrent revoke/rotate/update apply one after another. */
async function lockKey(tx: RequestContext, id: string): Promise<ApiKey> {
  return tx.em.findOneOrFail(ApiKey, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true, failHandler: () => notFound('API key') });
}

function auditTarget(key: ApiKey) {
  return { resourceType: 'api_key', resourceId: key.id, orgId: key.orgId, partnerId: key.partnerId };
}

async function loadKey(ctx: RequestContext, id: string): Promise<ApiKey> {
  const principal = requirePrincipal(ctx);
  const key = isUuid(id) ? await ctx.em.findOne(ApiKey, { id }) : null;
  if (!key || !canSeeKeyTenant(principal, key)) throw notFound('API key');
  return key;
}

/** System-level keys (no organization, no partner) are visible to system callers only. */
function canSeeKeyTenant(principal: Principal, key: ApiKey): boolean {
  return key.userId === principal.userId || key.orgId !== null || key.partnerId !== null || principal.scope === 'system';
}

/** The tenant a key belongs to, for `authorize`: its organization, else its partner. */
function keyTenant(key: ApiKey): AuthorizeOptions {
  if (key.orgId) return { orgId: key.orgId, resource: 'API key' };
  return { partnerId: key.partnerId, resource: 'API key' };
}

/**
 * A request made with an API key cannot give any key (itself included) a longer life than the calling
 * key has: otherwise a leaked, expiring key could lift its own expiry, or mint a successor that never
 * expires. No expiry (null) counts as the longest. Scopes are bounded the same way by `checkScopes`.
 */
async function checkExpiryWithinCallingKey(ctx: RequestContext, principal: Principal, expiresAt: Date | null): Promise<void> {
  if (principal.kind !== 'apiKey') return;
  const calling = await ctx.em.findOne(ApiKey, { id: principal.id });
  const limit = calling?.expiresAt;
  if (!limit || (expiresAt !== null && expiresAt <= limit)) return;
  throw forbidden(`A request made with an API key cannot set an expiry later than that key's own: expiresAt must be at most ${limit.toISOString()}`);
}

/** Scopes must name catalog permissions (400) and stay within what the creator holds (403). */
function checkScopes(principal: Principal, scopes: string[]): void {
  const invalid = scopes.filter((s) => !isValidPermission(s));
  if (invalid.length > 0) throw badRequest(`Unknown scopes: ${invalid.join(', ')}`, { scopes: invalid });
  const held = new Set(expandPermissions(principal.permissions));
  const beyond = scopes.filter((s) => expandPermissions([s]).some((p) => !held.has(p)));
  if (beyond.length > 0) throw forbidden(`Scopes exceed your permissions: ${beyond.join(', ')}`);
}
