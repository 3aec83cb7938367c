import { LockMode, type FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import type { DeviceCommand } from '../../../entities/device-command.js';
import { SecurityScan } from '../../../entities/security.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, requirePrincipal } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { cursorListFields, cursorPageSchema, finishCursorPage, keysetWhere } from '../../pagination.js';
import { enumValues, parseInput, timestamp, uuid } from '../../validation.js';
import { recordAudit } from '../audit/api.js';
import { queueCommand, type CommandTypeHooks } from '../devices/api.js';
import { ReportedThreatsSchema, upsertThreats } from './security-reports.js';
import { recomputeDeviceScores } from './security-scores.js';
import { unansweredBefore, visibleDevice } from './threats.js';

/*
 * Antivirus scans users ask of a device: each carried by one `security_scan` command (queued → running
 * when the agent reports the start → completed with the threats it found, added to the device's as a
 * report's are, or failed).
 */

const SCAN_TYPES = ['quick', 'full'] as const;
const SCAN_STATUSES = ['queued', 'running', 'completed', 'failed'] as const;
type ScanStatus = (typeof SCAN_STATUSES)[number];

export const ScanTypeSchema = z
  .enum(SCAN_TYPES)
  .meta({ title: 'SecurityScanType', description: 'How thorough a scan is' })
  .register(enumValues, { quick: 'The usual places threats hide.', full: 'Every file of the device.' });
export const ScanStatusSchema = z
  .enum(SCAN_STATUSES)
  .meta({ title: 'SecurityScanStatus', description: 'Where a scan stands' })
  .register(enumValues, {
    queued: 'Its command waits for the agent, or the agent has not reported the start.',
    running: 'The agent reported the start.',
    completed: 'Finished; `threatsFound` says what it found.',
    failed: 'The agent could not scan, or the command was cancelled.',
  });

export const ScanViewSchema = z
  .object({
    id: uuid().describe('the scan'),
    deviceId: uuid().describe('the device scanned'),
    type: ScanTypeSchema,
    status: ScanStatusSchema,
    threatsFound: z.number().int().nullable().describe('the threats it reported; null until it completed'),
    createdAt: timestamp().describe('when it was asked for'),
    completedAt: timestamp().nullable().describe('when it completed or failed'),
  })
  .meta({ title: 'SecurityScan', description: 'An antivirus scan of a device' });
export type ScanView = z.output<typeof ScanViewSchema>;

const scanView = (s: SecurityScan): ScanView => ({
  id: s.id,
  deviceId: s.deviceId,
  type: s.type as ScanView['type'],
  status: s.status as ScanStatus,
  threatsFound: s.threatsFound,
  createdAt: s.createdAt.toISOString(),
  completedAt: s.completedAt?.toISOString() ?? null,
});

// ── start ───────────────────────────────────────────────────────────────────────────────────────

export const StartScanSchema = z.strictObject({ type: ScanTypeSchema }).meta({ title: 'StartSecurityScanInput', description: 'The kind of scan to run' });
export type StartScanInput = z.input<typeof StartScanSchema>;
export const ScanStartedSchema = z
  .object({ id: uuid().describe('the scan'), status: ScanStatusSchema })
  .meta({ title: 'SecurityScanStarted', description: 'A scan just asked for (queued)' });
export type ScanStarted = z.output<typeof ScanStartedSchema>;
/** `startSecurityScan`'s arguments. */
export const StartScanArgs = StartScanSchema.extend({ deviceId: uuid().describe('the device to scan (NOT_FOUND when the caller cannot see it)') });

/** Asks the device's agent for a scan: the scan and its `security_scan` command, in one transaction. */
export async function startScan(ctx: RequestContext, deviceId: string, raw: StartScanInput): Promise<ScanStarted> {
  const input = parseInput(StartScanSchema, raw);
  await authorize(ctx, 'security:write');
  const device = await visibleDevice(ctx, deviceId);
  return withTransaction(ctx, async (tx) => {
    const createdBy = requirePrincipal(tx).userId;
    const scan = tx.em.create(SecurityScan, { orgId: device.orgId, deviceId: device.id, type: input.type, status: 'queued', createdBy, createdAt: tx.runtime.clock.now() });
    const command = await queueCommand(tx, device, { type: 'security_scan', payload: { scanId: scan.id, type: input.type } }, createdBy);
    scan.commandId = command.id;
    await tx.em.flush();
    await recordAudit(tx, { action: 'security_scan.create', resourceType: 'security_scan', resourceId: scan.id, orgId: scan.orgId, details: { deviceId: device.id, type: input.type, commandId: command.id } });
    return { id: scan.id, status: 'queued' };
  });
}

// ── list ────────────────────────────────────────────────────────────────────────────────────────

export const ScanListQuery = z.strictObject({ status: ScanStatusSchema.optional().describe('only scans in this status'), ...cursorListFields });
export type ScanListInput = z.input<typeof ScanListQuery>;
/** `securityScans`' arguments: the device and its list's filters. */
export const DeviceScanArgs = ScanListQuery.extend({ deviceId: uuid().describe('the device (NOT_FOUND when the caller cannot see it)') });
type DeviceScanInput = z.input<typeof DeviceScanArgs>;
export const ScanPageSchema = cursorPageSchema(ScanViewSchema, 'SecurityScanPage', 'scans, newest first');
export type ScanPage = z.output<typeof ScanPageSchema>;

async function scanFilter(ctx: RequestContext, deviceId: string, status: ScanStatus | undefined): Promise<FilterQuery<SecurityScan>> {
  await authorize(ctx, 'security:read');
  const device = await visibleDevice(ctx, deviceId);
  return { deviceId: device.id, ...(status && { status }) };
}

/** A device's scans, newest first, in keyset pages (404 Device not found when the caller cannot see it). */
export async function listScans(ctx: RequestContext, deviceId: string, raw: ScanListInput): Promise<ScanPage> {
  const query = parseInput(ScanListQuery, raw);
  const keyset = keysetWhere('createdAt', 'date', 'desc', query.cursor);
  const filter = await scanFilter(ctx, deviceId, query.status);
  const rows = await ctx.em.find(SecurityScan, { $and: [filter, keyset.where] } as FilterQuery<SecurityScan>, { orderBy: keyset.orderBy, limit: query.limit + 1, disableIdentityMap: true });
  const page = finishCursorPage(rows, query.limit, (s) => s.createdAt.toISOString());
  return { data: page.items.map(scanView), nextCursor: page.nextCursor };
}

/** `listScans` with the device among the arguments (the GraphQL connection's). */
export const listDeviceScans = (ctx: RequestContext, { deviceId, ...query }: DeviceScanInput) => listScans(ctx, deviceId, query);

/** How many scans the list's filters select (its connection's `totalCount`). */
export async function countScans(ctx: RequestContext, raw: Omit<DeviceScanInput, 'cursor' | 'limit'>): Promise<number> {
  const args = parseInput(DeviceScanArgs.omit({ cursor: true, limit: true }), raw);
  return ctx.em.count(SecurityScan, await scanFilter(ctx, args.deviceId, args.status));
}

// ── the agent's side (device-command hooks) ─────────────────────────────────────────────────────

const ScanResultSchema = z.object({ threats: ReportedThreatsSchema.default([]) });

async function scanOf(tx: RequestContext, command: DeviceCommand): Promise<SecurityScan | null> {
  return tx.em.findOne(SecurityScan, { commandId: command.id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
}

async function finish(tx: RequestContext, scan: SecurityScan, threatsFound: number | null): Promise<void> {
  scan.status = threatsFound === null ? 'failed' : 'completed';
  scan.threatsFound = threatsFound;
  scan.completedAt = tx.runtime.clock.now();
  await tx.em.flush();
}

const unfinished = (scan: SecurityScan | null): scan is SecurityScan => !!scan && (scan.status === 'queued' || scan.status === 'running');

export const scanCommandTypes: Record<string, CommandTypeHooks> = {
  security_scan: {
    serviceOnly: 'security_scan commands are queued by POST /security/scan/:deviceId',
    // A second scan while one waits for the agent would only repeat it (409 ALREADY_PENDING).
    singleton: true,
    async started(tx, command) {
      const scan = await scanOf(tx, command);
      if (scan?.status !== 'queued') return;
      scan.status = 'running';
      await tx.em.flush();
    },
    /** A completed scan's threats join the device's as a report's do; a result that does not read as threats fails the scan. */
    async answered(tx, command, input) {
      const scan = await scanOf(tx, command);
      if (!unfinished(scan)) return false;
      const result = input.status === 'completed' ? ScanResultSchema.safeParse(input.result ?? {}) : null;
      if (result && !result.success) tx.runtime.log.warn({ commandId: command.id, scanId: scan.id }, 'security_scan result is not a list of threats');
      await finish(tx, scan, result?.success ? await upsertThreats(tx, { id: scan.deviceId, orgId: scan.orgId }, result.data.threats) : null);
      if (result?.success) await recomputeDeviceScores(tx, [scan.deviceId]);
      return false;
    },
    async cancelled(tx, command) {
      const scan = await scanOf(tx, command);
      if (unfinished(scan)) await finish(tx, scan, null);
    },
  },
};

/** Scans whose command has timed out (as `failUnansweredActions`' threats) turn `failed`. Run as due work; answers how many. */
export async function failUnansweredScans(ctx: RequestContext, now: Date): Promise<number> {
  return ctx.em.nativeUpdate(SecurityScan, { status: { $in: ['queued', 'running'] }, createdAt: { $lte: unansweredBefore(ctx, now) } }, { status: 'failed', completedAt: now });
}
