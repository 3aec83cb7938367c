import crypto from 'node:crypto';
import { LockMode } from '@mikro-orm/core';
import { z } from 'zod';
import { Device, OS_TYPES } from '../../../entities/device.js';
import { EnrollmentKey } from '../../../entities/enrollment-key.js';
import { admitAgent, agentClaim, authenticateAgent, INVALID_AGENT_TOKEN, issueAgentToken } from '../../auth/agent.js';
import type { AgentIdentity, RequestContext } from '../../auth/context.js';
import { skipAuthorization } from '../../auth/policy.js';
import { Coalescer } from '../../db/coalesce.js';
import { preparedRows, statement } from '../../db/prepared.js';
import { withTransaction } from '../../db/transaction.js';
import { emit } from '../../events/outbox.js';
import { conflict, unauthenticated } from '../../errors.js';
import { onePer } from '../../memo.js';
import type { Runtime } from '../../runtime.js';
import { safeEqual, sha256Hex } from '../../secrets.js';
import { isoDateTime, parseInput, uuid } from '../../validation.js';
import { UpgradeToSchema, upgradeFor } from './agent-versions.js';
import { recordChange } from '../audit/api.js';
import { JsonObjectSchema } from '../shared/json.js';
import { ClaimedCommandSchema, claimCommands, completeCommand } from './device-commands.js';
import { CommandResultSchema, type CommandResultInput } from './command-types.js';
import { factsOf, ingestInventory, reportHeartbeat, type DeviceFacts } from './device-reports.js';
import { changeStatus, deviceEventData } from './devices.js';
import { enrollmentKeyStatus } from './enrollment-keys.js';
import { requiredText as text } from '../shared/text.js';

// The agent protocol (docs/agent-protocol.md). Agents are principals of their own kind (src/auth/agent.ts):
// their routes declare `auth: 'agent'`, and the verified token decides which device they act as.

const INVALID_ENROLLMENT_KEY = 'Invalid, expired or exhausted enrollment key';

export const EnrollSchema = z
  .object({
    enrollmentKey: text(200),
    hostname: text(255),
    osType: z.enum(OS_TYPES),
    osVersion: text(100),
    architecture: text(50),
    agentVersion: text(50),
    machineId: text(255).optional().describe("a stable machine identifier: enrolling it again with a key of the device's site reuses the device"),
    hardwareInfo: JsonObjectSchema.optional(),
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
 * Enrolls a device with an enrollment key. The same `machineId` enrolled again with a key of the
 * device's organization and site gets the same device with a new token (the old one stops working),
 * taking the current token (the request's agent token) while the device's agent is alive; a
 * provisioning key claims its device. The enrolled agent is the actor of the enrollment's audit row.
 */
export async function enroll(ctx: RequestContext, rawInput: EnrollInput): Promise<EnrollResult> {
  skipAuthorization(ctx, 'agent enrollment: the enrollment key authenticates');
  const input = parseInput(EnrollSchema, rawInput);
  const { token: authToken, tokenHash } = issueAgentToken();
  return withTransaction(ctx, async (tx) => {
    const now = tx.runtime.clock.now();
    const key = await tx.em.findOne(EnrollmentKey, { keyHash: sha256Hex(input.enrollmentKey) }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!key || enrollmentKeyStatus(key, now) !== 'active') throw unauthenticated(INVALID_ENROLLMENT_KEY);
    key.usageCount += 1;
    key.lastUsedAt = now;
    const existing = key.deviceId
      ? await tx.em.findOne(Device, { id: key.deviceId }, { lockMode: LockMode.PESSIMISTIC_WRITE })
      : input.machineId
        ? await deviceToReenroll(tx, key, input.machineId)
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
      tokenHash,
      status: 'online',
      statusChangedAt: now,
      lastSeenAt: now,
      enrolledAt: now,
      decommissionedAt: null,
      updatingToVersion: null,
    } satisfies Partial<Device>);
    await tx.em.flush();
    admitAgent(tx, { deviceId: device.id, agentId: device.agentId, tokenHash, orgId: device.orgId, siteId: device.siteId });
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
 * The device of the key's organization that an enrollment of `machineId` takes over, if any. Only one
 * the key could have enrolled (of the key's site, or none for a key without one): a device of another
 * site is 409, unless decommissioned, when it keeps its history and the machine starts a new device.
 * A device whose agent is alive (seen within the offline threshold) is taken over only with that
 * agent's token, so a key holder who learnt a machine id cannot take a working device's commands.
 */
async function deviceToReenroll(tx: RequestContext, key: EnrollmentKey, machineId: string): Promise<Device | null> {
  const device = await tx.em.findOne(Device, { orgId: key.orgId, machineId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
  if (!device) return null;
  if (device.siteId !== key.siteId) {
    if (device.status !== 'decommissioned') throw conflict('This machine is enrolled in another site of the organization: move or decommission that device first');
    device.machineId = null;
    await tx.em.flush();
    return null;
  }
  const aliveSince = tx.runtime.clock.now().getTime() - tx.runtime.config.devices.offlineAfterSeconds * 1000;
  const alive = device.tokenHash !== null && device.status !== 'decommissioned' && device.lastSeenAt.getTime() > aliveSince;
  const previousToken = tx.meta.agentTokenHash;
  if (alive && !(previousToken && safeEqual(previousToken, device.tokenHash!))) {
    throw conflict("This machine's agent is active: enroll with its current token (Authorization: Bearer), or decommission the device first");
  }
  return device;
}

/** The authenticated agent's device locked in the caller's transaction, if its token still works (not replaced or decommissioned meanwhile). */
async function lockAgentDevice(tx: RequestContext, agent: AgentIdentity): Promise<Device> {
  const locked = await tx.em.findOne(Device, { id: agent.deviceId, tokenHash: agent.tokenHash }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
  if (!locked || locked.status === 'decommissioned') throw unauthenticated(INVALID_AGENT_TOKEN);
  return locked;
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

type Heartbeat = z.output<typeof HeartbeatSchema>;

/** What a heartbeat records on the device on the full path (the steady statement sets the same columns). */
function reportedFields(input: Heartbeat, now: Date): Partial<Device> {
  return {
    lastSeenAt: now,
    agentVersion: input.agentVersion,
    ...(input.metrics !== undefined ? { metrics: input.metrics } : {}),
    ...(input.watchdogStatus !== undefined ? { watchdogStatus: input.watchdogStatus } : {}),
    ...(input.mainAgentSilentSince !== undefined ? { mainAgentSilentSince: input.mainAgentSilentSince ? new Date(input.mainAgentSilentSince) : null } : {}),
  };
}

type SteadyDevice = Pick<Device, 'id' | 'orgId' | 'siteId' | 'status' | 'osType' | 'architecture' | 'autoUpdate' | 'pinnedAgentVersion'> & { hasPending: boolean };

/** A heartbeat offered to the steady path: the agent, its token's hash, what it reports and when it arrived. */
interface SteadyReport {
  agentId: string;
  tokenHash: string;
  input: Heartbeat;
  seenAt: Date;
}

// Optional fields are sent with a flag: an absent field leaves the column as it was, a null clears it.
const STEADY_HEARTBEATS = statement(`
  update device set
    last_seen_at = report.seen_at,
    agent_version = report.agent_version,
    metrics = case when report.has_metrics then report.metrics else device.metrics end,
    watchdog_status = case when report.has_watchdog then report.watchdog_status else device.watchdog_status end,
    main_agent_silent_since = case when report.has_silent then report.silent_since else device.main_agent_silent_since end
  from unnest(?::uuid[], ?::text[], ?::timestamptz[], ?::text[], ?::boolean[], ?::jsonb[], ?::boolean[], ?::text[], ?::boolean[], ?::timestamptz[])
    as report(agent_id, token_hash, seen_at, agent_version, has_metrics, metrics, has_watchdog, watchdog_status, has_silent, silent_since)
  where device.agent_id = report.agent_id and device.token_hash = report.token_hash and device.agent_version = report.agent_version
    and (device.status in ('online', 'maintenance') or (device.status = 'updating' and device.updating_to_version is distinct from report.agent_version))
  returning device.agent_id, device.id, device.org_id, device.site_id, device.status, device.os_type, device.architecture, device.auto_update, device.pinned_agent_version,
    exists (select 1 from device_command c where c.device_id = device.id and c.status = 'pending') as has_pending`);

interface SteadyRow {
  agent_id: string;
  id: string;
  org_id: string;
  site_id: string | null;
  status: Device['status'];
  os_type: Device['osType'];
  architecture: string | null;
  auto_update: boolean;
  pinned_agent_version: string | null;
  has_pending: boolean;
}

/** Sorted by agent, so concurrent statements lock device rows in one order. */
function steadyValues(reports: SteadyReport[]): unknown[] {
  const sorted = [...reports].sort((a, b) => (a.agentId < b.agentId ? -1 : 1));
  const column = <T>(pick: (report: SteadyReport) => T) => sorted.map(pick);
  const given = (field: keyof Heartbeat) => column((r) => r.input[field] !== undefined);
  return [
    column((r) => r.agentId),
    column((r) => r.tokenHash),
    column((r) => r.seenAt.toISOString()),
    column((r) => r.input.agentVersion),
    given('metrics'),
    column((r) => (r.input.metrics === undefined ? null : JSON.stringify(r.input.metrics))),
    given('watchdogStatus'),
    column((r) => r.input.watchdogStatus ?? null),
    given('mainAgentSilentSince'),
    column((r) => r.input.mainAgentSilentSince ?? null),
  ];
}

/**
 * This instance's steady heartbeats, written together: at most 200 a statement, two statements under
 * way, one agent once per statement and in flight (src/db/coalesce.ts).
 */
const steadyHeartbeats = onePer(
  (runtime: Runtime) =>
    new Coalescer<SteadyReport, SteadyDevice | null>(
      async (reports) => {
        const rows = await preparedRows<SteadyRow>(runtime.orm, STEADY_HEARTBEATS, steadyValues(reports));
        const byAgent = new Map(rows.map((row) => [row.agent_id, row]));
        return reports.map(({ agentId }) => {
          const row = byAgent.get(agentId);
          return row ? { id: row.id, orgId: row.org_id, siteId: row.site_id, status: row.status, osType: row.os_type, architecture: row.architecture, autoUpdate: row.auto_update, pinnedAgentVersion: row.pinned_agent_version, hasPending: row.has_pending } : null;
        });
      },
      { maxBatch: 200, inFlight: 2, key: (report) => report.agentId },
    ),
);

/** A steady heartbeat's facts: the device as the heartbeat statement answered it, and what the agent reported (left out: not known now). */
function steadyFacts(device: SteadyDevice, reported: Heartbeat, seenAt: Date): DeviceFacts {
  const silentSince = reported.mainAgentSilentSince;
  return {
    id: device.id,
    orgId: device.orgId,
    siteId: device.siteId,
    status: device.status,
    lastSeenAt: seenAt,
    metrics: reported.metrics,
    watchdogStatus: reported.watchdogStatus,
    mainAgentSilentSince: silentSince === undefined ? undefined : silentSince === null ? null : new Date(silentSince),
  };
}

export const HeartbeatResultSchema = z
  .object({
    commands: z.array(ClaimedCommandSchema),
    configUpdate: JsonObjectSchema.nullable(),
    upgradeTo: UpgradeToSchema.nullable(),
  })
  .meta({ title: 'HeartbeatResult' });
export type HeartbeatResult = z.output<typeof HeartbeatResultSchema>;

/**
 * Records the heartbeat and hands out the device's pending commands (each exactly once). The steady
 * case is one statement, plus the claim when commands wait; anything else (a status or version
 * change, or a race with one) runs under the device's row lock and adds its event.
 */
export async function heartbeat(ctx: RequestContext, rawInput: HeartbeatInput): Promise<HeartbeatResult> {
  const claim = agentClaim(ctx);
  const input = parseInput(HeartbeatSchema, rawInput);
  const now = ctx.runtime.clock.now();
  // Nearly every heartbeat comes from an online device reporting the version it reported before (or
  // from one still mid-update): nothing changes but what it reports, so the steady path authenticates
  // it, records the report and says whether commands wait, in one statement shared with others.
  // Anything else (a wrong token, a status or version change) answers null and takes the full path.
  const steady = await steadyHeartbeats(ctx.runtime).submit({ ...claim, input, seenAt: now });
  if (steady) {
    // The statement matched the device by the claim's token hash: that verified the agent.
    admitAgent(ctx, { deviceId: steady.id, agentId: claim.agentId, tokenHash: claim.tokenHash, orgId: steady.orgId, siteId: steady.siteId });
    await reportHeartbeat(ctx.runtime, steadyFacts(steady, input, now), now);
    const upgradeTo = await upgradeFor(ctx, steady, input.agentVersion);
    return { commands: steady.hasPending ? await claimCommands(ctx, steady.id) : [], configUpdate: null, upgradeTo };
  }
  const { agent } = await authenticateAgent(ctx);
  const seen = await withTransaction(ctx, async (tx) => {
    const device = await lockAgentDevice(tx, agent);
    // What the device was when the report arrived: the upgrade offer is decided on it.
    const seen = { id: device.id, orgId: device.orgId, status: device.status, autoUpdate: device.autoUpdate, osType: device.osType, architecture: device.architecture, pinnedAgentVersion: device.pinnedAgentVersion };
    const previousVersion = device.agentVersion;
    const finishesUpdate = device.status === 'updating' && device.updatingToVersion === input.agentVersion;
    Object.assign(device, reportedFields(input, now));
    // A device in maintenance stays so while its occurrence lasts; its presence is lastSeenAt.
    if (device.status !== 'maintenance' && (device.status !== 'updating' || finishesUpdate)) await changeStatus(tx, device, 'online');
    // Groups filter on the version: a change outside an update (a manual reinstall) must reach them.
    if (previousVersion !== device.agentVersion && !finishesUpdate) {
      await emit(tx, { type: 'device.updated', orgId: device.orgId, data: { ...deviceEventData(device, null), changes: ['agentVersion'] } });
    }
    await tx.em.flush();
    tx.afterCommit(() => reportHeartbeat(tx.runtime, factsOf(device), now));
    return seen;
  });
  // The claim comes last: once it has committed the commands count as sent, so nothing may fail after it.
  const upgradeTo = await upgradeFor(ctx, seen, input.agentVersion);
  return { commands: await claimCommands(ctx, seen.id), configUpdate: null, upgradeTo };
}

export const AgentAckSchema = z.object({ ok: z.literal(true) }).meta({ title: 'AgentAck' });

export async function reportCommandResult(ctx: RequestContext, commandId: string, rawInput: CommandResultInput): Promise<{ ok: true }> {
  const { agent } = await authenticateAgent(ctx);
  await completeCommand(ctx, agent.deviceId, commandId, parseInput(CommandResultSchema, rawInput));
  return { ok: true };
}

export const InventorySchema = JsonObjectSchema.describe(
  'The parts reported, each checked and stored by the domain that owns it: `hardware` (an object), `software`, `patches`, `network`; parts not sent stay as they were.',
);
export type InventoryInput = z.input<typeof InventorySchema>;

/** Hands each inventory part to the domain that owns it (device-reports.ts). */
export async function reportInventory(ctx: RequestContext, rawInput: InventoryInput): Promise<{ ok: true }> {
  const { agent } = await authenticateAgent(ctx);
  const device = await ctx.em.findOneOrFail(Device, { id: agent.deviceId });
  await ingestInventory(ctx, device, parseInput(InventorySchema, rawInput));
  return { ok: true };
}

export const UpdateStatusSchema = z.object({ state: z.enum(['started', 'completed', 'failed']), toVersion: text(50) }).strict();
export type UpdateStatusInput = z.input<typeof UpdateStatusSchema>;

/**
 * `started` shows the device as `updating` until the first heartbeat with `toVersion` (or the
 * updating timeout); `failed` puts it back to `online`, as its heartbeats say it still runs.
 */
export async function reportUpdateStatus(ctx: RequestContext, rawInput: UpdateStatusInput): Promise<{ ok: true }> {
  const { agent } = await authenticateAgent(ctx);
  const input = parseInput(UpdateStatusSchema, rawInput);
  await withTransaction(ctx, async (tx) => {
    const device = await lockAgentDevice(tx, agent);
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

/** What an open channel's presence check found: the device seen, or the channel's credentials no longer valid. */
export type Presence = 'seen' | 'replaced' | 'decommissioned';

/**
 * Presence without a heartbeat (an open agent channel): `lastSeenAt` now, and a device that was
 * offline comes back online (`device.online`), as a heartbeat would. The channel authenticated with
 * the token whose hash is given: a device re-enrolled since (token replaced) or decommissioned
 * answers so, and the channel closes.
 */
export async function markSeen(ctx: RequestContext, deviceId: string, tokenHash: string): Promise<Presence> {
  skipAuthorization(ctx, 'agent channel presence: the channel authenticated with the agent token');
  return withTransaction(ctx, async (tx) => {
    const device = await tx.em.findOne(Device, { id: deviceId }, { lockMode: LockMode.PESSIMISTIC_WRITE });
    if (!device || device.status === 'decommissioned') return 'decommissioned';
    if (device.tokenHash !== tokenHash) return 'replaced';
    device.lastSeenAt = tx.runtime.clock.now();
    if (device.status === 'offline') {
      await changeStatus(tx, device, 'online');
      tx.afterCommit(() => reportHeartbeat(tx.runtime, factsOf(device), tx.runtime.clock.now()));
    }
    await tx.em.flush();
    return 'seen';
  });
}

/**
 * The presence tick of many open channels in one statement: `lastSeenAt` now for those still online,
 * updating or in maintenance under the token they connected with. Answers the ids it touched; the others (offline
 * meanwhile, re-enrolled, decommissioned) go through `markSeen` one by one.
 */
export async function touchPresence(ctx: RequestContext, channels: { deviceId: string; tokenHash: string }[]): Promise<Set<string>> {
  skipAuthorization(ctx, 'agent channel presence: the channels authenticated with their agent tokens');
  const touched = new Set<string>();
  const now = ctx.runtime.clock.now();
  for (let i = 0; i < channels.length; i += 1000) {
    const batch = channels.slice(i, i + 1000);
    const rows = (await ctx.em.execute(
      `update device set last_seen_at = ?, updated_at = now()
        from (values ${batch.map(() => '(?::uuid, ?)').join(', ')}) as open_channel(id, token_hash)
        where device.id = open_channel.id and device.token_hash = open_channel.token_hash and device.status in ('online', 'updating', 'maintenance')
        returning device.id`,
      [now, ...batch.flatMap((c) => [c.deviceId, c.tokenHash])],
    )) as { id: string }[];
    for (const row of rows) touched.add(row.id);
  }
  return touched;
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
      tx.afterCommit(() => reportHeartbeat(tx.runtime, factsOf(device), tx.runtime.clock.now()));
      changed += 1;
    });
  }
  return changed;
}
