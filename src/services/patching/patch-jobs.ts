import { LockMode, raw, type FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import type { Device } from '../../../entities/device.js';
import type { DeviceCommand } from '../../../entities/device-command.js';
import { PatchJob, PatchJobDevice } from '../../../entities/patch-job.js';
import { PatchPolicy } from '../../../entities/patch.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, loadOwned, tenantWhere, visibleSiteIds } from '../../auth/policy.js';
import { uuidArray } from '../../db/arrays.js';
import { withTransaction } from '../../db/transaction.js';
import { notFound } from '../../errors.js';
import { emitMany } from '../../events/outbox.js';
import { cursorListFields, cursorPageSchema, finishCursorPage, keysetWhere } from '../../pagination.js';
import { enumValues, parseInput, timestamp, uuid } from '../../validation.js';
import { findDevices, queueCommand, siteLimitedDevicesSql, type CommandTypeHooks } from '../devices/api.js';
import { patchingDeferredDeviceIds } from '../maintenance/api.js';
import { previousStart } from '../shared/schedule.js';
import { policyTarget } from './auto-approval.js';

/*
 * Patch install jobs: an enabled patch policy sends its targeted devices the approved patches they
 * report missing, one `install_patches` command per device. Immediate policies start a job when they
 * are saved, when a patch of their organization is approved and when a targeted device reports its
 * patches; cron policies at each instant of their schedule (the due-work tick). A policy has at most
 * one unfinished job: a trigger meanwhile marks it to run the policy again once it ends (immediate
 * policies; a cron instant that finds one unfinished is skipped). A device under a maintenance window
 * that defers patching waits (`deferred`) until the occurrence ends, then gets its command.
 */

export const INSTALL_PATCHES = 'install_patches';

export const JOB_STATUSES = ['scheduled', 'running', 'completed', 'partial', 'failed', 'cancelled'] as const;
export const JOB_DEVICE_STATUSES = ['pending', 'deferred', 'sent', 'completed', 'failed'] as const;
type JobStatus = (typeof JOB_STATUSES)[number];
type JobDeviceStatus = (typeof JOB_DEVICE_STATUSES)[number];
const UNFINISHED: JobStatus[] = ['scheduled', 'running'];
const OPEN: JobDeviceStatus[] = ['pending', 'deferred', 'sent'];
/** a cron instant fires when a tick sees it at most this long after */
const FIRE_WINDOW_MS = 60_000;
/** job devices the tick moves on per run (the rest on the next) */
const TICK_BATCH = 200;

export const PatchJobStatusSchema = z
  .enum(JOB_STATUSES)
  .meta({ title: 'PatchJobStatus', description: 'Where a patch install job stands' })
  .register(enumValues, {
    scheduled: 'Made; no agent has taken its command yet (or every device waits for a maintenance window).',
    running: 'An agent has taken its command; devices still to answer.',
    completed: 'Every device installed its patches.',
    partial: 'Some devices installed their patches, some failed.',
    failed: 'Every device failed.',
    cancelled: 'Stopped before it finished.',
  });
export const PatchJobDeviceStatusSchema = z
  .enum(JOB_DEVICE_STATUSES)
  .meta({ title: 'PatchJobDeviceStatus', description: 'Where a device of a patch install job stands' })
  .register(enumValues, {
    pending: 'Its command is queued, not yet taken by the agent.',
    deferred: 'A maintenance window defers its patching: its command goes out when the occurrence ends.',
    sent: 'The agent has taken its command.',
    completed: 'The agent installed every patch (some may wait for a restart).',
    failed: 'A patch failed, or the command did (failed, timed out, cancelled, or the device was decommissioned or moved).',
  });

export const PatchJobViewSchema = z
  .object({
    id: uuid().describe('the job'),
    orgId: uuid().describe('the organization of its policy'),
    policyId: uuid().nullable().describe('the patch policy that made it; null once that policy is deleted'),
    status: PatchJobStatusSchema,
    rebootBehavior: z.string().describe('the policy’s reboot behavior when the job was made (never, if_required, always)'),
    devices: z
      .array(
        z
          .object({
            deviceId: uuid().describe('the device'),
            status: PatchJobDeviceStatusSchema,
            patchIds: z.array(uuid()).describe('the patches it was sent to install'),
            commandId: uuid().nullable().describe('its install_patches command; null while deferred'),
          })
          .meta({ title: 'PatchJobDevice', description: 'A device of a patch install job' }),
      )
      .describe('its devices the caller sees'),
    createdAt: timestamp().describe('when it was made'),
    updatedAt: timestamp().describe('when it last changed'),
    completedAt: timestamp().nullable().describe('when it ended; null until then'),
  })
  .meta({ title: 'PatchJob', description: 'A run of a patch policy: the approved patches it sent its devices to install, and how each device stands' });
export type PatchJobView = z.output<typeof PatchJobViewSchema>;

/** What an install command names of each patch (also a rollback's payload). */
export interface InstallItem {
  patchId: string;
  source: string;
  externalId: string;
  packageName: string | null;
  version: string | null;
}

// ── the agents' part ────────────────────────────────────────────────────────────────────────────

const INSTALL_RESULTS = ['installed', 'failed', 'pending_reboot'] as const;
const InstallItemSchema = z.object({ patchId: uuid(), status: z.enum(INSTALL_RESULTS) });
// Items are read one by one: one malformed item must not throw away the outcomes the others report.
const InstallResultSchema = z.object({ patches: z.array(z.unknown()).max(20_000).default([]).describe('each patch’s outcome') });

/** Sets the device's status of these patches (of its organization), as its agent reported them. */
export async function setDeviceStatuses(tx: RequestContext, deviceId: string, orgId: string, statuses: { patchId: string; status: string }[]): Promise<void> {
  if (statuses.length === 0) return;
  await tx.em.execute(
    `insert into patch_device_status (id, patch_id, device_id, status, reported_at)
      select gen_random_uuid(), p.id, ?, t.status, ? from jsonb_to_recordset(?::jsonb) as t(patch_id uuid, status text) join patch p on p.id = t.patch_id and p.org_id = ?
    on conflict (device_id, patch_id) do update set status = excluded.status, reported_at = excluded.reported_at`,
    [deviceId, tx.runtime.clock.now(), JSON.stringify(statuses.map((s) => ({ patch_id: s.patchId, status: s.status }))), orgId],
  );
}

/** The job, locked: answers, cancels and the tick change its devices from many transactions at once. */
const lockJob = (tx: RequestContext, jobId: string) => tx.em.findOneOrFail(PatchJob, { id: jobId }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });

/** The job device of an install command, with its job locked (answers arrive from many devices at once). */
async function jobDeviceOf(tx: RequestContext, command: DeviceCommand): Promise<{ job: PatchJob; row: PatchJobDevice } | null> {
  const found = await tx.em.findOne(PatchJobDevice, { commandId: command.id }, { fields: ['jobId'], disableIdentityMap: true });
  if (!found) return null;
  const job = await lockJob(tx, found.jobId);
  const row = await tx.em.findOneOrFail(PatchJobDevice, { id: found.id }, { refresh: true });
  return { job, row };
}

/** A job device whose install is over: failed or completed, and its job ends once every device has. */
async function finishDevice(tx: RequestContext, job: PatchJob, row: PatchJobDevice, status: 'completed' | 'failed', rerun: { except?: string } = {}): Promise<void> {
  if (!OPEN.includes(row.status as JobDeviceStatus)) return;
  row.status = status;
  await tx.em.flush();
  await settle(tx, job, rerun);
}

/** The `install_patches` command type (registered by the patching manifest): queued only by install jobs. */
export const installPatchesCommand: CommandTypeHooks = {
  serviceOnly: 'install_patches commands are queued by patch policies’ install jobs',

  async claimed(tx, commandIds) {
    await tx.em.execute(
      `with taken as (update patch_job_device set status = 'sent', updated_at = ? where command_id = any(?::uuid[]) and status = 'pending' returning job_id)
       update patch_job set status = 'running', updated_at = ? where id in (select job_id from taken) and status = 'scheduled'`,
      [tx.runtime.clock.now(), uuidArray(commandIds), tx.runtime.clock.now()],
    );
  },

  // The patches the agent reports are those the command named (the payload is the service's own); each
  // sets the device's status and publishes patch.installed or patch.failed, also after the job gave up on it.
  async answered(tx, command, input) {
    const result = parseInput(InstallResultSchema, input.result ?? {});
    const payload = command.payload as { jobId: string; patches: InstallItem[] };
    const named = new Set(payload.patches.map((p) => p.patchId));
    const items = result.patches.flatMap((item) => InstallItemSchema.safeParse(item).data ?? []);
    const reported = [...new Map(items.filter((p) => named.has(p.patchId)).map((p) => [p.patchId, p])).values()];
    await setDeviceStatuses(tx, command.deviceId, command.orgId, reported);
    const data = (p: (typeof reported)[number]) => ({ orgId: command.orgId, data: { patchId: p.patchId, deviceId: command.deviceId, jobId: payload.jobId } });
    await emitMany(tx, 'patch.installed', reported.filter((p) => p.status !== 'failed').map(data));
    await emitMany(tx, 'patch.failed', reported.filter((p) => p.status === 'failed').map(data));
    const found = await jobDeviceOf(tx, command);
    if (found) await finishDevice(tx, found.job, found.row, input.status === 'completed' && items.length === result.patches.length && !reported.some((p) => p.status === 'failed') ? 'completed' : 'failed');
    return false;
  },

  // Cancelled by hand, or by the devices domain when the device is decommissioned or moved.
  async cancelled(tx, command) {
    const found = await jobDeviceOf(tx, command);
    // The device is on its way out (its status changes after this): a run of the policy now leaves it out.
    if (found) await finishDevice(tx, found.job, found.row, 'failed', { except: command.deviceId });
  },
};

// ── starting jobs ───────────────────────────────────────────────────────────────────────────────

/**
 * The approved patches each of `deviceIds` reports missing (one statement), among `patchIds` when
 * given; `idle`: only devices with no install under way in any job.
 */
async function installWork(tx: RequestContext, orgId: string, deviceIds: string[], options: { patchIds?: string[]; idle?: boolean } = {}): Promise<Map<string, InstallItem[]>> {
  const work = new Map<string, InstallItem[]>();
  if (deviceIds.length === 0) return work;
  const patchIds = options.patchIds ? uuidArray(options.patchIds) : null;
  const rows = (await tx.em.execute(
    `select s.device_id, p.id, p.source, p.external_id, p.package_name, p.version
       from patch_device_status s join patch p on p.id = s.patch_id
      where p.org_id = ? and p.approval_status = 'approved' and s.status = 'missing' and s.device_id = any(?::uuid[])
        and (?::uuid[] is null or p.id = any(?::uuid[]))
        and (not ?::boolean or not exists (select 1 from patch_job_device d where d.device_id = s.device_id and d.status in ('pending', 'deferred', 'sent')))
      order by s.device_id, p.id`,
    [orgId, uuidArray(deviceIds), patchIds, patchIds, options.idle ?? false],
  )) as { device_id: string; id: string; source: string; external_id: string; package_name: string | null; version: string | null }[];
  for (const row of rows) {
    const items = work.get(row.device_id) ?? [];
    items.push({ patchId: row.id, source: row.source, externalId: row.external_id, packageName: row.package_name, version: row.version });
    work.set(row.device_id, items);
  }
  return work;
}

/**
 * Sends the job's devices their commands: those a maintenance window defers wait (`deferred`); each
 * other gets the patches of its row still approved and missing (none left: completed; its device
 * decommissioned meanwhile: failed). Ends the job when no device is left open.
 */
async function dispatch(tx: RequestContext, job: PatchJob, rows: PatchJobDevice[]): Promise<void> {
  const ids = rows.map((r) => r.deviceId);
  const deferred = await patchingDeferredDeviceIds(tx, ids);
  const sending = rows.filter((r) => !deferred.has(r.deviceId));
  for (const row of rows) if (deferred.has(row.deviceId)) row.status = 'deferred';
  const work = await installWork(tx, job.orgId, sending.map((r) => r.deviceId), { patchIds: [...new Set(sending.flatMap((r) => r.patchIds))] });
  const devices = new Map((await findDevices(tx, { ids: sending.map((r) => r.deviceId) }, { scope: 'all' })).map((d) => [d.id, d]));
  for (const row of sending) {
    const device = devices.get(row.deviceId);
    const items = (work.get(row.deviceId) ?? []).filter((item) => row.patchIds.includes(item.patchId));
    if (!device || device.status === 'decommissioned' || device.orgId !== job.orgId) row.status = 'failed';
    else if (items.length === 0) row.status = 'completed';
    else {
      const payload = { jobId: job.id, rebootBehavior: job.rebootBehavior, patches: items };
      const command = await queueCommand(tx, device, { type: INSTALL_PATCHES, payload: payload as unknown as Record<string, unknown> }, null);
      Object.assign(row, { status: 'pending', patchIds: items.map((i) => i.patchId), commandId: command.id, timeoutAt: command.timeoutAt });
    }
  }
  await tx.em.flush();
  await settle(tx, job);
}

/** Ends the job once no device is open: completed (all completed), failed (all failed) or partial; then runs its policy again if a trigger came meanwhile. */
async function settle(tx: RequestContext, job: PatchJob, rerun: { except?: string } = {}): Promise<void> {
  const rows = await tx.em.find(PatchJobDevice, { jobId: job.id }, { refresh: true });
  if (!UNFINISHED.includes(job.status as JobStatus) || rows.some((r) => OPEN.includes(r.status as JobDeviceStatus))) return;
  const now = tx.runtime.clock.now();
  job.status = rows.every((r) => r.status === 'completed') ? 'completed' : rows.every((r) => r.status === 'failed') ? 'failed' : 'partial';
  job.completedAt = now;
  job.updatedAt = now;
  await tx.em.flush();
  if (job.rerun && job.policyId) {
    const policy = await tx.em.findOne(PatchPolicy, { id: job.policyId });
    if (policy && isImmediate(policy)) await startJob(tx, policy, { busy: 'rerun', ...rerun });
  }
}

/**
 * Starts a job of the policy for its targeted devices (only `deviceIds` when given) that report
 * approved patches missing and have no install under way. With a job of the policy unfinished, none
 * starts: `busy: 'rerun'` marks that job to run the policy again once it ends.
 */
async function startJob(tx: RequestContext, policy: PatchPolicy, options: { deviceIds?: string[]; except?: string; busy: 'rerun' | 'skip' }): Promise<void> {
  // One job at a time per policy: concurrent triggers queue here (the unique index is the backstop).
  await tx.em.execute('select pg_advisory_xact_lock(hashtext(?))', [`patch-job:${policy.id}`]);
  const open = await tx.em.findOne(PatchJob, { policyId: policy.id, status: { $in: UNFINISHED } }, { refresh: true });
  if (open) {
    if (options.busy === 'rerun' && !open.rerun) {
      open.rerun = true;
      await tx.em.flush();
    }
    return;
  }
  const targeted = await findDevices(tx, { target: policyTarget(policy), ids: options.deviceIds, active: true }, { scope: 'all', fields: ['id'], orderBy: 'id' });
  const work = await installWork(tx, policy.orgId, targeted.map((d) => d.id).filter((id) => id !== options.except), { idle: true });
  if (work.size === 0) return;
  const now = tx.runtime.clock.now();
  const job = tx.em.create(PatchJob, { orgId: policy.orgId, policyId: policy.id, rebootBehavior: policy.rebootBehavior, createdAt: now, updatedAt: now });
  const rows = [...work].map(([deviceId, items]) => tx.em.create(PatchJobDevice, { jobId: job.id, deviceId, status: 'pending', patchIds: items.map((i) => i.patchId), updatedAt: now }));
  await tx.em.flush();
  await dispatch(tx, job, rows);
}

const isImmediate = (policy: PatchPolicy) => policy.enabled && policy.schedule.type === 'immediate';

/** An immediate policy saved (created or changed): a job for what it has to install now. */
export async function installForPolicy(tx: RequestContext, policy: PatchPolicy): Promise<void> {
  if (isImmediate(policy)) await startJob(tx, policy, { busy: 'rerun' });
}

async function immediatePolicies(tx: RequestContext, orgId: string): Promise<PatchPolicy[]> {
  const policies = await tx.em.find(PatchPolicy, { orgId, enabled: true }, { orderBy: { createdAt: 'asc', id: 'asc' } });
  return policies.filter(isImmediate);
}

/** Patches of the organization approved: its immediate policies install them. */
export async function installForOrg(tx: RequestContext, orgId: string): Promise<void> {
  for (const policy of await immediatePolicies(tx, orgId)) await startJob(tx, policy, { busy: 'rerun' });
}

/** A device reported its patches: the immediate policies that target it install its approved missing ones. */
export async function installForDevice(tx: RequestContext, device: Pick<Device, 'id'>, targeting: readonly PatchPolicy[]): Promise<void> {
  for (const policy of targeting.filter(isImmediate)) await startJob(tx, policy, { deviceIds: [device.id], busy: 'rerun' });
}

// ── the due work ────────────────────────────────────────────────────────────────────────────────

/** Cron policies whose latest instant has come (within the fire window) and has not fired: one job each (a policy whose job is unfinished skips it). */
async function fireSchedules(ctx: RequestContext, now: Date): Promise<void> {
  const rows = (await ctx.em.execute(
    `select p.id, p.schedule, p.created_at, f.fired_for from patch_policy p left join patch_schedule_fire f on f.policy_id = p.id
      where p.enabled and p.schedule->>'type' = 'cron' order by p.id`,
  )) as { id: string; schedule: { cron: string; timezone: string }; created_at: Date; fired_for: Date | null }[];
  for (const row of rows) {
    const latest = previousStart({ cron: row.schedule.cron, timezone: row.schedule.timezone }, now);
    // A fired instant ahead of the clock (moved back) no longer counts; a policy does not fire for instants before it existed.
    const since = row.fired_for && row.fired_for <= now ? row.fired_for : row.created_at;
    if (!latest || now.getTime() - latest.getTime() >= FIRE_WINDOW_MS || latest <= since) continue;
    await isolated(ctx, { policyId: row.id }, () => withTransaction(ctx, async (tx) => {
      // Claims the instant: another tick that overlaps this one finds it taken.
      const claimed = await tx.em.execute(
        `insert into patch_schedule_fire (id, policy_id, fired_for) values (gen_random_uuid(), ?, ?)
          on conflict (policy_id) do update set fired_for = excluded.fired_for where patch_schedule_fire.fired_for is distinct from excluded.fired_for
          returning policy_id`,
        [row.id, latest],
      );
      const policy = claimed.length > 0 ? await tx.em.findOne(PatchPolicy, { id: row.id, enabled: true }) : null;
      if (policy) await startJob(tx, policy, { busy: 'skip' });
    }));
  }
}

/** Open job devices of unfinished jobs, by job: a batch after `after` (job id, row id), in that order. */
async function openRowsByJob(ctx: RequestContext, where: string, params: unknown[], after: [string, string] | null = null) {
  const rows = (await ctx.em.execute(
    `select id, job_id, device_id from patch_job_device where ${where} ${after ? 'and (job_id, id) > (?::uuid, ?::uuid)' : ''} order by job_id, id limit ${TICK_BATCH}`,
    [...params, ...(after ?? [])],
  )) as { id: string; job_id: string; device_id: string }[];
  const byJob = new Map<string, { id: string; deviceId: string }[]>();
  for (const row of rows) byJob.set(row.job_id, [...(byJob.get(row.job_id) ?? []), { id: row.id, deviceId: row.device_id }]);
  const last = rows.at(-1);
  return { byJob, next: rows.length === TICK_BATCH && last ? ([last.job_id, last.id] as [string, string]) : null };
}

/** Runs one job's (or policy's) part of the tick; a failure is logged and the others still run. */
async function isolated(ctx: RequestContext, what: Record<string, string>, work: () => Promise<void>): Promise<void> {
  try {
    await work();
  } catch (error) {
    ctx.runtime.log.error({ ...what, err: (error as Error).message }, 'patch job due work failed');
  }
}

/** At most this many batches of deferred devices are looked at per tick (the rest on the next). */
const DEFERRED_BATCHES = 50;

/** Deferred devices whose maintenance is over get their commands; devices still in maintenance do not hold back those behind them. */
async function sendDeferred(ctx: RequestContext): Promise<void> {
  let after: [string, string] | null = null;
  for (let batch = 0; batch < DEFERRED_BATCHES; batch++) {
    const { byJob, next } = await openRowsByJob(ctx, `status = 'deferred'`, [], after);
    const stillDeferred = await patchingDeferredDeviceIds(ctx, [...byJob.values()].flat().map((r) => r.deviceId));
    for (const [jobId, rows] of byJob) {
      const ready = rows.filter((r) => !stillDeferred.has(r.deviceId)).map((r) => r.id);
      if (ready.length === 0) continue;
      await isolated(ctx, { jobId }, () =>
        withTransaction(ctx, async (tx) => {
          const job = await lockJob(tx, jobId);
          const still = await tx.em.find(PatchJobDevice, { id: { $in: ready }, status: 'deferred' }, { refresh: true });
          if (still.length > 0) await dispatch(tx, job, still);
        }),
      );
    }
    if (!next) return;
    after = next;
  }
}

/** Devices whose command timed out unanswered (the devices domain times the command out, telling no hook) fail. */
async function failTimedOut(ctx: RequestContext, now: Date): Promise<void> {
  const { byJob } = await openRowsByJob(ctx, `status in ('pending', 'sent') and timeout_at <= ?`, [now]);
  for (const [jobId, rows] of byJob) {
    await isolated(ctx, { jobId }, () =>
      withTransaction(ctx, async (tx) => {
        const job = await lockJob(tx, jobId);
        const late = await tx.em.find(PatchJobDevice, { id: { $in: rows.map((r) => r.id) }, status: { $in: ['pending', 'sent'] }, timeoutAt: { $lte: now } }, { refresh: true });
        for (const row of late) row.status = 'failed';
        await tx.em.flush();
        await settle(tx, job);
      }),
    );
  }
}

/** The install jobs' due work: cron instants, deferred devices whose window is over, commands timed out. */
export async function patchJobsTick(ctx: RequestContext, now: Date): Promise<void> {
  await fireSchedules(ctx, now);
  await sendDeferred(ctx);
  await failTimedOut(ctx, now);
}

// ── reads ───────────────────────────────────────────────────────────────────────────────────────

const filters = {
  orgId: uuid().optional().describe('only jobs of this organization'),
  policyId: uuid().optional().describe('only jobs of this patch policy'),
  deviceId: uuid().optional().describe('only jobs that include this device'),
  status: PatchJobStatusSchema.optional().describe('only jobs in this state'),
};
const JobFilters = z.strictObject(filters);
export const PatchJobListQuery = z.strictObject({ ...filters, ...cursorListFields });
export type PatchJobListInput = z.input<typeof PatchJobListQuery>;
export const PatchJobPageSchema = cursorPageSchema(PatchJobViewSchema, 'PatchJobPage', 'patch install jobs, newest first');
export type PatchJobPage = z.output<typeof PatchJobPageSchema>;

async function jobFilter(ctx: RequestContext, query: z.output<typeof JobFilters>): Promise<FilterQuery<PatchJob>> {
  await authorize(ctx, 'patches:read');
  const where: FilterQuery<PatchJob>[] = [(await tenantWhere<PatchJob>(ctx, { org: 'orgId', requestedOrgId: query.orgId })) ?? {}];
  if (query.policyId) where.push({ policyId: (await loadOwned(ctx, PatchPolicy, query.policyId, 'patches:read', { resource: 'Patch policy' })).id });
  if (query.status) where.push({ status: query.status });
  // Users limited to some sites see the jobs that reached a device of theirs, no others.
  const sites = siteLimitedDevicesSql(ctx, 'jd.device_id');
  if (sites) where.push({ [raw((alias: string) => `exists (select 1 from patch_job_device jd where jd.job_id = ${alias}.id and ${sites.sql})`, sites.params)]: true } as FilterQuery<PatchJob>);
  if (query.deviceId) {
    const [device] = await findDevices(ctx, { ids: [query.deviceId] }, { fields: ['orgId'] });
    if (!device) throw notFound('Device');
    where.push({ orgId: device.orgId, devices: { deviceId: device.id } });
  }
  return { $and: where } as FilterQuery<PatchJob>;
}

/** The jobs' views, their devices in one statement for the page (those of the caller's sites for users limited to some). */
async function jobViews(ctx: RequestContext, jobs: PatchJob[]): Promise<PatchJobView[]> {
  if (jobs.length === 0) return [];
  const rows = await ctx.em.find(PatchJobDevice, { jobId: { $in: jobs.map((j) => j.id) } }, { orderBy: { deviceId: 'asc' }, disableIdentityMap: true });
  const seen = visibleSiteIds(ctx) === null ? null : new Set((await findDevices(ctx, { ids: [...new Set(rows.map((r) => r.deviceId))] }, { fields: ['id'] })).map((d) => d.id));
  return jobs.map((job) => ({
    id: job.id,
    orgId: job.orgId,
    policyId: job.policyId,
    status: job.status as JobStatus,
    rebootBehavior: job.rebootBehavior,
    devices: rows
      .filter((r) => r.jobId === job.id && (!seen || seen.has(r.deviceId)))
      .map((r) => ({ deviceId: r.deviceId, status: r.status as JobDeviceStatus, patchIds: r.patchIds, commandId: r.commandId })),
    createdAt: job.createdAt.toISOString(),
    updatedAt: job.updatedAt.toISOString(),
    completedAt: job.completedAt?.toISOString() ?? null,
  }));
}

/** The install jobs of the organizations the caller sees, newest first, in keyset pages. */
export async function listPatchJobs(ctx: RequestContext, raw: PatchJobListInput): Promise<PatchJobPage> {
  const query = parseInput(PatchJobListQuery, raw);
  const filter = await jobFilter(ctx, query);
  const keyset = keysetWhere('createdAt', 'date', 'desc', query.cursor);
  const rows = await ctx.em.find(PatchJob, { $and: [filter, keyset.where] } as FilterQuery<PatchJob>, { orderBy: keyset.orderBy, limit: query.limit + 1, disableIdentityMap: true });
  const page = finishCursorPage(rows, query.limit, (j) => j.createdAt.toISOString());
  return { data: await jobViews(ctx, page.items), nextCursor: page.nextCursor };
}

/** How many jobs the list's filters select (its connection's `totalCount`). */
export async function countPatchJobs(ctx: RequestContext, raw: z.input<typeof JobFilters>): Promise<number> {
  return ctx.em.count(PatchJob, await jobFilter(ctx, parseInput(JobFilters, raw)));
}
