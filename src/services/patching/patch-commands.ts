import { z } from 'zod';
import type { Device } from '../../../entities/device.js';
import { PatchDeviceStatus } from '../../../entities/patch.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, permits, requirePrincipal } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { AppError, badRequest } from '../../errors.js';
import { emit } from '../../events/outbox.js';
import { parseInput, uuid } from '../../validation.js';
import { recordAudit } from '../audit/api.js';
import { findDevices, queueCommand, type CommandTypeHooks } from '../devices/api.js';
import { decide, refuseSiteLimited } from './patch-approvals.js';
import { INSTALL_PATCHES, installPatchesCommand, setDeviceStatuses, type InstallItem } from './patch-jobs.js';
import { patchReport, requirePatch } from './patches.js';

/*
 * Commands the patching domain sends agents by hand: a scan (the agent reports its patches, stored as
 * the inventory's patches part is) and a rollback of one patch (declined at once; the device reports
 * it missing once its agent has rolled it back). With the install jobs' command, the domain's command types.
 */

const PATCH_SCAN = 'patch_scan';
const ROLLBACK_PATCH = 'rollback_patch';
const INSTALLED = ['installed', 'pending_reboot'];

export const ScanPatchesSchema = z
  .strictObject({ deviceIds: z.array(uuid()).min(1).max(500).describe('the devices to scan, 1 to 500') })
  .meta({ title: 'ScanPatchesInput', description: 'Devices whose agents should report their patches now' });
export type ScanPatchesInput = z.input<typeof ScanPatchesSchema>;

const MAX_ROLLBACK_DEVICES = 500;
export const RollbackPatchSchema = z
  .strictObject({
    deviceIds: z.array(uuid()).min(1).max(MAX_ROLLBACK_DEVICES).optional().describe('the devices to roll it back on (1 to 500); default: every device you see that has it installed'),
    reason: z.string().trim().max(1000).optional().describe('why (at most 1,000 characters): the decline’s note, and sent to the agents'),
  })
  .meta({ title: 'RollbackPatchInput', description: 'Where to roll a patch back, and why' });
export type RollbackPatchInput = z.input<typeof RollbackPatchSchema>;

export const PatchCommandsResultSchema = z
  .object({
    commands: z
      .array(z.object({ deviceId: uuid().describe('the device'), commandId: uuid().describe('the command queued for its agent') }).meta({ title: 'PatchCommandQueued', description: 'A command queued for a device' }))
      .describe('one per device the command was queued for'),
    skipped: z
      .array(
        z
          .object({ deviceId: z.string().describe('the device as given'), reason: z.string().describe('not found, decommissioned, not installed, or already pending') })
          .meta({ title: 'PatchCommandSkipped', description: 'A device no command was queued for, and why' }),
      )
      .describe('devices left out, with the reason'),
  })
  .meta({ title: 'PatchCommandsResult', description: 'Which devices got the command, and which were left out' });
export type PatchCommandsResult = z.output<typeof PatchCommandsResultSchema>;

const NOT_FOUND = 'not found';

/** Queues the command for each device in the caller's transaction; a singleton already open on one is skipped. */
async function queueEach(tx: RequestContext, devices: Device[], type: string, payload: Record<string, unknown>, result: PatchCommandsResult): Promise<void> {
  const createdBy = requirePrincipal(tx).userId;
  for (const device of devices) {
    try {
      const command = await queueCommand(tx, device, { type, payload }, createdBy);
      result.commands.push({ deviceId: device.id, commandId: command.id });
    } catch (error) {
      // Refused before anything is written: the transaction goes on.
      if (!(error instanceof AppError && error.code === 'ALREADY_PENDING')) throw error;
      result.skipped.push({ deviceId: device.id, reason: 'already pending' });
    }
  }
}

/** The devices of `ids` the caller sees and may write patches of; the others are skipped (not found, decommissioned). */
async function writableDevices(ctx: RequestContext, ids: readonly string[], result: PatchCommandsResult): Promise<Device[]> {
  const found = new Map((await findDevices(ctx, { ids })).map((d) => [d.id, d]));
  const mayWrite = new Map<string, boolean>();
  for (const orgId of new Set([...found.values()].map((d) => d.orgId))) mayWrite.set(orgId, await permits(ctx, 'patches:write', { orgId }));
  const devices: Device[] = [];
  for (const id of new Set(ids.map((i) => i.toLowerCase()))) {
    const device = found.get(id);
    if (!device || !mayWrite.get(device.orgId)) result.skipped.push({ deviceId: id, reason: NOT_FOUND });
    else if (device.status === 'decommissioned') result.skipped.push({ deviceId: id, reason: 'decommissioned' });
    else devices.push(device);
  }
  return devices;
}

/** Asks each device's agent to report its patches now (`patch_scan`, one open per device). */
export async function scanPatches(ctx: RequestContext, raw: ScanPatchesInput): Promise<PatchCommandsResult> {
  const input = parseInput(ScanPatchesSchema, raw);
  await authorize(ctx, 'patches:write');
  const result: PatchCommandsResult = { commands: [], skipped: [] };
  const devices = await writableDevices(ctx, input.deviceIds, result);
  if (devices.length === 0) return result;
  return withTransaction(ctx, async (tx) => {
    await queueEach(tx, devices, PATCH_SCAN, {}, result);
    for (const orgId of new Set(devices.map((d) => d.orgId))) {
      const queued = result.commands.filter((c) => devices.find((d) => d.id === c.deviceId)!.orgId === orgId);
      if (queued.length > 0) await recordAudit(tx, { action: 'patch.scan', resourceType: 'device', orgId, details: { commands: queued } });
    }
    return result;
  });
}

/**
 * Rolls a patch back: declined at once (an approval row, as a decline), and `rollback_patch` queued on
 * each given device (default: every device the caller sees) that has it installed; the others are skipped.
 */
export async function rollbackPatch(ctx: RequestContext, id: string, raw: RollbackPatchInput = {}): Promise<PatchCommandsResult> {
  const input = parseInput(RollbackPatchSchema, raw ?? {});
  // Decided before the patch is looked up, so a caller without the permission learns nothing of it.
  await authorize(ctx, 'patches:write');
  const patch = await requirePatch(ctx, id, 'patches:write');
  refuseSiteLimited(ctx);
  const statuses = await ctx.em.find(PatchDeviceStatus, { patchId: patch.id, ...(input.deviceIds && { deviceId: { $in: input.deviceIds.map((d) => d.toLowerCase()) } }) }, { disableIdentityMap: true });
  const installed = new Set(statuses.filter((s) => INSTALLED.includes(s.status)).map((s) => s.deviceId));
  // One request queues at most as many commands as it may name.
  if (!input.deviceIds && installed.size > MAX_ROLLBACK_DEVICES) {
    throw badRequest(`The patch is installed on ${installed.size} devices: name at most ${MAX_ROLLBACK_DEVICES} of them in deviceIds`);
  }
  const result: PatchCommandsResult = { commands: [], skipped: [] };
  const devices = (await writableDevices(ctx, input.deviceIds ?? [...installed], result)).filter((device) => {
    if (installed.has(device.id)) return true;
    result.skipped.push({ deviceId: device.id, reason: 'not installed' });
    return false;
  });
  const item: InstallItem = { patchId: patch.id, source: patch.source, externalId: patch.externalId, packageName: patch.packageName, version: patch.version };
  return withTransaction(ctx, async (tx) => {
    await decide(tx, patch, 'declined', { note: input.reason });
    await queueEach(tx, devices, ROLLBACK_PATCH, { ...item, reason: input.reason ?? null }, result);
    await recordAudit(tx, { action: 'patch.rollback', resourceType: 'patch', resourceId: patch.id, orgId: patch.orgId, details: { commands: result.commands, reason: input.reason ?? null } });
    return result;
  });
}

/** The patching domain's command types (registered by its manifest); none is queued by hand. */
export const patchCommandTypes: Record<string, CommandTypeHooks> = {
  [INSTALL_PATCHES]: installPatchesCommand,
  [PATCH_SCAN]: {
    serviceOnly: 'patch_scan commands are queued by POST /patches/scan',
    singleton: true,
    // The agent's answer is its patch report, stored exactly as the inventory's patches part.
    async answered(tx, command, input) {
      if (input.status !== 'completed') return false;
      const { patches } = parseInput(z.object({ patches: patchReport.schema }), input.result ?? {});
      const [device] = await findDevices(tx, { ids: [command.deviceId] }, { scope: 'all' });
      if (device && device.orgId === command.orgId) await patchReport.ingest(tx, device, patches);
      return false;
    },
  },
  [ROLLBACK_PATCH]: {
    serviceOnly: 'rollback_patch commands are queued by POST /patches/:id/rollback',
    async answered(tx, command, input) {
      if (input.status !== 'completed') return false;
      const { patchId } = command.payload as unknown as InstallItem;
      await setDeviceStatuses(tx, command.deviceId, command.orgId, [{ patchId, status: 'missing' }]);
      await emit(tx, { type: 'patch.rollback', orgId: command.orgId, data: { patchId, deviceId: command.deviceId } });
      return false;
    },
  },
};
