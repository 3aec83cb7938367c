import { LockMode, type FilterQuery } from '@mikro-orm/core';
import type { QBFilterQuery } from '@mikro-orm/postgresql';
import { z } from 'zod';
import type { DeviceCommand } from '../../../entities/device-command.js';
import { SecurityThreat } from '../../../entities/security.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, loadOwned, requirePrincipal, tenantWhere } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { conflict, notFound } from '../../errors.js';
import { cursorListFields, cursorPageSchema, finishCursorPage, keysetWhere } from '../../pagination.js';
import { enumValues, parseInput, timestamp, uuid } from '../../validation.js';
import { recordAudit } from '../audit/api.js';
import { findDevices, queueCommand, siteLimitedDevicesSql, type CommandTypeHooks } from '../devices/api.js';
import { applyingSettings, recomputeDeviceScores } from './security-scores.js';

/*
 * Threats the devices' antiviruses detected (reported with the inventory's `security` part or found by
 * a scan), and what users do about them: quarantine, remove, restore, each carried by a device command
 * (`quarantine_threat`, `remove_threat`, `restore_threat`) whose result settles the threat's status.
 */

const RESOURCE = 'Security threat';

export const THREAT_SEVERITIES = ['critical', 'high', 'medium', 'low'] as const;
export const ThreatSeveritySchema = z
  .enum(THREAT_SEVERITIES)
  .meta({ title: 'ThreatSeverity', description: 'How dangerous a detected threat is, as the antivirus rates it' })
  .register(enumValues, { critical: 'Active compromise likely.', high: 'Dangerous.', medium: 'Unwanted, of limited harm.', low: 'Potentially unwanted.' });

export const THREAT_STATUSES = ['detected', 'quarantining', 'quarantined', 'removing', 'removed', 'restoring', 'restored', 'failed'] as const;
type ThreatStatus = (typeof THREAT_STATUSES)[number];
export const ThreatStatusSchema = z
  .enum(THREAT_STATUSES)
  .meta({ title: 'ThreatStatus', description: 'Where a threat stands: detected, an action under way, or its outcome' })
  .register(enumValues, {
    detected: 'Reported by the antivirus; nothing done about it yet (or it came back).',
    quarantining: 'A quarantine was sent to the agent and not answered yet.',
    quarantined: 'Isolated by the antivirus.',
    removing: 'A removal was sent to the agent and not answered yet.',
    removed: 'Deleted from the device.',
    restoring: 'A restore was sent to the agent and not answered yet.',
    restored: 'Released from quarantine (a false positive).',
    failed: 'The last action failed or was cancelled.',
  });

export const ThreatViewSchema = z
  .object({
    id: uuid().describe('the threat'),
    deviceId: uuid().describe('the device it was detected on'),
    externalId: z.string().describe('the antivirus’s identifier of the detection'),
    name: z.string().describe('as the antivirus names it'),
    severity: ThreatSeveritySchema,
    path: z.string().nullable().describe('the file it was found in, when reported'),
    status: ThreatStatusSchema,
    orgId: uuid().describe('the device’s organization'),
    detectedAt: timestamp().describe('when it was first detected (or detected again after its removal)'),
    updatedAt: timestamp().describe('when its status last changed'),
  })
  .meta({ title: 'SecurityThreat', description: 'A threat a device’s antivirus detected, and what was done about it' });
export type ThreatView = z.output<typeof ThreatViewSchema>;

const threatView = (t: SecurityThreat): ThreatView => ({
  id: t.id,
  deviceId: t.deviceId,
  externalId: t.externalId,
  name: t.name,
  severity: t.severity as ThreatView['severity'],
  path: t.path,
  status: t.status as ThreatStatus,
  orgId: t.orgId,
  detectedAt: t.detectedAt.toISOString(),
  updatedAt: t.updatedAt.toISOString(),
});

// ── lists ───────────────────────────────────────────────────────────────────────────────────────

const filters = {
  orgId: uuid().optional().describe('only threats of this organization'),
  deviceId: uuid().optional().describe('only threats on this device (404 when the caller cannot see it)'),
  status: ThreatStatusSchema.optional().describe('only threats in this status'),
  severity: ThreatSeveritySchema.optional().describe('only threats of this severity'),
};
const ThreatFilters = z.strictObject(filters);
type ThreatFilter = z.output<typeof ThreatFilters>;
export const ThreatListQuery = z.strictObject({ ...filters, ...cursorListFields });
export type ThreatListInput = z.input<typeof ThreatListQuery>;
/** A device's threats (GET /security/threats/:deviceId): the list's filters but the device. */
export const DeviceThreatListQuery = ThreatListQuery.omit({ deviceId: true, orgId: true });
export type DeviceThreatListInput = z.input<typeof DeviceThreatListQuery>;
/** `deviceSecurityThreats`' arguments: the device and its list's filters. */
export const DeviceThreatArgs = DeviceThreatListQuery.extend({ deviceId: uuid().describe('the device (NOT_FOUND when the caller cannot see it)') });
export const ThreatPageSchema = cursorPageSchema(ThreatViewSchema, 'SecurityThreatPage', 'threats, most recently detected first');
export type ThreatPage = z.output<typeof ThreatPageSchema>;

/** The device the caller sees (its organization and, for users limited to some sites, its site), else 404 Device not found. */
export async function visibleDevice(ctx: RequestContext, deviceId: string) {
  const [device] = await findDevices(ctx, { ids: [deviceId] });
  if (!device) throw notFound('Device');
  return device;
}

/** The query of the threats the filters select among those the caller sees (site-limited callers: their sites' devices' only). */
async function threatQuery(ctx: RequestContext, query: ThreatFilter) {
  await authorize(ctx, 'security:read');
  // Another tenant's organization is 404, as on the other security lists.
  if (query.orgId) await authorize(ctx, 'security:read', { orgId: query.orgId, resource: 'Organization' });
  const where: FilterQuery<SecurityThreat>[] = [(await tenantWhere<SecurityThreat>(ctx, { org: 'orgId', requestedOrgId: query.orgId })) ?? {}];
  if (query.deviceId) where.push({ deviceId: (await visibleDevice(ctx, query.deviceId)).id });
  if (query.status) where.push({ status: query.status });
  if (query.severity) where.push({ severity: query.severity });
  const qb = ctx.em.createQueryBuilder(SecurityThreat, 't').where({ $and: where } as QBFilterQuery<SecurityThreat>);
  const sites = siteLimitedDevicesSql(ctx, 't.device_id');
  // Wrapped: a query builder is thenable, awaiting it would run it.
  return { qb: sites ? qb.andWhere(sites.sql, sites.params) : qb };
}

/** The threats of the devices the caller sees, most recently detected first, in keyset pages. */
export async function listThreats(ctx: RequestContext, raw: ThreatListInput): Promise<ThreatPage> {
  const query = parseInput(ThreatListQuery, raw);
  const keyset = keysetWhere('detectedAt', 'date', 'desc', query.cursor);
  const { qb } = await threatQuery(ctx, query);
  qb.andWhere(keyset.where as QBFilterQuery<SecurityThreat>).orderBy(keyset.orderBy).limit(query.limit + 1);
  const rows: SecurityThreat[] = await qb.getResultList();
  const page = finishCursorPage(rows, query.limit, (t) => t.detectedAt.toISOString());
  return { data: page.items.map(threatView), nextCursor: page.nextCursor };
}

/** One device's threats (404 Device not found when the caller cannot see it). */
export function listDeviceThreats(ctx: RequestContext, deviceId: string, raw: DeviceThreatListInput): Promise<ThreatPage> {
  return listThreats(ctx, { ...parseInput(DeviceThreatListQuery, raw), deviceId });
}

/** How many threats the list's filters select (its connection's `totalCount`). */
export async function countThreats(ctx: RequestContext, raw: z.input<typeof ThreatFilters>): Promise<number> {
  const { qb } = await threatQuery(ctx, parseInput(ThreatFilters, raw));
  return qb.getCount();
}

// ── actions ─────────────────────────────────────────────────────────────────────────────────────

type Action = 'quarantine' | 'remove' | 'restore';
/** Each action: the statuses it starts from, the one while its command is out, the one its success gives, and its command type. */
const ACTIONS: Record<Action, { from: readonly ThreatStatus[]; pending: ThreatStatus; done: ThreatStatus; command: string }> = {
  quarantine: { from: ['detected'], pending: 'quarantining', done: 'quarantined', command: 'quarantine_threat' },
  remove: { from: ['detected', 'quarantined', 'restored'], pending: 'removing', done: 'removed', command: 'remove_threat' },
  restore: { from: ['quarantined'], pending: 'restoring', done: 'restored', command: 'restore_threat' },
};

export const ThreatActionResultSchema = z
  .object({ threat: ThreatViewSchema, commandId: uuid().describe('the device command that carries the action') })
  .meta({ title: 'SecurityThreatAction', description: 'A threat whose action was sent to its agent, and the command that carries it' });
export type ThreatActionResult = z.output<typeof ThreatActionResultSchema>;

/**
 * Sends the action to the threat's device: the threat (locked) turns to the action's pending status
 * and its command is queued, in one transaction; a status the action does not start from is 409.
 */
async function act(ctx: RequestContext, id: string, action: Action): Promise<ThreatActionResult> {
  const found = await loadOwned(ctx, SecurityThreat, id, 'security:write', { resource: RESOURCE });
  // Site-limited callers act on their sites' devices' threats only.
  const [device] = await findDevices(ctx, { ids: [found.deviceId] });
  if (!device) throw notFound(RESOURCE);
  const spec = ACTIONS[action];
  return withTransaction(ctx, async (tx) => {
    const threat = await tx.em.findOneOrFail(SecurityThreat, { id: found.id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
    if (!spec.from.includes(threat.status as ThreatStatus)) throw conflict(`A ${threat.status} threat cannot be sent to ${action} (only a ${spec.from.join(', ')} one)`);
    threat.status = spec.pending;
    threat.updatedAt = tx.runtime.clock.now();
    const command = await queueCommand(tx, device, { type: spec.command, payload: { threatId: threat.id, externalId: threat.externalId, path: threat.path } }, requirePrincipal(tx).userId);
    await tx.em.flush();
    // A threat being dealt with no longer counts against the device's score.
    await recomputeDeviceScores(tx, [threat.deviceId]);
    await recordAudit(tx, { action: `security_threat.${action}`, resourceType: 'security_threat', resourceId: threat.id, orgId: threat.orgId, details: { deviceId: threat.deviceId, commandId: command.id } });
    return { threat: threatView(threat), commandId: command.id };
  });
}

export const quarantineThreat = (ctx: RequestContext, id: string) => act(ctx, id, 'quarantine');
export const removeThreat = (ctx: RequestContext, id: string) => act(ctx, id, 'remove');
export const restoreThreat = (ctx: RequestContext, id: string) => act(ctx, id, 'restore');

/**
 * Threats just reported `detected` on a device a security policy with `autoQuarantine` covers are sent
 * to quarantine at once, as a user's quarantine would be (no audit entry: no one asked; the command is
 * the record). Called where threats are added (a report, a scan's result), in its transaction.
 */
export async function autoQuarantine(tx: RequestContext, device: { id: string; orgId: string }, detectedIds: readonly string[]): Promise<void> {
  if (detectedIds.length === 0) return;
  const settings = (await applyingSettings(tx, [{ deviceId: device.id, orgId: device.orgId }])).get(device.id);
  if (!settings?.autoQuarantine) return;
  const [target] = await findDevices(tx, { ids: [device.id], active: true }, { scope: 'all' });
  if (!target) return;
  const spec = ACTIONS.quarantine;
  const threats = await tx.em.find(SecurityThreat, { id: { $in: [...detectedIds] }, status: 'detected' });
  for (const threat of threats) {
    threat.status = spec.pending;
    threat.updatedAt = tx.runtime.clock.now();
    await queueCommand(tx, target, { type: spec.command, payload: { threatId: threat.id, externalId: threat.externalId, path: threat.path } }, null);
  }
  await tx.em.flush();
}

// ── the agent's side (device-command hooks) ─────────────────────────────────────────────────────

/** Settles the threat the command acts on, if it still waits for it: `done` on success, else `failed`. */
async function settle(tx: RequestContext, command: DeviceCommand, action: Action, succeeded: boolean): Promise<void> {
  const threatId = command.payload.threatId;
  if (typeof threatId !== 'string') return;
  const threat = await tx.em.findOne(SecurityThreat, { id: threatId, deviceId: command.deviceId }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
  if (!threat || threat.status !== ACTIONS[action].pending) return;
  threat.status = succeeded ? ACTIONS[action].done : 'failed';
  threat.updatedAt = tx.runtime.clock.now();
  await tx.em.flush();
  await recomputeDeviceScores(tx, [threat.deviceId]);
}

const threatCommand = (action: Action): CommandTypeHooks => ({
  serviceOnly: `${ACTIONS[action].command} commands are queued by POST /security/threats/:id/${action}`,
  async answered(tx, command, input) {
    await settle(tx, command, action, input.status === 'completed');
    return false;
  },
  // Cancelled with the device's open commands (decommissioned, moved): the action did not happen.
  cancelled: (tx, command) => settle(tx, command, action, false),
});

export const threatCommandTypes: Record<string, CommandTypeHooks> = Object.fromEntries((Object.keys(ACTIONS) as Action[]).map((action) => [ACTIONS[action].command, threatCommand(action)]));

/** What was sent before this instant and is still waiting has had its command time out (plus a grace minute: an answer at the deadline still settles it). */
export const unansweredBefore = (ctx: RequestContext, now: Date) => new Date(now.getTime() - (ctx.runtime.config.devices.commandTimeoutSeconds + 60) * 1000);

/**
 * Threats whose action's command has timed out (queued `commandTimeoutSeconds` ago, plus a grace
 * minute: no answer can settle it any more) turn `failed`. Run as due work; answers how many.
 */
export async function failUnansweredActions(ctx: RequestContext, now: Date): Promise<number> {
  const pending = Object.values(ACTIONS).map((a) => a.pending);
  return withTransaction(ctx, async (tx) => {
    const failed = (await tx.em.execute(
      `update security_threat set status = 'failed', updated_at = ? where status = any(?::text[]) and updated_at <= ? returning device_id`,
      [now, `{${pending.join(',')}}`, unansweredBefore(tx, now)],
    )) as { device_id: string }[];
    await recomputeDeviceScores(tx, failed.map((row) => row.device_id));
    return failed.length;
  });
}
