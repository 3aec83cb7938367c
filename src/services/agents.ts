import crypto from 'node:crypto';
import { LockMode } from '@mikro-orm/core';
import { z } from 'zod';
import { Device, DeviceInventory, OS_TYPES } from '../../entities/device.js';
import { EnrollmentKey } from '../../entities/enrollment-key.js';
import type { RequestContext } from '../auth/context.js';
import { skipAuthorization } from '../auth/policy.js';
import { withTransaction } from '../db/transaction.js';
import { unauthenticated } from '../errors.js';
import { randomToken, sha256Hex } from '../secrets.js';
import { isoDateTime, parseInput, uuid } from '../validation.js';
import { upgradeFor, type UpgradeTo } from './agent-versions.js';
import { recordChange } from './audit.js';
import { claimCommands, completeCommand, CommandResultSchema, type ClaimedCommand, type CommandResultInput } from './device-commands.js';
import { changeStatus, deviceEventData } from './devices.js';
import { enrollmentKeyStatus } from './enrollment-keys.js';

// The agent protocol (docs/agent-protocol.md). Agents are not users: their routes make no policy
// decision (`skipAuthorization`), and the token itself decides which device they act as.

const INVALID_ENROLLMENT_KEY = 'Invalid, expired or exhausted enrollment key';
const INVALID_AGENT_TOKEN = 'Invalid agent credentials';

const text = (max: number) => z.string().trim().min(1).max(max);
const jsonObject = z.record(z.string(), z.unknown());

export const EnrollSchema = z
  .object({
    enrollmentKey: text(200),
    hostname: text(255),
    osType: z.enum(OS_TYPES),
    osVersion: text(100),
    architecture: text(50),
    agentVersion: text(50),
    machineId: text(255).optional().describe('a stable machine identifier: enrolling it again reuses the device'),
    hardwareInfo: jsonObject.optional(),
  })
  .strict();
export type EnrollInput = z.input<typeof EnrollSchema>;

export const EnrollResultSchema = z
  .object({
    deviceId: uuid(),
    agentId: uuid(),
    authToken: z.string().describe('shown only in this answer'),
    orgId: uuid(),
    siteId: uuid().nullable(),
    config: z.object({ heartbeatIntervalSeconds: z.number().int() }),
  })
  .meta({ title: 'EnrollResult' });
export type EnrollResult = z.output<typeof EnrollResultSchema>;

/**
 * Enrolls a device with an enrollment key. The same `machineId` in the same organization gets the
 * same device with a new token (the old one stops working); a provisioning key claims its device.
 */
export async function enroll(ctx: RequestContext, rawInput: EnrollInput): Promise<EnrollResult> {
  skipAuthorization(ctx, 'agent enrollment: the enrollment key authenticates');
  const input = parseInput(EnrollSchema, rawInput);
  const authToken = `agt_${randomToken(32)}`;
  return withTransaction(ctx, async (tx) => {
    const now = tx.runtime.clock.now();
    const key = await tx.em.findOne(EnrollmentKey, { keyHash: sha256Hex(input.enrollmentKey) }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!key || enrollmentKeyStatus(key, now) !== 'active') throw unauthenticated(INVALID_ENROLLMENT_KEY);
    key.usageCount += 1;
    key.lastUsedAt = now;
    const existing = key.deviceId
      ? await tx.em.findOne(Device, { id: key.deviceId }, { lockMode: LockMode.PESSIMISTIC_WRITE })
      : input.machineId
        ? await tx.em.findOne(Device, { orgId: key.orgId, machineId: input.machineId }, { lockMode: LockMode.PESSIMISTIC_WRITE })
        : null;
    const device = existing ?? tx.em.create(Device, { orgId: key.orgId, siteId: key.siteId, agentId: crypto.randomUUID(), hostname: input.hostname });
    const previousStatus = existing ? existing.status : null;
    Object.assign(device, {
      hostname: input.hostname,
      osType: input.osType,
      osVersion: input.osVersion,
      architecture: input.architecture,
      agentVersion: input.agentVersion,
      machineId: input.machineId ?? device.machineId,
      hardwareInfo: input.hardwareInfo ?? device.hardwareInfo,
      tokenHash: sha256Hex(authToken),
      status: 'online',
      statusChangedAt: now,
      lastSeenAt: now,
      enrolledAt: now,
      decommissionedAt: null,
      updatingToVersion: null,
    } satisfies Partial<Device>);
    await tx.em.flush();
    await recordChange(
      tx,
      {
        action: 'device.enroll',
        resourceType: 'device',
        resourceId: device.id,
        orgId: device.orgId,
        details: { hostname: device.hostname, enrollmentKeyId: key.id, reenrolled: existing !== null && !key.deviceId, provisioned: key.deviceId !== null },
      },
      deviceEventData(device, previousStatus),
    );
    return {
      deviceId: device.id,
      agentId: device.agentId,
      authToken,
      orgId: device.orgId,
      siteId: device.siteId,
      config: { heartbeatIntervalSeconds: tx.runtime.config.devices.heartbeatIntervalSeconds },
    };
  });
}

/**
 * The device an agent token belongs to, if the token is that agent's: another device's token, a
 * replaced token and a decommissioned device's token are all 401 (one message, nothing learnt).
 */
export async function authenticateAgent(ctx: RequestContext, agentId: string, token: string | null): Promise<Device> {
  skipAuthorization(ctx, 'agent protocol: the agent token authenticates');
  const device = token && uuid().safeParse(agentId).success ? await ctx.em.findOne(Device, { agentId, tokenHash: sha256Hex(token) }) : null;
  if (!device || device.status === 'decommissioned') throw unauthenticated(INVALID_AGENT_TOKEN);
  return device;
}

export const HeartbeatSchema = z
  .object({
    agentVersion: text(50),
    metrics: z
      .object({ cpuPercent: z.number().min(0).max(100).optional(), ramPercent: z.number().min(0).max(100).optional(), diskPercent: z.number().min(0).max(100).optional() })
      .catchall(z.union([z.number(), z.string().max(1000), z.boolean(), z.null()]))
      .refine((m) => Object.keys(m).length <= 200, { message: 'at most 200 metrics' })
      .optional(),
    watchdogStatus: z.string().trim().max(50).nullable().optional(),
    mainAgentSilentSince: isoDateTime().nullable().optional(),
  })
  .strict();
export type HeartbeatInput = z.input<typeof HeartbeatSchema>;

export const HeartbeatResultSchema = z
  .object({
    commands: z.array(z.object({ id: uuid(), type: z.string(), payload: jsonObject })),
    configUpdate: jsonObject.nullable(),
    upgradeTo: z.object({ version: z.string(), component: z.string(), url: z.string(), checksum: z.string() }).nullable(),
  })
  .meta({ title: 'HeartbeatResult' });
export type HeartbeatResult = { commands: ClaimedCommand[]; configUpdate: Record<string, unknown> | null; upgradeTo: UpgradeTo | null };

/**
 * Records the heartbeat and hands out the device's pending commands (each exactly once). The common
 * case, an online device, is one update and one claim; status changes add their event.
 */
export async function heartbeat(ctx: RequestContext, agentId: string, token: string | null, rawInput: HeartbeatInput): Promise<HeartbeatResult> {
  const seen = await authenticateAgent(ctx, agentId, token);
  const input = parseInput(HeartbeatSchema, rawInput);
  const now = ctx.runtime.clock.now();
  const reported = {
    lastSeenAt: now,
    agentVersion: input.agentVersion,
    ...(input.metrics !== undefined ? { metrics: input.metrics } : {}),
    ...(input.watchdogStatus !== undefined ? { watchdogStatus: input.watchdogStatus } : {}),
    ...(input.mainAgentSilentSince !== undefined ? { mainAgentSilentSince: input.mainAgentSilentSince ? new Date(input.mainAgentSilentSince) : null } : {}),
  };
  const finishesUpdate = seen.status === 'updating' && seen.updatingToVersion === input.agentVersion;
  if (seen.status === 'online' || (seen.status === 'updating' && !finishesUpdate)) {
    await ctx.em.nativeUpdate(Device, { id: seen.id }, reported);
  } else {
    await withTransaction(ctx, async (tx) => {
      const device = await tx.em.findOneOrFail(Device, { id: seen.id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
      Object.assign(device, reported);
      await changeStatus(tx, device, 'online');
      await tx.em.flush();
    });
  }
  return { commands: await claimCommands(ctx, seen), configUpdate: null, upgradeTo: await upgradeFor(ctx, seen, input.agentVersion) };
}

export const AgentAckSchema = z.object({ ok: z.literal(true) }).meta({ title: 'AgentAck' });

export async function reportCommandResult(ctx: RequestContext, agentId: string, token: string | null, commandId: string, rawInput: CommandResultInput): Promise<{ ok: true }> {
  const device = await authenticateAgent(ctx, agentId, token);
  await completeCommand(ctx, device, commandId, parseInput(CommandResultSchema, rawInput));
  return { ok: true };
}

const inventoryList = z.array(z.unknown()).max(100_000);
export const InventorySchema = z
  .object({ hardware: jsonObject.optional(), software: inventoryList.optional(), patches: inventoryList.optional(), network: z.union([inventoryList, jsonObject]).optional() })
  .strict();
export type InventoryInput = z.input<typeof InventorySchema>;

/** Keeps the latest inventory; parts not sent stay as they were. */
export async function reportInventory(ctx: RequestContext, agentId: string, token: string | null, rawInput: InventoryInput): Promise<{ ok: true }> {
  const device = await authenticateAgent(ctx, agentId, token);
  const input = parseInput(InventorySchema, rawInput);
  const parts = Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined));
  await ctx.em.upsert(DeviceInventory, { deviceId: device.id, ...parts, updatedAt: ctx.runtime.clock.now() });
  return { ok: true };
}

export const UpdateStatusSchema = z.object({ state: z.enum(['started', 'completed', 'failed']), toVersion: text(50) }).strict();
export type UpdateStatusInput = z.input<typeof UpdateStatusSchema>;

/**
 * `started` shows the device as `updating` until the first heartbeat with `toVersion` (or the
 * updating timeout); `failed` puts it back to `online`, as its heartbeats say it still runs.
 */
export async function reportUpdateStatus(ctx: RequestContext, agentId: string, token: string | null, rawInput: UpdateStatusInput): Promise<{ ok: true }> {
  const seen = await authenticateAgent(ctx, agentId, token);
  const input = parseInput(UpdateStatusSchema, rawInput);
  await withTransaction(ctx, async (tx) => {
    const device = await tx.em.findOneOrFail(Device, { id: seen.id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    device.lastSeenAt = tx.runtime.clock.now();
    if (input.state === 'started') {
      device.updatingToVersion = input.toVersion;
      await changeStatus(tx, device, 'updating');
    } else if (input.state === 'failed' || device.agentVersion === input.toVersion) {
      await changeStatus(tx, device, 'online');
    }
    await tx.em.flush();
  });
  return { ok: true };
}

/**
 * The recurring sweep: devices silent for `offlineAfterSeconds` go offline, updates that take longer
 * than `updatingTimeoutSeconds` too. Each row is re-checked under its lock, so a heartbeat that
 * lands meanwhile wins.
 */
export async function sweepDeviceStatus(ctx: RequestContext): Promise<number> {
  const { offlineAfterSeconds, updatingTimeoutSeconds } = ctx.runtime.config.devices;
  const now = ctx.runtime.clock.now().getTime();
  const silentSince = new Date(now - offlineAfterSeconds * 1000);
  const updatingSince = new Date(now - updatingTimeoutSeconds * 1000);
  const stale = (device: Device) =>
    (device.status === 'online' && device.lastSeenAt <= silentSince) || (device.status === 'updating' && device.statusChangedAt <= updatingSince);
  const candidates = await ctx.em.find(
    Device,
    { $or: [{ status: 'online', lastSeenAt: { $lte: silentSince } }, { status: 'updating', statusChangedAt: { $lte: updatingSince } }] },
    { fields: ['id'], limit: 1000 },
  );
  let changed = 0;
  for (const { id } of candidates) {
    await withTransaction(ctx, async (tx) => {
      const device = await tx.em.findOne(Device, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE });
      if (!device || !stale(device)) return;
      await changeStatus(tx, device, 'offline');
      changed += 1;
    });
  }
  return changed;
}
