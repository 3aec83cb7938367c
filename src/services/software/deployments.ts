import { LockMode, raw, type FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import type { DeviceCommand } from '../../../entities/device-command.js';
import { DeviceSoftware } from '../../../entities/software.js';
import { SoftwareDeployment, SoftwareDeploymentResult, type SoftwareDeploymentSchedule } from '../../../entities/software-deployment.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, loadOwned, requirePrincipal, tenantWhere } from '../../auth/policy.js';
import { uuidArray } from '../../db/arrays.js';
import { withTransaction } from '../../db/transaction.js';
import { badRequest, conflict, notFound } from '../../errors.js';
import type { DomainEvent, DomainEventMap } from '../../events/types.js';
import { cursorListFields, cursorPageSchema, finishCursorPage, keysetWhere } from '../../pagination.js';
import { enumValues, parseInput, timestamp, uuid } from '../../validation.js';
import { recordAudit } from '../audit/api.js';
import { cancelQueuedCommands, checkTargets, findDevices, queueCommand, siteLimitedDevicesSql, toTarget, type CommandResult, type CommandTypeHooks } from '../devices/api.js';
import { policyTargetsInput, policyTargetsView, storedTargets, targetsView } from '../shared/policy-targets.js';
import { removeUninstalledItem } from './inventory.js';
import { INSTALL_SOFTWARE, UNINSTALL_SOFTWARE, softwareCommandFor, softwarePackage } from './software-commands.js';

/*
 * Software deployments: a catalog version installed on (or uninstalled from) the devices an
 * organization's targets name, one `install_software` / `uninstall_software` command per device whose
 * operating system the version has an installer for (the others are skipped), now, at an instant, or
 * on each device once it is under maintenance. Each device's result follows its command: taken
 * (`downloading`), started (`installing`), answered (`succeeded` / `failed`), timed out (`failed`).
 */

const RESOURCE = 'Software deployment';
/** At most this many devices per deployment (a larger target is refused: split it). */
export const MAX_DEPLOYMENT_DEVICES = 10_000;
/** Results the due work queues per batch, and batches per tick (the rest on the next). */
const DUE_BATCH = 500;
const DUE_BATCHES = 20;

export const DEPLOYMENT_STATUSES = ['scheduled', 'running', 'completed', 'partial', 'failed', 'cancelled'] as const;
export const RESULT_STATUSES = ['pending', 'downloading', 'installing', 'succeeded', 'failed', 'skipped', 'cancelled'] as const;
type DeploymentStatus = (typeof DEPLOYMENT_STATUSES)[number];
type ResultStatus = (typeof RESULT_STATUSES)[number];
const UNFINISHED: DeploymentStatus[] = ['scheduled', 'running'];
const OPEN: ResultStatus[] = ['pending', 'downloading', 'installing'];

export const SoftwareDeploymentStatusSchema = z
  .enum(DEPLOYMENT_STATUSES)
  .meta({ title: 'SoftwareDeploymentStatus', description: 'Where a software deployment stands' })
  .register(enumValues, {
    scheduled: 'Made; no agent has taken a command of it yet.',
    running: 'An agent has taken a command of it; devices still to answer.',
    completed: 'Every device is done and none failed.',
    partial: 'Every device is done; some succeeded, some failed.',
    failed: 'Every device is done; some failed and none succeeded.',
    cancelled: 'Cancelled: devices still pending were not sent their command.',
  });
export const SoftwareDeploymentResultStatusSchema = z
  .enum(RESULT_STATUSES)
  .meta({ title: 'SoftwareDeploymentResultStatus', description: 'Where a device of a software deployment stands' })
  .register(enumValues, {
    pending: 'Its command waits (queued, or until the schedule or a maintenance window lets it go out).',
    downloading: 'The agent has taken its command (it downloads the installer).',
    installing: 'The agent reported it started.',
    succeeded: 'The agent reported it done.',
    failed: 'The agent reported a failure, or the command timed out.',
    skipped: 'Not sent: no installer for its operating system, or the device was decommissioned or moved.',
    cancelled: 'Not sent: the deployment (or its command) was cancelled first.',
  });
export const SoftwareDeploymentActionSchema = z
  .enum(['install', 'uninstall'])
  .meta({ title: 'SoftwareDeploymentAction', description: 'What a deployment does with its version' })
  .register(enumValues, { install: 'Install the version (install_software).', uninstall: 'Uninstall it (uninstall_software).' });
export const SoftwareDeploymentScheduleTypeSchema = z
  .enum(['now', 'at', 'maintenance_window'])
  .meta({ title: 'SoftwareDeploymentScheduleType', description: 'When a deployment’s commands go out' })
  .register(enumValues, {
    now: 'At once.',
    at: 'Once the service’s clock passes `at`.',
    maintenance_window: 'To each device once it shows status maintenance (a maintenance window is under way on it).',
  });

// ── views ───────────────────────────────────────────────────────────────────────────────────────

const CountsSchema = z
  .object({
    pending: z.number().int().describe('devices whose command waits to go out or to be taken'),
    downloading: z.number().int().describe('devices whose agent has taken its command'),
    installing: z.number().int().describe('devices whose agent reported it started'),
    succeeded: z.number().int().describe('devices done without error'),
    failed: z.number().int().describe('devices that failed or timed out'),
    skipped: z.number().int().describe('devices not sent a command (no installer for their OS, decommissioned or moved)'),
    cancelled: z.number().int().describe('devices whose command was cancelled before it went out'),
    total: z.number().int().describe('every device of the deployment'),
  })
  .meta({ title: 'SoftwareDeploymentCounts', description: 'How many of a deployment’s devices stand at each result status (those of your sites for users limited to some)' });
type Counts = z.output<typeof CountsSchema>;

export const SoftwareDeploymentViewSchema = z
  .object({
    id: uuid().describe('the deployment'),
    orgId: uuid().describe('its organization'),
    catalogId: uuid().describe('the package'),
    versionId: uuid().describe('the version'),
    name: z.string().describe('the package’s name when the deployment was made'),
    version: z.string().describe('the version’s number'),
    action: SoftwareDeploymentActionSchema,
    targets: policyTargetsView('SoftwareDeploymentTargets'),
    schedule: z
      .object({ type: SoftwareDeploymentScheduleTypeSchema, at: timestamp().nullable().describe('`at` schedules: when; null otherwise') })
      .meta({ title: 'SoftwareDeploymentSchedule', description: 'When a deployment’s commands go out' }),
    status: SoftwareDeploymentStatusSchema,
    counts: CountsSchema,
    createdBy: uuid().nullable().describe('the user who made it'),
    createdAt: timestamp().describe('when it was made'),
    updatedAt: timestamp().describe('when it last changed'),
    completedAt: timestamp().nullable().describe('when it ended (or was cancelled); null until then'),
  })
  .meta({ title: 'SoftwareDeployment', description: 'A catalog version installed on or uninstalled from devices, and how they stand' });
export type SoftwareDeploymentView = z.output<typeof SoftwareDeploymentViewSchema>;

export const SoftwareDeploymentResultViewSchema = z
  .object({
    id: uuid().describe('the result'),
    deviceId: uuid().describe('the device'),
    hostname: z.string().describe('its hostname when the deployment was made'),
    status: SoftwareDeploymentResultStatusSchema,
    reason: z.string().nullable().describe('why it was skipped or cancelled; null otherwise'),
    commandId: uuid().nullable().describe('its command; null until queued'),
    exitCode: z.number().int().nullable().describe('the installer’s exit code, as the agent reported it'),
    error: z.string().nullable().describe('what went wrong (the agent’s stderr or error); null otherwise'),
    updatedAt: timestamp().describe('when it last changed'),
  })
  .meta({ title: 'SoftwareDeploymentResult', description: 'A device of a software deployment and where it stands' });
type ResultView = z.output<typeof SoftwareDeploymentResultViewSchema>;

const emptyCounts = (): Counts => ({ pending: 0, downloading: 0, installing: 0, succeeded: 0, failed: 0, skipped: 0, cancelled: 0, total: 0 });

/** The deployments' counts by result status, one grouped statement (users limited to some sites count their devices only). */
async function countsOf(ctx: RequestContext, deploymentIds: string[]): Promise<Map<string, Counts>> {
  const counts = new Map(deploymentIds.map((id) => [id, emptyCounts()]));
  if (deploymentIds.length === 0) return counts;
  const sites = siteLimitedDevicesSql(ctx, 'r.device_id');
  const rows = (await ctx.em.execute(
    `select r.deployment_id, r.status, count(*)::int as n from software_deployment_result r
      where r.deployment_id = any(?::uuid[]) ${sites ? `and ${sites.sql}` : ''} group by r.deployment_id, r.status`,
    [uuidArray(deploymentIds), ...(sites?.params ?? [])],
  )) as { deployment_id: string; status: ResultStatus; n: number }[];
  for (const row of rows) {
    const of = counts.get(row.deployment_id)!;
    of[row.status] = row.n;
    of.total += row.n;
  }
  return counts;
}

async function deploymentViews(ctx: RequestContext, deployments: SoftwareDeployment[]): Promise<SoftwareDeploymentView[]> {
  const counts = await countsOf(ctx, deployments.map((d) => d.id));
  return deployments.map((d) => ({
    id: d.id,
    orgId: d.orgId,
    catalogId: d.catalogId,
    versionId: d.versionId,
    name: d.name,
    version: d.version,
    action: d.action as 'install' | 'uninstall',
    targets: targetsView(d.targets),
    schedule: { type: d.schedule.type, at: d.schedule.type === 'at' ? d.schedule.at : null },
    status: d.status as DeploymentStatus,
    counts: counts.get(d.id)!,
    createdBy: d.createdBy,
    createdAt: d.createdAt.toISOString(),
    updatedAt: d.updatedAt.toISOString(),
    completedAt: d.completedAt?.toISOString() ?? null,
  }));
}

const resultView = (r: SoftwareDeploymentResult): ResultView => ({
  id: r.id,
  deviceId: r.deviceId,
  hostname: r.hostname,
  status: r.status as ResultStatus,
  reason: r.reason,
  commandId: r.commandId,
  exitCode: r.exitCode,
  error: r.error,
  updatedAt: r.updatedAt.toISOString(),
});

// ── inputs ──────────────────────────────────────────────────────────────────────────────────────

const ScheduleInput = z
  .strictObject({
    type: SoftwareDeploymentScheduleTypeSchema,
    at: z.iso.datetime({ offset: true }).optional().describe('at: when (ISO 8601, in the future)'),
  })
  .superRefine((schedule, ctx) => {
    if (schedule.type === 'at' && schedule.at === undefined) ctx.addIssue({ code: 'custom', path: ['at'], message: 'required for at schedules' });
    if (schedule.type !== 'at' && schedule.at !== undefined) ctx.addIssue({ code: 'custom', path: ['at'], message: `not a field of ${schedule.type} schedules` });
  })
  .meta({ title: 'SoftwareDeploymentScheduleInput', description: 'now (the default): at once; at: once the clock passes `at`; maintenance_window: to each device once it is under maintenance' });

export const CreateSoftwareDeploymentSchema = z
  .strictObject({
    orgId: uuid().optional().describe('the package’s organization (partner and system callers may name it)'),
    catalogId: uuid().describe('the package'),
    versionId: uuid().describe('its version to install or uninstall'),
    action: SoftwareDeploymentActionSchema,
    targets: policyTargetsInput('SoftwareDeploymentTargetsInput').describe(`the devices (at most ${MAX_DEPLOYMENT_DEVICES.toLocaleString('en')}); none named: every device of the organization`),
    schedule: ScheduleInput.optional(),
  })
  .meta({ title: 'CreateSoftwareDeploymentInput', description: 'A catalog version to install on or uninstall from devices' });
export type CreateSoftwareDeploymentInput = z.input<typeof CreateSoftwareDeploymentSchema>;

// ── creating ────────────────────────────────────────────────────────────────────────────────────

/**
 * Makes a deployment: one result per targeted device (one statement), `skipped` where the version has
 * no installer for the device's operating system; with a `now` schedule the others' commands are
 * queued at once, else by the due work.
 */
export async function createSoftwareDeployment(ctx: RequestContext, rawInput: CreateSoftwareDeploymentInput): Promise<SoftwareDeploymentView> {
  const input = parseInput(CreateSoftwareDeploymentSchema, rawInput);
  const pkg = await softwarePackage(ctx, input.catalogId, input.versionId, 'software:write');
  if (input.orgId && input.orgId.toLowerCase() !== pkg.orgId) throw notFound('Software package');
  const target = toTarget({ orgId: pkg.orgId, ...input.targets });
  await checkTargets(ctx, target);
  const now = ctx.runtime.clock.now();
  const schedule: SoftwareDeploymentSchedule = input.schedule?.type === 'at' ? { type: 'at', at: new Date(input.schedule.at!).toISOString() } : { type: input.schedule?.type === 'maintenance_window' ? 'maintenance_window' : 'now' };
  if (schedule.type === 'at' && new Date(schedule.at) <= now) throw badRequest('schedule.at must be in the future', [{ path: 'schedule.at', message: 'must be in the future' }]);
  const devices = await findDevices(ctx, { target, active: true }, { fields: ['hostname', 'osType'], orderBy: 'id', limit: MAX_DEPLOYMENT_DEVICES + 1 });
  if (devices.length > MAX_DEPLOYMENT_DEVICES) throw badRequest(`The targets name more than ${MAX_DEPLOYMENT_DEVICES} devices: split the deployment`);
  const { userId } = requirePrincipal(ctx);
  return withTransaction(ctx, async (tx) => {
    const deployment = tx.em.create(SoftwareDeployment, {
      ...pkg,
      action: input.action,
      targets: storedTargets(target),
      schedule,
      dueAt: schedule.type === 'at' ? new Date(schedule.at) : null,
      createdBy: userId,
      createdAt: now,
      updatedAt: now,
    });
    await tx.em.flush();
    const rows = devices.map((device) => {
      const command = softwareCommandFor(pkg, input.action, device.osType, { deploymentId: deployment.id });
      return { device_id: device.id, hostname: device.hostname, status: 'skipped' in command ? 'skipped' : 'pending', reason: 'skipped' in command ? command.skipped : null };
    });
    await tx.em.execute(
      `insert into software_deployment_result (id, deployment_id, device_id, hostname, status, reason, updated_at)
        select gen_random_uuid(), ?, t.device_id, t.hostname, t.status, t.reason, ? from jsonb_to_recordset(?::jsonb) as t(device_id uuid, hostname text, status text, reason text)`,
      [deployment.id, now, JSON.stringify(rows)],
    );
    await recordAudit(tx, {
      action: 'software_deployment.create',
      resourceType: 'software_deployment',
      resourceId: deployment.id,
      orgId: deployment.orgId,
      details: { catalogId: pkg.catalogId, versionId: pkg.versionId, name: pkg.name, version: pkg.version, action: input.action, schedule, devices: rows.length },
    });
    if (schedule.type === 'now') await dispatch(tx, deployment, await tx.em.find(SoftwareDeploymentResult, { deploymentId: deployment.id, status: 'pending' }));
    else await settle(tx, deployment);
    return (await deploymentViews(tx, [deployment]))[0]!;
  });
}

/**
 * Queues the results' commands (each by its device's operating system now: none for it, `skipped`;
 * its device decommissioned or moved meanwhile, `skipped`), then ends the deployment if nothing is left open.
 */
async function dispatch(tx: RequestContext, deployment: SoftwareDeployment, rows: SoftwareDeploymentResult[]): Promise<void> {
  const devices = new Map((await findDevices(tx, { ids: rows.map((r) => r.deviceId) }, { scope: 'all' })).map((d) => [d.id, d]));
  const now = tx.runtime.clock.now();
  for (const row of rows) {
    const device = devices.get(row.deviceId);
    row.updatedAt = now;
    if (!device || device.status === 'decommissioned' || device.orgId !== deployment.orgId) {
      Object.assign(row, { status: 'skipped', reason: 'The device was decommissioned or moved to another organization' });
      continue;
    }
    // The deployment keeps its version's fields: it is the package its commands are made of.
    const command = softwareCommandFor(deployment, deployment.action as 'install' | 'uninstall', device.osType, { deploymentId: deployment.id });
    if ('skipped' in command) Object.assign(row, { status: 'skipped', reason: command.skipped });
    else row.commandId = (await queueCommand(tx, device, command, deployment.createdBy)).id;
  }
  await tx.em.flush();
  await settle(tx, deployment);
}

/**
 * Ends the deployment once no result is open: `completed` when none failed, `failed` when some failed
 * and none succeeded, else `partial` (skipped and cancelled devices count for neither).
 */
async function settle(tx: RequestContext, deployment: SoftwareDeployment): Promise<void> {
  if (!UNFINISHED.includes(deployment.status as DeploymentStatus)) return;
  const rows = (await tx.em.execute(`select status, count(*)::int as n from software_deployment_result where deployment_id = ? group by status`, [deployment.id])) as { status: ResultStatus; n: number }[];
  const count = (status: ResultStatus) => rows.find((r) => r.status === status)?.n ?? 0;
  if (OPEN.some((status) => count(status) > 0)) return;
  const now = tx.runtime.clock.now();
  deployment.status = count('failed') === 0 ? 'completed' : count('succeeded') === 0 ? 'failed' : 'partial';
  deployment.completedAt = now;
  deployment.updatedAt = now;
  await tx.em.flush();
}

// ── the agents' part ────────────────────────────────────────────────────────────────────────────

/** The deployment, locked: answers, timeouts, cancels and the due work change its results from many transactions. */
const lockDeployment = (tx: RequestContext, id: string) => tx.em.findOneOrFail(SoftwareDeployment, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });

/** The result of a command (matched by its id: other domains queue these types too), with its deployment locked; null when none is ours. */
async function resultOf(tx: RequestContext, commandId: string): Promise<{ deployment: SoftwareDeployment; row: SoftwareDeploymentResult } | null> {
  const found = await tx.em.findOne(SoftwareDeploymentResult, { commandId }, { fields: ['deploymentId'], disableIdentityMap: true });
  if (!found) return null;
  const deployment = await lockDeployment(tx, found.deploymentId);
  const row = await tx.em.findOneOrFail(SoftwareDeploymentResult, { id: found.id }, { refresh: true });
  return { deployment, row };
}

/** The command's result ends (also after its deployment was cancelled: a command already handed out still reports). */
async function finishResult(tx: RequestContext, commandId: string, outcome: Pick<SoftwareDeploymentResult, 'status' | 'exitCode' | 'error' | 'reason'>): Promise<SoftwareDeploymentResult | null> {
  const found = await resultOf(tx, commandId);
  if (!found || !OPEN.includes(found.row.status as ResultStatus)) return null;
  Object.assign(found.row, outcome, { updatedAt: tx.runtime.clock.now() });
  await tx.em.flush();
  await settle(tx, found.deployment);
  return found.row;
}

const errorOf = (input: CommandResult): string | null => {
  const fromResult = input.result?.error;
  return input.stderr?.trim() || (typeof fromResult === 'string' ? fromResult : null) || null;
};

/**
 * A completed command changes the device's inventory at once (its next report would too): an
 * uninstall removes the items of the package's name, an install replaces them with its version.
 */
async function applyToInventory(tx: RequestContext, command: DeviceCommand): Promise<void> {
  const name = String(command.payload.name);
  await tx.em.nativeDelete(DeviceSoftware, { deviceId: command.deviceId, name });
  if (command.type === INSTALL_SOFTWARE) {
    tx.em.create(DeviceSoftware, { deviceId: command.deviceId, name, version: String(command.payload.version), reportedAt: tx.runtime.clock.now() });
    await tx.em.flush();
  }
}

/** A deployment's hooks of `install_software` and `uninstall_software` (the software domain owns both types). */
const deploymentHooks: Required<Pick<CommandTypeHooks, 'claimed' | 'started' | 'answered' | 'cancelled'>> = {
  async claimed(tx, commandIds) {
    const now = tx.runtime.clock.now();
    await tx.em.execute(
      `with taken as (update software_deployment_result set status = 'downloading', updated_at = ? where command_id = any(?::uuid[]) and status = 'pending' returning deployment_id)
       update software_deployment set status = 'running', updated_at = ? where id in (select deployment_id from taken) and status = 'scheduled'`,
      [now, uuidArray(commandIds), now],
    );
  },
  async started(tx, command) {
    await tx.em.execute(`update software_deployment_result set status = 'installing', updated_at = ? where command_id = ? and status in ('pending', 'downloading')`, [tx.runtime.clock.now(), command.id]);
  },
  async answered(tx, command, input) {
    const succeeded = input.status === 'completed';
    const row = await finishResult(tx, command.id, { status: succeeded ? 'succeeded' : 'failed', exitCode: input.exitCode ?? null, error: succeeded ? null : errorOf(input) ?? `The agent reported ${input.status}`, reason: null });
    if (row && succeeded) await applyToInventory(tx, command);
    return false;
  },
  // Cancelled by hand, or because the device was decommissioned or moved.
  async cancelled(tx, command) {
    await finishResult(tx, command.id, { status: 'cancelled', exitCode: null, error: null, reason: 'The command was cancelled' });
  },
};

export const softwareCommandTypes: Record<string, CommandTypeHooks> = {
  [INSTALL_SOFTWARE]: { serviceOnly: 'install_software commands are queued by software deployments (POST /software/deployments)', ...deploymentHooks },
  [UNINSTALL_SOFTWARE]: {
    serviceOnly: 'uninstall_software commands are queued by software deployments (POST /software/deployments) and POST /software/inventory/:deviceId/:softwareId/uninstall',
    ...deploymentHooks,
    async answered(tx, command, input) {
      await removeUninstalledItem(tx, command, input);
      return deploymentHooks.answered(tx, command, input);
    },
  },
};

/** Commands timed out unanswered (the devices domain tells no hook, only `device.command_updated`): their results fail. */
export async function failTimedOutCommands(ctx: RequestContext, events: DomainEvent[]): Promise<void> {
  const timedOut = events.map((event) => event.data as DomainEventMap['device.command_updated']).filter((data) => data.status === 'timeout' && (data.type === INSTALL_SOFTWARE || data.type === UNINSTALL_SOFTWARE));
  for (const data of timedOut) await withTransaction(ctx, (tx) => finishResult(tx, data.commandId, { status: 'failed', exitCode: null, error: 'The command timed out', reason: null }));
}

// ── the due work ────────────────────────────────────────────────────────────────────────────────

/** Where the next tick's due work reads on (per instance; null: from the start). */
let dueResumeAfter: [string, string] | null = null;

/**
 * Results waiting for their command whose time has come: `at` deployments past their instant, and
 * `maintenance_window` devices that show status maintenance now (read per batch; a device still out
 * of maintenance does not hold back those behind it).
 */
export async function queueDueDeployments(ctx: RequestContext, now: Date): Promise<void> {
  // Each tick reads on from where the last stopped, wrapping round: devices still out of maintenance cannot fill every tick's window.
  let after = dueResumeAfter;
  dueResumeAfter = null;
  for (let batch = 0; batch < DUE_BATCHES; batch++) {
    const rows = (await ctx.em.execute(
      `select r.id, r.deployment_id, r.device_id, d.schedule->>'type' as type from software_deployment_result r join software_deployment d on d.id = r.deployment_id
        where r.status = 'pending' and r.command_id is null and d.status in ('scheduled', 'running') and (d.due_at is null or d.due_at <= ?)
          ${after ? 'and (r.deployment_id, r.id) > (?::uuid, ?::uuid)' : ''}
        order by r.deployment_id, r.id limit ${DUE_BATCH}`,
      [now, ...(after ?? [])],
    )) as { id: string; deployment_id: string; device_id: string; type: string }[];
    const windowed = rows.filter((r) => r.type === 'maintenance_window').map((r) => r.device_id);
    const inMaintenance = new Set(
      windowed.length > 0 ? (await findDevices(ctx, { ids: windowed }, { scope: 'all', fields: ['status'] })).filter((d) => d.status === 'maintenance').map((d) => d.id) : [],
    );
    const byDeployment = new Map<string, string[]>();
    for (const row of rows) if (row.type !== 'maintenance_window' || inMaintenance.has(row.device_id)) byDeployment.set(row.deployment_id, [...(byDeployment.get(row.deployment_id) ?? []), row.id]);
    for (const [deploymentId, ids] of byDeployment) {
      try {
        await withTransaction(ctx, async (tx) => {
          const deployment = await lockDeployment(tx, deploymentId);
          if (!UNFINISHED.includes(deployment.status as DeploymentStatus)) return;
          const still = await tx.em.find(SoftwareDeploymentResult, { id: { $in: ids }, status: 'pending', commandId: null }, { refresh: true });
          if (still.length > 0) await dispatch(tx, deployment, still);
        });
      } catch (error) {
        ctx.runtime.log.error({ deploymentId, err: (error as Error).message }, 'software deployment due work failed');
      }
    }
    const last = rows.at(-1);
    if (rows.length < DUE_BATCH || !last) return;
    after = [last.deployment_id, last.id];
  }
  dueResumeAfter = after;
}

// ── cancelling ──────────────────────────────────────────────────────────────────────────────────

/**
 * Cancels an unfinished deployment (else 409): its pending results become `cancelled` and their queued
 * commands are cancelled before any agent takes them; commands already handed out run on and their
 * results are still recorded.
 */
export async function cancelSoftwareDeployment(ctx: RequestContext, id: string): Promise<SoftwareDeploymentView> {
  const found = await requireDeployment(ctx, id, 'software:write');
  // Users limited to some sites cancel only deployments within their sites (as they could have made them).
  await checkTargets(ctx, toTarget({ orgId: found.orgId, ...found.targets }), { stored: true });
  return withTransaction(ctx, async (tx) => {
    // Commands first, then the deployment: the order the claim takes them in.
    const pending = await tx.em.find(SoftwareDeploymentResult, { deploymentId: found.id, status: 'pending', commandId: { $ne: null } }, { fields: ['commandId'], disableIdentityMap: true });
    const cancelled = await cancelQueuedCommands(tx, pending.map((r) => r.commandId!));
    const deployment = await lockDeployment(tx, found.id);
    if (!UNFINISHED.includes(deployment.status as DeploymentStatus)) throw conflict(`The deployment has already ended (${deployment.status})`);
    const now = tx.runtime.clock.now();
    // Pending results whose command was cancelled, or that had none yet (a command an agent took meanwhile left its result downloading).
    await tx.em.execute(
      `update software_deployment_result set status = 'cancelled', reason = 'The deployment was cancelled', updated_at = ?
        where deployment_id = ? and status = 'pending' and (command_id is null or command_id = any(?::uuid[]))`,
      [now, deployment.id, uuidArray(cancelled)],
    );
    Object.assign(deployment, { status: 'cancelled', completedAt: now, updatedAt: now });
    await tx.em.flush();
    await recordAudit(tx, { action: 'software_deployment.cancel', resourceType: 'software_deployment', resourceId: deployment.id, orgId: deployment.orgId, details: { name: deployment.name, version: deployment.version, cancelled: cancelled.length } });
    return (await deploymentViews(tx, [deployment]))[0]!;
  });
}

// ── reads ───────────────────────────────────────────────────────────────────────────────────────

/** The deployment, in an organization where the caller holds `permission`; users limited to some sites see those that reached a device of theirs. */
async function requireDeployment(ctx: RequestContext, id: string, permission: 'software:read' | 'software:write'): Promise<SoftwareDeployment> {
  const deployment = await loadOwned(ctx, SoftwareDeployment, id, permission, { resource: RESOURCE });
  const sites = siteLimitedDevicesSql(ctx, 'device_id');
  if (sites) {
    const [mine] = (await ctx.em.execute(`select 1 from software_deployment_result where deployment_id = ? and ${sites.sql} limit 1`, [deployment.id, ...sites.params])) as unknown[];
    if (!mine) throw notFound(RESOURCE);
  }
  return deployment;
}

const filters = {
  orgId: uuid().optional().describe('only deployments of this organization (partner and system callers)'),
  status: SoftwareDeploymentStatusSchema.optional().describe('only deployments in this state'),
  catalogId: uuid().optional().describe('only deployments of this package'),
};
const DeploymentFilters = z.strictObject(filters);
export const SoftwareDeploymentListQuery = z.strictObject({ ...filters, ...cursorListFields });
export type SoftwareDeploymentListInput = z.input<typeof SoftwareDeploymentListQuery>;
export const SoftwareDeploymentPageSchema = cursorPageSchema(SoftwareDeploymentViewSchema, 'SoftwareDeploymentPage', 'software deployments, newest first');
type SoftwareDeploymentPage = z.output<typeof SoftwareDeploymentPageSchema>;

async function deploymentFilter(ctx: RequestContext, query: z.output<typeof DeploymentFilters>): Promise<FilterQuery<SoftwareDeployment>> {
  await authorize(ctx, 'software:read');
  // Another organization's orgId is 404, as its deployments' ids are.
  if (query.orgId) await authorize(ctx, 'software:read', { orgId: query.orgId, resource: 'Organization' });
  const where: FilterQuery<SoftwareDeployment>[] = [(await tenantWhere<SoftwareDeployment>(ctx, { org: 'orgId', requestedOrgId: query.orgId })) ?? {}];
  if (query.status) where.push({ status: query.status });
  if (query.catalogId) where.push({ catalogId: query.catalogId.toLowerCase() });
  const sites = siteLimitedDevicesSql(ctx, 'r.device_id');
  if (sites) where.push({ [raw((alias: string) => `exists (select 1 from software_deployment_result r where r.deployment_id = ${alias}.id and ${sites.sql})`, sites.params)]: true } as FilterQuery<SoftwareDeployment>);
  return { $and: where } as FilterQuery<SoftwareDeployment>;
}

/** The deployments of the organizations the caller sees, newest first; their counts in one statement per page. */
export async function listSoftwareDeployments(ctx: RequestContext, rawQuery: SoftwareDeploymentListInput): Promise<SoftwareDeploymentPage> {
  const query = parseInput(SoftwareDeploymentListQuery, rawQuery);
  const filter = await deploymentFilter(ctx, query);
  const keyset = keysetWhere('createdAt', 'date', 'desc', query.cursor);
  const rows = await ctx.em.find(SoftwareDeployment, { $and: [filter, keyset.where] } as FilterQuery<SoftwareDeployment>, { orderBy: keyset.orderBy, limit: query.limit + 1, disableIdentityMap: true });
  const page = finishCursorPage(rows, query.limit, (d) => d.createdAt.toISOString());
  return { data: await deploymentViews(ctx, page.items), nextCursor: page.nextCursor };
}

export async function countSoftwareDeployments(ctx: RequestContext, rawQuery: z.input<typeof DeploymentFilters>): Promise<number> {
  return ctx.em.count(SoftwareDeployment, await deploymentFilter(ctx, parseInput(DeploymentFilters, rawQuery)));
}

export async function getSoftwareDeployment(ctx: RequestContext, id: string): Promise<SoftwareDeploymentView> {
  return (await deploymentViews(ctx, [await requireDeployment(ctx, id, 'software:read')]))[0]!;
}

const resultFilters = { status: SoftwareDeploymentResultStatusSchema.optional().describe('only devices in this state') };
const ResultFilters = z.strictObject(resultFilters);
export const SoftwareDeploymentResultListQuery = z.strictObject({ ...resultFilters, ...cursorListFields });
export type SoftwareDeploymentResultListInput = z.input<typeof SoftwareDeploymentResultListQuery>;
export const SoftwareDeploymentResultPageSchema = cursorPageSchema(SoftwareDeploymentResultViewSchema, 'SoftwareDeploymentResultPage', 'a deployment’s devices, by hostname');
type ResultPage = z.output<typeof SoftwareDeploymentResultPageSchema>;

async function resultFilter(ctx: RequestContext, id: string, query: z.output<typeof ResultFilters>): Promise<FilterQuery<SoftwareDeploymentResult>> {
  const deployment = await requireDeployment(ctx, id, 'software:read');
  const where: FilterQuery<SoftwareDeploymentResult>[] = [{ deploymentId: deployment.id }];
  if (query.status) where.push({ status: query.status });
  const sites = siteLimitedDevicesSql(ctx, 'device_id');
  if (sites) where.push({ [raw(sites.sql, sites.params)]: true } as FilterQuery<SoftwareDeploymentResult>);
  return { $and: where } as FilterQuery<SoftwareDeploymentResult>;
}

/** The deployment's devices and where each stands, by hostname (users limited to some sites: their devices). */
export async function listSoftwareDeploymentResults(ctx: RequestContext, id: string, rawQuery: SoftwareDeploymentResultListInput): Promise<ResultPage> {
  const query = parseInput(SoftwareDeploymentResultListQuery, rawQuery);
  const filter = await resultFilter(ctx, id, query);
  const keyset = keysetWhere('hostname', 'string', 'asc', query.cursor);
  const rows = await ctx.em.find(SoftwareDeploymentResult, { $and: [filter, keyset.where] } as FilterQuery<SoftwareDeploymentResult>, { orderBy: keyset.orderBy, limit: query.limit + 1, disableIdentityMap: true });
  const page = finishCursorPage(rows, query.limit, (r) => r.hostname);
  return { data: page.items.map(resultView), nextCursor: page.nextCursor };
}

export async function countSoftwareDeploymentResults(ctx: RequestContext, id: string, rawQuery: z.input<typeof ResultFilters>): Promise<number> {
  return ctx.em.count(SoftwareDeploymentResult, await resultFilter(ctx, id, parseInput(ResultFilters, rawQuery)));
}
