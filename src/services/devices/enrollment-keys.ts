import crypto from 'node:crypto';
import { LockMode, type FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { EnrollmentKey } from '../../../entities/enrollment-key.js';
import { Site } from '../../../entities/site.js';
import type { RequestContext } from '../../auth/context.js';
import type { Permission } from '../../auth/permissions.js';
import { authorize, loadOwned, permits, targetOrgId, tenantWhere, visibleSiteIds } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { badRequest, forbidden, notFound } from '../../errors.js';
import { PageQuery, pageOptions, pageSchema, toPage, type Page } from '../../pagination.js';
import { sha256Hex } from '../../secrets.js';
import { enumValues, isoDateTime, parseInput, timestamp, uuid } from '../../validation.js';
import { recordChange } from '../audit/api.js';
import { providedFields } from '../shared/changes.js';
import { shownWhen } from '../../events/sight.js';
import type { DomainEventMap } from '../../events/types.js';

/** Keys look like `enr_<12-char prefix>_<secret>`; the prefix is stored and shown, the whole key only hashed. */
function generateEnrollmentKey(): { key: string; prefix: string; hash: string } {
  const prefix = crypto.randomBytes(9).toString('base64url').replace(/[-_]/g, 'x').slice(0, 12);
  const key = `enr_${prefix}_${crypto.randomBytes(32).toString('base64url')}`;
  return { key, prefix, hash: sha256Hex(key) };
}

export const CreateEnrollmentKeySchema = z
  .object({
    orgId: uuid().optional().describe('organization users: their own organization by default; others: required'),
    siteId: uuid().nullable().optional().describe('devices enrolled with the key join this site'),
    name: z.string().trim().min(1).max(255).describe('Display name: 1 to 255 characters, surrounding spaces trimmed.'),
    expiresAt: isoDateTime().nullable().optional().describe('null or absent: never expires'),
    maxUsage: z.number().int().min(1).max(1_000_000).nullable().optional().describe('null or absent: no limit'),
  })
  .strict().describe('A new enrollment key, which agents present to enroll their device.');
export type CreateEnrollmentKeyInput = z.input<typeof CreateEnrollmentKeySchema>;

export const EnrollmentKeyListQuery = PageQuery.extend({ orgId: uuid().optional().describe('Only keys of this organization.'), siteId: uuid().optional().describe('Only keys of this site.') }).strict();
export type EnrollmentKeyListInput = z.input<typeof EnrollmentKeyListQuery>;

export const EnrollmentKeyViewSchema = z
  .object({
    id: uuid().describe('Unique ID.'),
    orgId: uuid().describe('The organization devices enroll into.'),
    siteId: uuid().nullable().describe('The site devices enroll into; null for none.'),
    name: z.string().describe('Display name.'),
    prefix: z.string().describe('the visible start of the key'),
    expiresAt: timestamp().nullable().describe('When the key stops enrolling; null if it does not expire.'),
    maxUsage: z.number().int().nullable().describe('How many enrollments the key allows; null for no limit.'),
    usageCount: z.number().int().describe('How many devices have enrolled with it.'),
    lastUsedAt: timestamp().nullable().describe('When a device last enrolled with it; null if never.'),
    deviceId: uuid().nullable().describe('a provisioning key: the pre-created device it claims'),
    status: z
      .enum(['active', 'expired', 'exhausted'])
      .meta({ title: 'EnrollmentKeyStatus', description: 'Whether an enrollment key still enrolls devices.' })
      .register(enumValues, { active: 'Enrolls devices.', expired: 'Past its expiresAt: refused.', exhausted: 'Used maxUsage times: refused.' })
      .describe('Whether the key still enrolls devices.'),
    createdAt: timestamp().describe('When the key was created.'),
  })
  .meta({ title: 'EnrollmentKey', description: 'A key agents present to enroll their device in an organization (and site); the key itself is only shown when created or rotated.' });
export type EnrollmentKeyView = z.output<typeof EnrollmentKeyViewSchema>;

export const EnrollmentKeyWithSecretSchema = EnrollmentKeyViewSchema.extend({ key: z.string().describe('shown only in this answer') }).meta({
  title: 'EnrollmentKeyWithSecret',
  description: 'An enrollment key with the key itself, returned by createEnrollmentKey and rotateEnrollmentKey only.',
});
export type EnrollmentKeyWithSecret = z.output<typeof EnrollmentKeyWithSecretSchema>;
export const EnrollmentKeyPageSchema = pageSchema(EnrollmentKeyViewSchema, 'EnrollmentKeyPage');

export function enrollmentKeyStatus(key: EnrollmentKey, now: Date): EnrollmentKeyView['status'] {
  if (key.expiresAt && key.expiresAt <= now) return 'expired';
  if (key.maxUsage !== null && key.usageCount >= key.maxUsage) return 'exhausted';
  return 'active';
}

function enrollmentKeyView(key: EnrollmentKey, now: Date): EnrollmentKeyView {
  return {
    id: key.id,
    orgId: key.orgId,
    siteId: key.siteId,
    name: key.name,
    prefix: key.prefix,
    expiresAt: key.expiresAt?.toISOString() ?? null,
    maxUsage: key.maxUsage,
    usageCount: key.usageCount,
    lastUsedAt: key.lastUsedAt?.toISOString() ?? null,
    deviceId: key.deviceId,
    status: enrollmentKeyStatus(key, now),
    createdAt: key.createdAt.toISOString(),
  };
}

/**
 * The site a key or device joins must be in the organization and, for callers limited to some
 * sites, one of theirs; such callers must name one.
 */
export async function checkTargetSite(ctx: RequestContext, orgId: string, siteId: string | null | undefined): Promise<string | null> {
  const allowed = visibleSiteIds(ctx, orgId);
  if (!siteId) {
    if (allowed) throw forbidden('Users limited to some sites must choose one of them (siteId)');
    return null;
  }
  const site = await ctx.em.findOne(Site, { id: siteId, orgId });
  if (!site || (allowed && !allowed.includes(siteId))) throw notFound('Site');
  return site.id;
}

function loadKey(ctx: RequestContext, id: string, permission: Permission): Promise<EnrollmentKey> {
  return loadOwned(ctx, EnrollmentKey, id, permission, { resource: 'Enrollment key' });
}

export async function listEnrollmentKeys(ctx: RequestContext, rawQuery: EnrollmentKeyListInput): Promise<Page<EnrollmentKeyView>> {
  const query = parseInput(EnrollmentKeyListQuery, rawQuery);
  await authorize(ctx, 'devices:read');
  const where: FilterQuery<EnrollmentKey>[] = [(await tenantWhere<EnrollmentKey>(ctx, { org: 'orgId', site: 'siteId', requestedOrgId: query.orgId })) ?? {}];
  if (query.siteId) where.push({ siteId: query.siteId });
  const [rows, total] = await ctx.em.findAndCount(EnrollmentKey, { $and: where }, { orderBy: { createdAt: 'desc', id: 'desc' }, ...pageOptions(query) });
  const now = ctx.runtime.clock.now();
  return toPage(
    rows.map((key) => enrollmentKeyView(key, now)),
    total,
    query,
  );
}

export async function getEnrollmentKey(ctx: RequestContext, id: string): Promise<EnrollmentKeyView> {
  return enrollmentKeyView(await loadKey(ctx, id, 'devices:read'), ctx.runtime.clock.now());
}

export async function createEnrollmentKey(ctx: RequestContext, rawInput: CreateEnrollmentKeyInput): Promise<EnrollmentKeyWithSecret> {
  const input = parseInput(CreateEnrollmentKeySchema, rawInput);
  const orgId = await targetOrgId(ctx, input.orgId);
  const principal = await authorize(ctx, 'devices:write', { orgId, resource: 'Organization' });
  const siteId = await checkTargetSite(ctx, orgId, input.siteId);
  const expiresAt = input.expiresAt ? new Date(input.expiresAt) : null;
  if (expiresAt && expiresAt <= ctx.runtime.clock.now()) throw badRequest('expiresAt must be in the future');
  return withTransaction(ctx, (tx) =>
    issueKey(tx, { orgId, siteId, name: input.name, expiresAt, maxUsage: input.maxUsage ?? null, createdBy: principal.userId, deviceId: null }, providedFields(input)),
  );
}

/** Writes a new key (also the single-use key of a provisioned device) and answers it with its secret, once. */
export async function issueKey(
  tx: RequestContext,
  fields: Pick<EnrollmentKey, 'orgId' | 'siteId' | 'name' | 'expiresAt' | 'maxUsage' | 'createdBy' | 'deviceId'>,
  changes: string[],
): Promise<EnrollmentKeyWithSecret> {
  const material = generateEnrollmentKey();
  const key = tx.em.create(EnrollmentKey, { ...fields, prefix: material.prefix, keyHash: material.hash });
  await tx.em.flush();
  await recordChange(
    tx,
    { action: 'enrollment_key.create', resourceType: 'enrollment_key', resourceId: key.id, orgId: key.orgId, changes, details: { name: key.name, prefix: key.prefix } },
    { enrollmentKeyId: key.id, orgId: key.orgId, siteId: key.siteId, name: key.name },
  );
  return { ...enrollmentKeyView(key, tx.runtime.clock.now()), key: material.key };
}

/** A new secret for the same key; the old one stops working at once. */
export async function rotateEnrollmentKey(ctx: RequestContext, id: string): Promise<EnrollmentKeyWithSecret> {
  await loadKey(ctx, id, 'devices:write');
  return withTransaction(ctx, async (tx) => {
    const key = await tx.em.findOneOrFail(EnrollmentKey, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    const oldPrefix = key.prefix;
    const material = generateEnrollmentKey();
    key.prefix = material.prefix;
    key.keyHash = material.hash;
    await tx.em.flush();
    await recordChange(
      tx,
      { action: 'enrollment_key.rotate', resourceType: 'enrollment_key', resourceId: key.id, orgId: key.orgId, details: { oldPrefix, prefix: key.prefix } },
      { enrollmentKeyId: key.id, orgId: key.orgId, siteId: key.siteId, name: key.name },
    );
    return { ...enrollmentKeyView(key, tx.runtime.clock.now()), key: material.key };
  });
}

export async function deleteEnrollmentKey(ctx: RequestContext, id: string): Promise<void> {
  const key = await loadKey(ctx, id, 'devices:write');
  await withTransaction(ctx, async (tx) => {
    await tx.em.nativeDelete(EnrollmentKey, { id });
    await recordChange(
      tx,
      { action: 'enrollment_key.delete', resourceType: 'enrollment_key', resourceId: id, orgId: key.orgId, details: { name: key.name, prefix: key.prefix } },
      { enrollmentKeyId: id, orgId: key.orgId, siteId: key.siteId, name: key.name },
    );
  });
}

/** As the key list shows keys: to device readers, a site-limited one only its sites' keys. */
export const enrollmentKeyEventSight = shownWhen(async (ctx, event) => {
  const { siteId } = event.data as DomainEventMap['enrollment_key.created'];
  const sites = visibleSiteIds(ctx, event.orgId);
  return (await permits(ctx, 'devices:read', { orgId: event.orgId! })) && (!sites || (siteId !== null && sites.includes(siteId)));
});
