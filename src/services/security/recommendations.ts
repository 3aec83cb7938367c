import { LockMode } from '@mikro-orm/core';
import { z } from 'zod';
import { SecurityRecommendation, type SecurityFactor } from '../../../entities/security-posture.js';
import type { RequestContext } from '../../auth/context.js';
import { isUuid, loadOwned } from '../../auth/policy.js';
import { uuidArray } from '../../db/arrays.js';
import { requestRows, statement } from '../../db/prepared.js';
import { withTransaction } from '../../db/transaction.js';
import { conflict, notFound } from '../../errors.js';
import { cursorListFields, cursorPageSchema, decodeCursor, finishCursorPage } from '../../pagination.js';
import { enumValues, parseInput, timestamp, uuid } from '../../validation.js';
import { recordAudit } from '../audit/api.js';
import { findDevices } from '../devices/api.js';
import { visibleRowsSql } from './posture.js';
import { SecurityFactorSchema, type SecurityFactorKey } from './security-factors.js';

/*
 * Recommendations: one per device and failing score factor, kept in line on each recompute. A factor
 * that passes again completes its open recommendation; one failing again reopens a completed one; a
 * dismissed one stays dismissed. Users complete or dismiss open ones.
 */

const RESOURCE = 'Security recommendation';

export const RECOMMENDATION_STATUSES = ['open', 'completed', 'dismissed'] as const;
export const RecommendationStatusSchema = z
  .enum(RECOMMENDATION_STATUSES)
  .meta({ title: 'SecurityRecommendationStatus', description: 'Where a security recommendation stands' })
  .register(enumValues, { open: 'The factor fails; not yet acted on.', completed: 'Done: by a user, or the factor passes again.', dismissed: 'Set aside by a user; stays so.' });

const TEXTS: Record<SecurityFactorKey, { title: string; message: string }> = {
  antivirus: { title: 'Enable and update the antivirus', message: 'The antivirus is missing, disabled or out of date.' },
  firewall: { title: 'Enable the firewall', message: 'The firewall is off.' },
  encryption: { title: 'Encrypt the disk', message: 'Disk encryption is off.' },
  passwordPolicy: { title: 'Strengthen the password policy', message: 'Require complex passwords at least as long as the security policy’s passwordMinLength.' },
  localAdmins: { title: 'Reduce local administrators', message: 'The device has more local administrators than the security policy’s maxLocalAdmins.' },
  threats: { title: 'Resolve active threats', message: 'Threats are detected, or failed to be handled, on the device.' },
  patches: { title: 'Install approved patches', message: 'Approved patches are missing, failed or waiting for a restart.' },
};

export const RecommendationViewSchema = z
  .object({
    id: uuid().describe('the recommendation'),
    orgId: uuid().describe('the organization of its device'),
    deviceId: uuid().describe('the device'),
    factor: SecurityFactorSchema,
    status: RecommendationStatusSchema,
    title: z.string().describe('what to do'),
    message: z.string().describe('why'),
    createdAt: timestamp().describe('when the factor first failed'),
    updatedAt: timestamp().describe('when its status last changed'),
  })
  .meta({ title: 'SecurityRecommendation', description: 'What to do about one failing score factor of one device' });
export type RecommendationView = z.output<typeof RecommendationViewSchema>;

interface RecommendationRow {
  id: string;
  org_id: string;
  device_id: string;
  factor: string;
  status: string;
  title: string;
  message: string;
  created_at: Date | string;
  updated_at: Date | string;
}

const iso = (value: Date | string) => new Date(value).toISOString();

function recommendationView(row: RecommendationRow): RecommendationView {
  return {
    id: row.id,
    orgId: row.org_id,
    deviceId: row.device_id,
    factor: row.factor as RecommendationView['factor'],
    status: row.status as RecommendationView['status'],
    title: row.title,
    message: row.message,
    createdAt: iso(row.created_at),
    updatedAt: iso(row.updated_at),
  };
}

// ── sync (on recompute) ─────────────────────────────────────────────────────────────────────────

const OPEN_FAILING = `insert into security_recommendation (id, org_id, device_id, factor, status, title, message, created_at, updated_at)
    select gen_random_uuid(), f.org_id, f.device_id, f.factor, 'open', f.title, f.message, ?, ? from jsonb_to_recordset(?::jsonb) as f(org_id uuid, device_id uuid, factor text, title text, message text)
  on conflict (device_id, factor) do update set status = 'open', updated_at = excluded.updated_at where security_recommendation.status = 'completed'`;
const COMPLETE_PASSING = `update security_recommendation r set status = 'completed', updated_at = ?
  where r.device_id = any(?::uuid[]) and r.status = 'open'
    and not exists (select 1 from jsonb_to_recordset(?::jsonb) as f(device_id uuid, factor text) where f.device_id = r.device_id and f.factor = r.factor)`;

/** Brings the devices' recommendations in line with their failing factors (two statements). */
export async function syncRecommendations(tx: RequestContext, scores: readonly { deviceId: string; orgId: string; factors: SecurityFactor[] }[], now: Date): Promise<void> {
  const failing = scores.flatMap((s) =>
    s.factors.filter((f) => f.earned < f.weight).map((f) => ({ org_id: s.orgId, device_id: s.deviceId, factor: f.key, ...TEXTS[f.key as SecurityFactorKey] })),
  );
  const json = JSON.stringify(failing);
  if (failing.length > 0) await tx.em.execute(OPEN_FAILING, [now, now, json]);
  await tx.em.execute(COMPLETE_PASSING, [now, uuidArray(scores.map((s) => s.deviceId)), json]);
}

// ── list ────────────────────────────────────────────────────────────────────────────────────────

const filters = {
  orgId: uuid().optional().describe('only this organization’s'),
  deviceId: uuid().optional().describe('only this device’s'),
  status: RecommendationStatusSchema.optional().describe('only in this status'),
  factor: SecurityFactorSchema.optional().describe('only about this factor'),
};
export const RecommendationListQuery = z.strictObject({ ...filters, ...cursorListFields });
export type RecommendationListInput = z.input<typeof RecommendationListQuery>;
const RecommendationFilters = z.strictObject(filters);
export const RecommendationPageSchema = cursorPageSchema(RecommendationViewSchema, 'SecurityRecommendationPage', 'security recommendations, newest first');
export type RecommendationPage = z.output<typeof RecommendationPageSchema>;

/** The list's condition as SQL over `r`: the caller's organizations and sites, and the filters. */
async function recommendationWhere(ctx: RequestContext, query: z.output<typeof RecommendationFilters>): Promise<{ sql: string[]; params: unknown[] }> {
  const visible = await visibleRowsSql(ctx, { org: 'r.org_id', device: 'r.device_id' }, query.orgId);
  const where = { sql: [visible.sql], params: visible.params };
  const add = (sql: string, param: unknown) => {
    where.sql.push(sql);
    where.params.push(param);
  };
  if (query.deviceId) {
    const [device] = await findDevices(ctx, { ids: [query.deviceId] }, { fields: ['id'] });
    if (!device) throw notFound('Device');
    add('r.device_id = ?', device.id);
  }
  if (query.status) add('r.status = ?', query.status);
  if (query.factor) add('r.factor = ?', query.factor);
  return where;
}

/** The recommendations of the devices the caller sees, newest first, in keyset pages (one statement). */
export async function listRecommendations(ctx: RequestContext, raw: RecommendationListInput): Promise<RecommendationPage> {
  const query = parseInput(RecommendationListQuery, raw);
  const where = await recommendationWhere(ctx, query);
  if (query.cursor) {
    const at = decodeCursor(query.cursor, 'date');
    where.sql.push('(r.created_at, r.id) < (?::timestamptz, ?::uuid)');
    where.params.push(at.value, at.id);
  }
  const rows = await requestRows<RecommendationRow>(
    ctx.em,
    statement(`select r.* from security_recommendation r where ${where.sql.join(' and ')} order by r.created_at desc, r.id desc limit ?`),
    [...where.params, query.limit + 1],
  );
  const page = finishCursorPage(rows, query.limit, (r) => iso(r.created_at));
  return { data: page.items.map(recommendationView), nextCursor: page.nextCursor };
}

/** How many recommendations the list's filters select (its connection's `totalCount`). */
export async function countRecommendations(ctx: RequestContext, raw: z.input<typeof RecommendationFilters>): Promise<number> {
  const where = await recommendationWhere(ctx, parseInput(RecommendationFilters, raw));
  const [row] = await requestRows<{ n: number }>(ctx.em, statement(`select count(*)::int as n from security_recommendation r where ${where.sql.join(' and ')}`), where.params);
  return row!.n;
}

// ── complete, dismiss ───────────────────────────────────────────────────────────────────────────

/** An open recommendation of a device the caller may write for turns `completed` or `dismissed` (else 409). */
async function decide(ctx: RequestContext, id: string, status: 'completed' | 'dismissed'): Promise<RecommendationView> {
  return withTransaction(ctx, async (tx) => {
    // Locked first, so two decisions on one recommendation are made one after the other.
    if (isUuid(id)) await tx.em.findOne(SecurityRecommendation, { id: id.toLowerCase() }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
    const found = await loadOwned(tx, SecurityRecommendation, id, 'security:write', { resource: RESOURCE });
    // A device outside the caller's sites: as if it did not exist.
    if ((await findDevices(tx, { ids: [found.deviceId] }, { fields: ['id'] })).length === 0) throw notFound(RESOURCE);
    if (found.status !== 'open') throw conflict(`The recommendation is ${found.status}, not open`);
    found.status = status;
    found.updatedAt = tx.runtime.clock.now();
    await tx.em.flush();
    await recordAudit(tx, {
      action: status === 'completed' ? 'security_recommendation.complete' : 'security_recommendation.dismiss',
      resourceType: 'security_recommendation',
      resourceId: found.id,
      orgId: found.orgId,
      details: { deviceId: found.deviceId, factor: found.factor },
    });
    return recommendationView({ ...found, org_id: found.orgId, device_id: found.deviceId, created_at: found.createdAt, updated_at: found.updatedAt });
  });
}

export const completeRecommendation = (ctx: RequestContext, id: string) => decide(ctx, id, 'completed');
export const dismissRecommendation = (ctx: RequestContext, id: string) => decide(ctx, id, 'dismissed');
