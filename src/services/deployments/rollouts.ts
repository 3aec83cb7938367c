import { randomUUID } from 'node:crypto';
import { raw, type FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { PAUSE_REASONS, ROLLOUT_DEVICE_STATUSES, ROLLOUT_STATUSES, ROLLOUT_TYPES, Rollout, RolloutDevice, type RolloutStatus, type WavePlan } from '../../../entities/deployment.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, loadOwned, requirePrincipal, targetOrgId, tenantWhere } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { badRequest, conflict, notFound } from '../../errors.js';
import { cursorListFields, cursorPageSchema, decodeCursor, encodeCursor, finishCursorPage, keysetWhere, pageInfoOf, type Connection, type CursorConnectionInput } from '../../pagination.js';
import { enumValues, parseInput, timestamp, uuid } from '../../validation.js';
import { recordAudit } from '../audit/api.js';
import { checkTargets, findDevices, siteLimitedDevicesSql, toTarget } from '../devices/api.js';
import { applyChanges, providedFields } from '../shared/changes.js';
import { JsonObjectSchema } from '../shared/json.js';
import { requiredText } from '../shared/text.js';
import { parsePayload, rolloutKinds } from './kinds.js';
import { advance, cancelRolloutDevices, cutWaves, handOut, handOutWaiting, lockRollout, pauseRollout, waveCounts, type WaveCounts } from './waves.js';

/*
 * Staged rollouts (`/deployments`): a script, a catalog version, a configuration policy or an agent
 * version handed to an organization's devices wave by wave (draft → initialize: ready, the devices
 * cut into waves → start: running → completed, or paused and resumed, or cancelled). waves.ts moves a
 * running rollout on; kinds.ts says what each type hands out; progress.ts brings the outcomes back.
 */

const RESOURCE = 'Deployment';
/** A rollout reaches at most this many devices (initialize refuses more). */
export const MAX_ROLLOUT_DEVICES = 10_000;

// ── views ───────────────────────────────────────────────────────────────────────────────────────

const RolloutTypeSchema = z.enum(ROLLOUT_TYPES).meta({ title: 'DeploymentType', description: 'What a staged rollout hands out' }).register(enumValues, {
  script: 'Runs a script (`payload: {scriptId, parameters?}`).',
  software: 'Installs a catalog version (`payload: {catalogId, versionId}`).',
  policy: 'Applies a configuration policy and has it evaluated (`payload: {policyId}`).',
  agent_version: 'Offers a registered agent build as the heartbeat’s upgradeTo (`payload: {version}`).',
});
const RolloutStatusSchema = z.enum(ROLLOUT_STATUSES).meta({ title: 'DeploymentStatus', description: 'Where a staged rollout stands' }).register(enumValues, {
  draft: 'Being prepared; its devices are not cut into waves yet.',
  ready: 'Its devices are cut into waves; not started.',
  running: 'Handing its change out wave by wave.',
  paused: 'Stopped by hand or by a threshold; nothing new is handed out.',
  completed: 'Its last wave is done.',
  cancelled: 'Cancelled; devices not yet handed the change were left out.',
});
const PauseReasonSchema = z.enum(PAUSE_REASONS).meta({ title: 'DeploymentPauseReason', description: 'Why a rollout is paused' }).register(enumValues, {
  manual: 'Paused by hand.',
  failure_threshold: 'The failed share of the devices started so far exceeded failureThresholdPercent.',
  success_threshold: 'A finished wave fell short of successThresholdPercent.',
});
const WaveStatusSchema = z.enum(['pending', 'running', 'completed']).meta({ title: 'DeploymentWaveStatus', description: 'Where a wave stands' }).register(enumValues, {
  pending: 'Not started.',
  running: 'Started; some of its devices are not done.',
  completed: 'Started, and every device of it is done.',
});
const DeviceStatusSchema = z.enum(ROLLOUT_DEVICE_STATUSES).meta({ title: 'DeploymentDeviceStatus', description: 'Where one device of a rollout stands' }).register(enumValues, {
  pending: 'Its change has not been handed to it yet (its wave has not started, or its agent has not taken the command).',
  running: 'Handed out; no outcome yet.',
  succeeded: 'Its command completed (policy: evaluated; agent version: it heartbeats the version).',
  failed: 'Its command failed or timed out, or the change could not be handed to it (see reason).',
  cancelled: 'The rollout was cancelled before its turn.',
});

const TargetsSchema = z
  .strictObject({
    deviceIds: z.array(uuid()).max(500).optional().describe('these devices'),
    groupIds: z.array(uuid()).max(500).optional().describe('the members of these device groups (when initialized)'),
    siteIds: z.array(uuid()).max(500).optional().describe('the devices of these sites'),
  })
  .meta({ title: 'DeploymentTargetsInput', description: 'The organization’s devices a rollout reaches: those any selector names; every device of the organization when none is given' });

const TargetsViewSchema = z
  .object({
    deviceIds: z.array(z.string()).optional().describe('these devices'),
    groupIds: z.array(z.string()).optional().describe('the members of these device groups'),
    siteIds: z.array(z.string()).optional().describe('the devices of these sites'),
  })
  .meta({ title: 'DeploymentTargets', description: 'The organization’s devices a rollout reaches: those any selector names; every device of the organization when none is given' });

const WaveViewSchema = z
  .object({
    index: z.number().int().describe('from 1, in the order the waves run'),
    size: z.number().int().describe('its devices'),
    status: WaveStatusSchema,
    succeeded: z.number().int().describe('its devices that succeeded'),
    failed: z.number().int().describe('its devices that failed'),
  })
  .meta({ title: 'DeploymentWave', description: 'One wave of a rollout' });

const WavePlanViewSchema = z
  .object({
    percent: z.number().int().optional().describe('its share of the devices (percent)'),
    count: z.number().int().optional().describe('its number of devices'),
  })
  .meta({ title: 'DeploymentWavePlan', description: 'One wave as planned: a percent or a count' });

const WavePlanItemSchema = z
  .strictObject({
    percent: z.number().int().min(1).max(100).optional().describe('its share of the devices (percent); the last wave takes the rest'),
    count: z.number().int().min(1).max(MAX_ROLLOUT_DEVICES).optional().describe('its number of devices; leftovers make a last wave'),
  })
  .meta({ title: 'DeploymentWavePlanInput', description: 'One wave as planned: a percent or a count (every wave the same kind)' });

export const DeploymentViewSchema = z
  .object({
    id: uuid().describe('the rollout'),
    orgId: uuid().describe('its organization'),
    name: z.string().describe('what it is called'),
    type: RolloutTypeSchema,
    payload: z.record(z.string(), z.unknown()).describe('what it hands out: {scriptId, parameters?} | {catalogId, versionId} | {policyId} | {version}'),
    targets: TargetsViewSchema,
    wavePlan: z.array(WavePlanViewSchema).describe('the waves as planned'),
    status: RolloutStatusSchema,
    pauseReason: PauseReasonSchema.nullable().describe('why it is paused; null unless paused'),
    currentWave: z.number().int().describe('the last wave started; 0 before the start'),
    successThresholdPercent: z.number().int().describe('the share of a wave that must succeed before the next starts'),
    failureThresholdPercent: z.number().int().describe('the failed share of the devices started so far beyond which it pauses'),
    waves: z.array(WaveViewSchema).describe('its waves, once initialized (empty in draft)'),
    deviceCount: z.number().int().describe('its devices, once initialized'),
    createdBy: uuid().nullable().describe('the user who created it'),
    createdAt: timestamp().describe('when it was created'),
    updatedAt: timestamp().describe('when it last changed'),
    startedAt: timestamp().nullable().describe('when it was started'),
    completedAt: timestamp().nullable().describe('when its last wave was done'),
  })
  .meta({ title: 'Deployment', description: 'A staged rollout of one change to an organization’s devices, wave by wave' });
export type DeploymentView = z.output<typeof DeploymentViewSchema>;

function waveViews(rollout: Rollout, counts: Map<number, WaveCounts>): DeploymentView['waves'] {
  return [...counts].map(([index, c]) => ({
    index,
    size: c.size,
    status: index > rollout.currentWave ? 'pending' : c.pending + c.running > 0 ? 'running' : 'completed',
    succeeded: c.succeeded,
    failed: c.failed,
  }));
}

function deploymentView(rollout: Rollout, counts: Map<number, WaveCounts>): DeploymentView {
  const waves = waveViews(rollout, counts);
  return {
    id: rollout.id,
    orgId: rollout.orgId,
    name: rollout.name,
    type: rollout.type,
    payload: rollout.payload as Record<string, unknown>,
    targets: rollout.targets,
    wavePlan: rollout.waves,
    status: rollout.status,
    pauseReason: rollout.pauseReason,
    currentWave: rollout.currentWave,
    successThresholdPercent: rollout.successThresholdPercent,
    failureThresholdPercent: rollout.failureThresholdPercent,
    waves,
    deviceCount: waves.reduce((n, w) => n + w.size, 0),
    createdBy: rollout.createdBy,
    createdAt: rollout.createdAt.toISOString(),
    updatedAt: rollout.updatedAt.toISOString(),
    startedAt: rollout.startedAt?.toISOString() ?? null,
    completedAt: rollout.completedAt?.toISOString() ?? null,
  };
}

async function viewOf(ctx: RequestContext, rollout: Rollout): Promise<DeploymentView> {
  return deploymentView(rollout, (await waveCounts(ctx, [rollout.id])).get(rollout.id)!);
}

// ── inputs ──────────────────────────────────────────────────────────────────────────────────────

const WavesInput = z
  .array(WavePlanItemSchema)
  .min(1)
  .max(100)
  .superRefine((waves, issue) => {
    const percents = waves.filter((w) => w.percent !== undefined && w.count === undefined).length;
    const counts = waves.filter((w) => w.count !== undefined && w.percent === undefined).length;
    if (percents !== waves.length && counts !== waves.length) issue.addIssue({ code: 'custom', message: 'every wave gives a percent, or every wave gives a count' });
    else if (percents === waves.length && waves.reduce((n, w) => n + w.percent!, 0) !== 100) issue.addIssue({ code: 'custom', message: 'wave percents must sum to 100' });
  })
  .describe('[{percent}, …] summing to 100, or [{count}, …]');
const Threshold = z.number().int().min(0).max(100);

export const CreateDeploymentSchema = z
  .strictObject({
    orgId: uuid().optional().describe('required for partner and system callers'),
    name: requiredText(255).describe('what it is called'),
    type: RolloutTypeSchema,
    payload: JsonObjectSchema.describe('by type: script {scriptId, parameters?}, software {catalogId, versionId}, policy {policyId}, agent_version {version}'),
    targets: TargetsSchema,
    waves: WavesInput,
    successThresholdPercent: Threshold.default(100).describe('the share of a wave that must succeed before the next starts (100 by default)'),
    failureThresholdPercent: Threshold.default(20).describe('the failed share of the devices started so far beyond which it pauses (20 by default)'),
  })
  .meta({ title: 'CreateDeploymentInput', description: 'A new staged rollout, in draft' });
export type CreateDeploymentInput = z.input<typeof CreateDeploymentSchema>;

export const UpdateDeploymentSchema = z
  .strictObject({
    name: requiredText(255).optional().describe('a new name'),
    payload: JsonObjectSchema.optional().describe('a new payload of its type'),
    targets: TargetsSchema.optional().describe('new targets (a ready rollout goes back to draft)'),
    waves: WavesInput.optional().describe('a new wave plan (a ready rollout goes back to draft)'),
    successThresholdPercent: Threshold.optional().describe('a new share of a wave that must succeed before the next starts'),
    failureThresholdPercent: Threshold.optional().describe('a new failed share of the devices started so far beyond which it pauses'),
  })
  .refine((input) => Object.values(input).some((v) => v !== undefined), 'Provide at least one field to change')
  .meta({ title: 'UpdateDeploymentInput', description: 'The fields to change, in draft or ready; at least one' });
export type UpdateDeploymentInput = z.input<typeof UpdateDeploymentSchema>;

// ── reads ───────────────────────────────────────────────────────────────────────────────────────

function requireRollout(ctx: RequestContext, id: string, access: 'read' | 'write'): Promise<Rollout> {
  return loadOwned(ctx, Rollout, id, access === 'read' ? 'deployments:read' : 'deployments:write', { resource: RESOURCE });
}

const filters = {
  orgId: uuid().optional().describe('only rollouts of this organization (partner and system callers)'),
  status: RolloutStatusSchema.optional().describe('only rollouts in this status'),
  type: RolloutTypeSchema.optional().describe('only rollouts of this type'),
};
const DeploymentFilters = z.strictObject(filters);
export const DeploymentListQuery = z.strictObject({ ...filters, ...cursorListFields });
export type DeploymentListInput = z.input<typeof DeploymentListQuery>;
export const DeploymentPageSchema = cursorPageSchema(DeploymentViewSchema, 'DeploymentPage', 'staged rollouts, newest first');
type DeploymentPage = z.output<typeof DeploymentPageSchema>;

async function rolloutFilter(ctx: RequestContext, query: z.output<typeof DeploymentFilters>): Promise<FilterQuery<Rollout>> {
  await authorize(ctx, 'deployments:read');
  const where: FilterQuery<Rollout>[] = [(await tenantWhere<Rollout>(ctx, { org: 'orgId', requestedOrgId: query.orgId })) ?? {}];
  if (query.status) where.push({ status: query.status });
  if (query.type) where.push({ type: query.type });
  return { $and: where } as FilterQuery<Rollout>;
}

/** The rollouts of the organizations the caller sees, newest first, in keyset pages (their waves counted in one statement). */
export async function listDeployments(ctx: RequestContext, raw: DeploymentListInput): Promise<DeploymentPage> {
  const query = parseInput(DeploymentListQuery, raw);
  const filter = await rolloutFilter(ctx, query);
  const keyset = keysetWhere('createdAt', 'date', 'desc', query.cursor);
  const rows = await ctx.em.find(Rollout, { $and: [filter, keyset.where] } as FilterQuery<Rollout>, { orderBy: keyset.orderBy, limit: query.limit + 1, disableIdentityMap: true });
  const page = finishCursorPage(rows, query.limit, (r) => r.createdAt.toISOString());
  const counts = await waveCounts(ctx, page.items.map((r) => r.id));
  return { data: page.items.map((r) => deploymentView(r, counts.get(r.id)!)), nextCursor: page.nextCursor };
}

export async function countDeployments(ctx: RequestContext, raw: z.input<typeof DeploymentFilters>): Promise<number> {
  return ctx.em.count(Rollout, await rolloutFilter(ctx, parseInput(DeploymentFilters, raw)));
}

export async function getDeployment(ctx: RequestContext, id: string): Promise<DeploymentView> {
  return viewOf(ctx, await requireRollout(ctx, id, 'read'));
}

// ── its devices ─────────────────────────────────────────────────────────────────────────────────

export const DeploymentDeviceViewSchema = z
  .object({
    deviceId: uuid().describe('the device'),
    wave: z.number().int().describe('its wave, from 1'),
    status: DeviceStatusSchema,
    commandId: uuid().nullable().describe('the command that carries its change (script, software); null before it is queued and for the other types'),
    reason: z.string().nullable().describe('why it failed, or what it settled as (a policy’s compliance status); null otherwise'),
    startedAt: timestamp().nullable().describe('when its change was handed out'),
    finishedAt: timestamp().nullable().describe('when it succeeded, failed or was cancelled'),
  })
  .meta({ title: 'DeploymentDevice', description: 'One device of a staged rollout' });
type DeploymentDeviceView = z.output<typeof DeploymentDeviceViewSchema>;

const deviceFilters = {
  wave: z.coerce.number().int().min(1).optional().describe('only devices of this wave'),
  status: DeviceStatusSchema.optional().describe('only devices in this status'),
};
export const DeploymentDeviceListQuery = z.strictObject({ ...deviceFilters, ...cursorListFields });
export type DeploymentDeviceListInput = z.input<typeof DeploymentDeviceListQuery>;
export const DeploymentDevicePageSchema = cursorPageSchema(DeploymentDeviceViewSchema, 'DeploymentDevicePage', 'devices of the rollout, in its order');
type DeploymentDevicePage = z.output<typeof DeploymentDevicePageSchema>;

const deviceView = (row: RolloutDevice): DeploymentDeviceView => ({
  deviceId: row.deviceId,
  wave: row.wave,
  status: row.status,
  commandId: row.commandId,
  reason: row.reason,
  startedAt: row.startedAt?.toISOString() ?? null,
  finishedAt: row.finishedAt?.toISOString() ?? null,
});

interface DeviceEdge {
  node: DeploymentDeviceView;
  cursor: string;
}

/** The rollout's devices the caller sees (users limited to some sites: those of their sites), narrowed by the filters. */
function deviceWhere(ctx: RequestContext, rollout: Rollout, query: { wave?: number; status?: string }): FilterQuery<RolloutDevice> {
  const where: Record<string, unknown> = { rolloutId: rollout.id, ...(query.wave !== undefined && { wave: query.wave }), ...(query.status && { status: query.status }) };
  const sites = siteLimitedDevicesSql(ctx, 'device_id');
  if (sites) where[raw((alias: string) => siteLimitedDevicesSql(ctx, `${alias}.device_id`)!.sql, sites.params)] = true;
  return where as FilterQuery<RolloutDevice>;
}

/** One page of the rollout's devices in its order (by position) and whether more follow. */
async function deviceEdges(ctx: RequestContext, id: string, query: z.output<typeof DeploymentDeviceListQuery>): Promise<{ edges: DeviceEdge[]; more: boolean }> {
  const rollout = await requireRollout(ctx, id, 'read');
  const after = query.cursor ? decodeCursor(query.cursor, 'number') : null;
  const rows = await ctx.em.find(RolloutDevice, { $and: [deviceWhere(ctx, rollout, query), after ? { position: { $gt: after.value } } : {}] } as FilterQuery<RolloutDevice>, {
    orderBy: { position: 'asc' },
    limit: query.limit + 1,
    disableIdentityMap: true,
  });
  const edges = rows.slice(0, query.limit).map((row) => ({ node: deviceView(row), cursor: encodeCursor({ value: row.position, id: row.id }) }));
  return { edges, more: rows.length > query.limit };
}

/** The rollout's devices in its order (filters `wave`, `status`). */
export async function listDeploymentDevices(ctx: RequestContext, id: string, raw: DeploymentDeviceListInput): Promise<DeploymentDevicePage> {
  const { edges, more } = await deviceEdges(ctx, id, parseInput(DeploymentDeviceListQuery, raw));
  return { data: edges.map((e) => e.node), nextCursor: more ? edges.at(-1)!.cursor : null };
}

/** The rollout's devices as a GraphQL connection (`first`/`after`), `totalCount` counted when asked. */
export async function deploymentDevicesConnection(
  ctx: RequestContext,
  args: { id: string } & Omit<DeploymentDeviceListInput, 'cursor' | 'limit'> & CursorConnectionInput,
): Promise<Connection<DeploymentDeviceView>> {
  const { id, first, after, ...filters } = args;
  const { edges, more } = await deviceEdges(ctx, id, parseInput(DeploymentDeviceListQuery, { ...filters, cursor: after, limit: first }));
  const totalCount = async () => ctx.em.count(RolloutDevice, deviceWhere(ctx, await requireRollout(ctx, id, 'read'), parseInput(z.strictObject(deviceFilters), filters)));
  return { edges, pageInfo: pageInfoOf(edges, more, after != null), totalCount };
}

// ── writes ──────────────────────────────────────────────────────────────────────────────────────

/** The targets in the organization's terms, checked as the caller: another organization's (or an unseen site's) site, group or device is 404. */
async function checkedTargets(ctx: RequestContext, orgId: string, targets: z.output<typeof TargetsSchema>) {
  const target = toTarget({ orgId, ...targets });
  await checkTargets(ctx, target);
  return target;
}

export async function createDeployment(ctx: RequestContext, raw: CreateDeploymentInput): Promise<DeploymentView> {
  const input = parseInput(CreateDeploymentSchema, raw);
  const orgId = await targetOrgId(ctx, input.orgId, RESOURCE);
  const kind = rolloutKinds[input.type];
  await authorize(ctx, 'deployments:write', { orgId, resource: RESOURCE });
  await authorize(ctx, kind.permission, { orgId, resource: RESOURCE });
  const payload = parsePayload(input.type, input.payload);
  await kind.check(ctx, orgId, payload);
  await checkedTargets(ctx, orgId, input.targets);
  return withTransaction(ctx, async (tx) => {
    const rollout = tx.em.create(Rollout, {
      orgId,
      name: input.name,
      type: input.type,
      payload,
      targets: input.targets,
      waves: input.waves as WavePlan,
      successThresholdPercent: input.successThresholdPercent,
      failureThresholdPercent: input.failureThresholdPercent,
      createdBy: requirePrincipal(tx).userId,
    });
    await tx.em.flush();
    await recordAudit(tx, { action: 'deployment.create', resourceType: 'deployment', resourceId: rollout.id, orgId, changes: providedFields(input), details: { name: rollout.name, type: rollout.type } });
    return viewOf(tx, rollout);
  });
}

/** The rollout under its row lock for a write, in one of `allowed` states (409 otherwise). */
async function lockedForWrite(tx: RequestContext, id: string, allowed: readonly RolloutStatus[], action: string): Promise<Rollout> {
  const owned = await requireRollout(tx, id, 'write');
  // Users limited to some sites change only rollouts within their sites (as they could have made them).
  await checkTargets(tx, toTarget({ orgId: owned.orgId, ...owned.targets }), { stored: true });
  const rollout = (await lockRollout(tx, owned.id))!;
  if (!allowed.includes(rollout.status)) throw conflict(`A ${rollout.status} deployment cannot be ${action}`);
  return rollout;
}

export async function updateDeployment(ctx: RequestContext, id: string, raw: UpdateDeploymentInput): Promise<DeploymentView> {
  const input = parseInput(UpdateDeploymentSchema, raw);
  return withTransaction(ctx, async (tx) => {
    const rollout = await lockedForWrite(tx, id, ['draft', 'ready'], 'changed');
    const kind = rolloutKinds[rollout.type];
    const payload = input.payload === undefined ? undefined : parsePayload(rollout.type, input.payload);
    if (payload) {
      await authorize(tx, kind.permission, { orgId: rollout.orgId, resource: RESOURCE });
      await kind.check(tx, rollout.orgId, payload);
    }
    if (input.targets) await checkedTargets(tx, rollout.orgId, input.targets);
    const changes = applyChanges(rollout, { ...input, payload, waves: input.waves as WavePlan | undefined });
    // A new cut is needed once what it was cut from changed.
    if (rollout.status === 'ready' && (changes.includes('targets') || changes.includes('waves'))) {
      await tx.em.nativeDelete(RolloutDevice, { rolloutId: rollout.id });
      rollout.status = 'draft';
    }
    await tx.em.flush();
    await recordAudit(tx, { action: 'deployment.update', resourceType: 'deployment', resourceId: rollout.id, orgId: rollout.orgId, changes, details: { name: rollout.name } });
    return viewOf(tx, rollout);
  });
}

export async function deleteDeployment(ctx: RequestContext, id: string): Promise<void> {
  await withTransaction(ctx, async (tx) => {
    const rollout = await lockedForWrite(tx, id, ['draft', 'ready'], 'deleted');
    await tx.em.nativeDelete(RolloutDevice, { rolloutId: rollout.id });
    await tx.em.nativeDelete(Rollout, { id: rollout.id });
    await recordAudit(tx, { action: 'deployment.delete', resourceType: 'deployment', resourceId: rollout.id, orgId: rollout.orgId, details: { name: rollout.name } });
  });
}

/** draft → ready: the targeted devices the caller sees, by id, cut into waves and inserted in one statement. */
export async function initializeDeployment(ctx: RequestContext, id: string): Promise<DeploymentView> {
  return withTransaction(ctx, async (tx) => {
    const rollout = await lockedForWrite(tx, id, ['draft'], 'initialized');
    const target = await checkedTargets(tx, rollout.orgId, rollout.targets);
    const devices = await findDevices(tx, { target, active: true }, { fields: ['id'], orderBy: 'id', limit: MAX_ROLLOUT_DEVICES + 1 });
    if (devices.length === 0) throw badRequest('The targets reach no device');
    if (devices.length > MAX_ROLLOUT_DEVICES) throw badRequest(`A deployment reaches at most ${MAX_ROLLOUT_DEVICES} devices; narrow its targets`);
    const sizes = cutWaves(rollout.waves, devices.length);
    const rows: Partial<RolloutDevice>[] = [];
    sizes.forEach((size, w) => {
      for (let i = 0; i < size; i += 1) rows.push({ id: randomUUID(), rolloutId: rollout.id, deviceId: devices[rows.length]!.id, wave: w + 1, position: rows.length, status: 'pending' });
    });
    await tx.em.insertMany(RolloutDevice, rows);
    rollout.status = 'ready';
    await tx.em.flush();
    await recordAudit(tx, { action: 'deployment.initialize', resourceType: 'deployment', resourceId: rollout.id, orgId: rollout.orgId, details: { name: rollout.name, devices: devices.length, waves: sizes } });
    return viewOf(tx, rollout);
  });
}

/** ready → running: wave 1 gets the change (the caller must hold the change's own permission too). */
export async function startDeployment(ctx: RequestContext, id: string): Promise<DeploymentView> {
  return withTransaction(ctx, async (tx) => {
    const rollout = await lockedForWrite(tx, id, ['ready'], 'started');
    const kind = rolloutKinds[rollout.type];
    await authorize(tx, kind.permission, { orgId: rollout.orgId, resource: RESOURCE });
    await kind.check(tx, rollout.orgId, rollout.payload);
    rollout.status = 'running';
    rollout.startedAt = tx.runtime.clock.now();
    rollout.currentWave = 1;
    await handOutWaiting(tx, rollout, 1);
    await recordAudit(tx, { action: 'deployment.start', resourceType: 'deployment', resourceId: rollout.id, orgId: rollout.orgId, details: { name: rollout.name } });
    await advance(tx, rollout);
    await tx.em.flush();
    return viewOf(tx, rollout);
  });
}

export async function pauseDeployment(ctx: RequestContext, id: string): Promise<DeploymentView> {
  return withTransaction(ctx, async (tx) => {
    const rollout = await lockedForWrite(tx, id, ['running'], 'paused');
    await pauseRollout(tx, rollout, 'manual');
    await recordAudit(tx, { action: 'deployment.pause', resourceType: 'deployment', resourceId: rollout.id, orgId: rollout.orgId, details: { name: rollout.name } });
    return viewOf(tx, rollout);
  });
}

/**
 * paused → running, on where it stopped: the failures so far and a wave that fell short are accepted
 * (the thresholds judge what comes next), devices of started waves still waiting get the change.
 */
export async function resumeDeployment(ctx: RequestContext, id: string): Promise<DeploymentView> {
  return withTransaction(ctx, async (tx) => {
    const rollout = await lockedForWrite(tx, id, ['paused'], 'resumed');
    const kind = rolloutKinds[rollout.type];
    await authorize(tx, kind.permission, { orgId: rollout.orgId, resource: RESOURCE });
    const waves = (await waveCounts(tx, [rollout.id])).get(rollout.id)!;
    const reason = rollout.pauseReason;
    rollout.acceptedFailures = [...waves].filter(([index]) => index <= rollout.currentWave).reduce((n, [, w]) => n + w.failed, 0);
    if (reason === 'success_threshold') rollout.acceptedWave = rollout.currentWave;
    rollout.status = 'running';
    rollout.pauseReason = null;
    await handOutWaiting(tx, rollout);
    await recordAudit(tx, { action: 'deployment.resume', resourceType: 'deployment', resourceId: rollout.id, orgId: rollout.orgId, details: { name: rollout.name, pauseReason: reason } });
    await advance(tx, rollout);
    await tx.em.flush();
    return viewOf(tx, rollout);
  });
}

export async function cancelDeployment(ctx: RequestContext, id: string): Promise<DeploymentView> {
  return withTransaction(ctx, async (tx) => {
    const rollout = await lockedForWrite(tx, id, ['draft', 'ready', 'running', 'paused'], 'cancelled');
    await cancelRolloutDevices(tx, rollout);
    rollout.status = 'cancelled';
    rollout.pauseReason = null;
    await tx.em.flush();
    await recordAudit(tx, { action: 'deployment.cancel', resourceType: 'deployment', resourceId: rollout.id, orgId: rollout.orgId, details: { name: rollout.name } });
    return viewOf(tx, rollout);
  });
}

export const RetryResultSchema = DeploymentDeviceViewSchema.meta({ title: 'DeploymentDeviceRetry', description: 'The device, handed its change again' });

/** A failed device of a running or paused rollout gets its change again (a new command). */
export async function retryDeploymentDevice(ctx: RequestContext, id: string, deviceId: string): Promise<DeploymentDeviceView> {
  return withTransaction(ctx, async (tx) => {
    const owned = await requireRollout(tx, id, 'write');
    const row = uuid().safeParse(deviceId).success ? await tx.em.findOne(RolloutDevice, { rolloutId: owned.id, deviceId: deviceId.toLowerCase() }) : null;
    // A device outside the caller's sites is not theirs to retry.
    if (!row || (await findDevices(tx, { ids: [row.deviceId] }, { fields: ['id'] })).length === 0) throw notFound('Device');
    const rollout = await lockedForWrite(tx, id, ['running', 'paused'], 'retried');
    await authorize(tx, rolloutKinds[rollout.type].permission, { orgId: rollout.orgId, resource: RESOURCE });
    await tx.em.refresh(row);
    if (row.status !== 'failed') throw conflict(`Only a failed device is retried; this one is ${row.status}`);
    const previous = { commandId: row.commandId, reason: row.reason };
    Object.assign(row, { status: 'pending', commandId: null, reason: null, finishedAt: null });
    await handOut(tx, rollout, [row]);
    await tx.em.flush();
    await recordAudit(tx, { action: 'deployment.retry_device', resourceType: 'deployment', resourceId: rollout.id, orgId: rollout.orgId, details: { name: rollout.name, deviceId: row.deviceId, previous, commandId: row.commandId } });
    await advance(tx, rollout);
    return deviceView(row);
  });
}
