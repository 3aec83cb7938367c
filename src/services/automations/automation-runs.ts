import { LockMode, type FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import {
  AUTOMATION_RESULT_STATUSES,
  AUTOMATION_RUN_SOURCES,
  AUTOMATION_RUN_STATUSES,
  Automation,
  AutomationRun,
  AutomationRunResult,
  type AutomationRunSource,
  type AutomationRunStatus,
} from '../../../entities/automation.js';
import { RequestContext } from '../../auth/context.js';
import { isUuid, loadOwned, requirePrincipal, skipAuthorization, visibleSiteIds } from '../../auth/policy.js';
import { inSavepoint, withTransaction } from '../../db/transaction.js';
import { AppError, conflict, unauthenticated } from '../../errors.js';
import { emit } from '../../events/outbox.js';
import type { DomainEvent } from '../../events/types.js';
import { CursorQuery, PageQuery, encodeCursor, pageInfoOf, keysetWhere, pageOptions, pageSchema, toPage, type Connection, type Page } from '../../pagination.js';
import { safeEqual, sha256Hex } from '../../secrets.js';
import { enumValues, parseInput, timestamp, uuid } from '../../validation.js';
import { queueChannelMessages } from '../alerts/api.js';
import { recordAudit } from '../audit/api.js';
import { checkTargets, createCommand, findDevices } from '../devices/api.js';
import { executeScript, type ExecuteResult, type ScriptExecutionEventData } from '../scripts/api.js';
import { previousStart } from '../shared/schedule.js';
import { accessibleAutomation, automationTarget, reschedule, triggerSchedule, type AutomationStep, type AutomationTrigger } from './automations.js';
import type { AutomationRunEventData } from './events.js';

/*
 * Runs of automations. A run resolves its target's devices when it starts, then runs its steps in
 * order, each on every device still in the run: `command` queues a device command, `notify` tells a
 * channel, `wait` parks the run until an Agenda job (or the tick, which reads the injectable clock)
 * resumes it, and `run_script` starts script executions and goes on when their
 * script.completed/script.failed events have come in. Every advance happens under the run's row lock
 * (`advanceRun`), so a job, the tick and an event subscriber never advance one run twice.
 */

export const ADVANCE_JOB = 'automations.advance';
export const AdvanceJobSchema = z.object({ runId: uuid() });

/** A schedule fires at its cron's minute: an occurrence the tick finds older than this (the service was down) is skipped, not caught up. */
const FIRE_WINDOW_MS = 60_000;
/** A run not advanced this long after its start lost its job: the tick advances it. */
const STALLED_AFTER_MS = 30_000;
/** Due schedules and resumable runs handled per tick; the rest wait for the next one. */
const TICK_BATCH = 200;

// ── views ───────────────────────────────────────────────────────────────────────────────────────

const RunStatusSchema = z
  .enum(AUTOMATION_RUN_STATUSES)
  .meta({ title: 'AutomationRunStatus', description: 'running; then completed (every step ok on every device), failed (every result failed) or partial' })
  .register(enumValues, {
    running: 'Its steps are still being carried out.',
    completed: 'Over: every step succeeded on every device.',
    failed: 'Over: every step result failed.',
    partial: 'Over: some step results failed, others succeeded.',
  });
const RunSourceSchema = z
  .enum(AUTOMATION_RUN_SOURCES)
  .meta({ title: 'AutomationRunSource', description: 'what started the run: its schedule, an event, its webhook URL, or a caller (trigger/run)' })
  .register(enumValues, {
    schedule: 'Its schedule trigger came due.',
    event: 'A domain event matching its event trigger.',
    webhook: 'A POST to its webhookUrl.',
    manual: 'A caller asked for a run now (triggerAutomation, or REST trigger/run).',
  });
const ResultStatusSchema = z
  .enum(AUTOMATION_RESULT_STATUSES)
  .meta({ title: 'AutomationStepResultStatus', description: 'one device’s outcome of one step' })
  .register(enumValues, {
    running: 'The device’s script execution has not finished yet (run_script steps).',
    completed: 'The step succeeded on the device (for command steps: the command was queued).',
    failed: 'The step failed on the device; error says why.',
  });

export const StepResultViewSchema = z
  .object({
    deviceId: uuid().describe('the device the step ran on'),
    stepIndex: z.number().int().describe('the step, from 0'),
    status: ResultStatusSchema,
    executionId: uuid().optional().describe('run_script steps: the script execution'),
    commandId: uuid().optional().describe('command steps: the queued device command'),
    error: z.string().optional().describe('why it failed'),
  })
  .meta({ title: 'AutomationStepResult', description: 'What one step did on one device of a run' });

export const AutomationRunViewSchema = z
  .object({
    id: uuid().describe('the run'),
    automationId: uuid().describe('the automation it runs'),
    orgId: uuid().describe('the automation’s organization'),
    source: RunSourceSchema,
    status: RunStatusSchema,
    startedAt: timestamp().describe('when it started'),
    completedAt: timestamp().nullable().describe('when its last step ended; null while running'),
    deviceIds: z.array(uuid()).describe('the target’s devices when the run started'),
    results: z.array(StepResultViewSchema).describe('per device and step, by step then device'),
  })
  .meta({ title: 'AutomationRun', description: 'One firing of an automation' });
export type AutomationRunView = z.output<typeof AutomationRunViewSchema>;
export const AutomationRunPageSchema = pageSchema(AutomationRunViewSchema, 'AutomationRunPage');

function resultView(row: AutomationRunResult): z.output<typeof StepResultViewSchema> {
  return {
    deviceId: row.deviceId,
    stepIndex: row.stepIndex,
    status: row.status,
    ...(row.executionId ? { executionId: row.executionId } : {}),
    ...(row.commandId ? { commandId: row.commandId } : {}),
    ...(row.error ? { error: row.error } : {}),
  };
}

/**
 * Of these devices, those a caller limited to some sites may see (their sites' devices, as `em` reads
 * them now); null when the caller is not limited (or is a webhook token's anonymous holder): all of them.
 */
async function devicesInSight(ctx: RequestContext, em: RequestContext['em'], deviceIds: string[]): Promise<Set<string> | null> {
  if (!ctx.principal || !visibleSiteIds(ctx)) return null;
  if (deviceIds.length === 0) return new Set();
  const rows = await findDevices(ctx.withEm(em), { ids: deviceIds }, { fields: ['id'] });
  return new Set(rows.map((device) => device.id));
}

/** The runs' views with their results, read in one statement for all of them; site-limited callers see their sites' devices only. */
async function runViews(ctx: RequestContext, runs: AutomationRun[]): Promise<AutomationRunView[]> {
  if (runs.length === 0) return [];
  const results = await ctx.em.find(AutomationRunResult, { runId: { $in: runs.map((r) => r.id) } }, { orderBy: { stepIndex: 'asc', deviceId: 'asc' }, refresh: true });
  const inSight = await devicesInSight(ctx, ctx.em, [...new Set(runs.flatMap((run) => run.deviceIds))]);
  const shown = (deviceId: string) => !inSight || inSight.has(deviceId);
  return runs.map((run) => ({
    id: run.id,
    automationId: run.automationId,
    orgId: run.orgId,
    source: run.source,
    status: run.status,
    startedAt: run.startedAt.toISOString(),
    completedAt: run.completedAt?.toISOString() ?? null,
    deviceIds: run.deviceIds.filter(shown),
    results: results.filter((r) => r.runId === run.id && shown(r.deviceId)).map(resultView),
  }));
}

/** A run's event (`automation.*`) as a caller limited to some sites may see it: only their sites' devices counted and named. */
export async function runEventInSight(ctx: RequestContext, event: DomainEvent): Promise<DomainEvent> {
  const data = event.data as AutomationRunEventData;
  if (!visibleSiteIds(ctx, data.orgId)) return event;
  // A fresh EntityManager per event: the subscription lives long, its rows must not come from a cache.
  const em = ctx.em.fork();
  const run = await em.findOne(AutomationRun, { id: data.runId }, { fields: ['deviceIds'] });
  const inSight = (await devicesInSight(ctx, em, [...new Set([...(run?.deviceIds ?? []), ...(data.failedDeviceIds ?? [])])]))!;
  const narrowed: AutomationRunEventData = { ...data, deviceCount: (run?.deviceIds ?? []).filter((id) => inSight.has(id)).length };
  if (data.failedDeviceIds) narrowed.failedDeviceIds = data.failedDeviceIds.filter((id) => inSight.has(id));
  return { ...event, data: narrowed };
}

// ── reading runs ────────────────────────────────────────────────────────────────────────────────

export const RunListQuery = PageQuery.extend({ status: RunStatusSchema.optional() }).strict();
export type RunListInput = z.input<typeof RunListQuery>;

/** An automation's runs, newest first. */
export async function listRuns(ctx: RequestContext, automationId: string, rawQuery: RunListInput): Promise<Page<AutomationRunView>> {
  const query = parseInput(RunListQuery, rawQuery);
  const automation = await accessibleAutomation(ctx, automationId, 'automations:read');
  const where: FilterQuery<AutomationRun> = { automationId: automation.id, ...(query.status ? { status: query.status } : {}) };
  const [rows, total] = await ctx.em.findAndCount(AutomationRun, where, { orderBy: { startedAt: 'desc', id: 'desc' }, ...pageOptions(query) });
  return toPage(await runViews(ctx, rows), total, query);
}

export async function getRun(ctx: RequestContext, runId: string): Promise<AutomationRunView> {
  const run = await loadOwned(ctx, AutomationRun, runId, 'automations:read', { resource: 'Automation run' });
  return (await runViews(ctx, [run]))[0]!;
}

const MAX_RUN_PAGE = 100;
export const RunConnectionArgs = z.strictObject({
  first: z.number().int().min(1).max(MAX_RUN_PAGE).default(20).describe(`1 to ${MAX_RUN_PAGE}`),
  after: CursorQuery.shape.cursor.describe('Returns the runs after this cursor (the previous page\'s `pageInfo.endCursor`); from the newest when left out.'),
  status: RunStatusSchema.optional(),
});
export type RunConnectionInput = z.input<typeof RunConnectionArgs>;

/** An automation's runs, newest first, as a GraphQL connection (keyset on startedAt, id). */
export async function runsConnection(ctx: RequestContext, automationId: string, rawArgs: RunConnectionInput): Promise<Connection<AutomationRunView>> {
  const args = parseInput(RunConnectionArgs, rawArgs);
  const automation = await accessibleAutomation(ctx, automationId, 'automations:read');
  const base: FilterQuery<AutomationRun> = { automationId: automation.id, ...(args.status ? { status: args.status } : {}) };
  const seek = keysetWhere('startedAt', 'date', 'desc', args.after);
  const rows = await ctx.em.find(AutomationRun, { $and: [base, seek.where as FilterQuery<AutomationRun>] }, { orderBy: seek.orderBy, limit: args.first + 1 });
  const page = rows.slice(0, args.first);
  const views = await runViews(ctx, page);
  const edges = views.map((node, i) => ({ node, cursor: encodeCursor({ value: page[i]!.startedAt.toISOString(), id: page[i]!.id }) }));
  return { edges, pageInfo: pageInfoOf(edges, rows.length > args.first, args.after != null), totalCount: () => ctx.em.count(AutomationRun, base) };
}

// ── starting runs ───────────────────────────────────────────────────────────────────────────────

/** The target's devices now: never decommissioned ones, never another organization's. */
async function resolveDevices(tx: RequestContext, automation: Automation): Promise<string[]> {
  // The automation's own reach, not the caller's: whoever starts it (a runner, a webhook call) acts with what it was written to do.
  const sys = RequestContext.system(tx.runtime, 'automation target').withEm(tx.em);
  const rows = await findDevices(sys, { target: automationTarget(automation), active: true }, { fields: ['id'], orderBy: 'id' });
  return rows.map((d) => d.id);
}

function runEventData(automation: Pick<Automation, 'id' | 'orgId' | 'name'>, run: AutomationRun, failedDeviceIds?: string[]) {
  return {
    automationId: automation.id,
    runId: run.id,
    orgId: automation.orgId,
    name: automation.name,
    source: run.source,
    status: run.status,
    deviceCount: run.deviceIds.length,
    ...(failedDeviceIds ? { failedDeviceIds } : {}),
    startedAt: run.startedAt.toISOString(),
    completedAt: run.completedAt?.toISOString() ?? null,
  };
}

/** Starts a run in the caller's transaction; its first steps run in a job once it has committed. */
async function startRun(tx: RequestContext, automation: Automation, source: AutomationRunSource, eventId: string | null = null): Promise<AutomationRun> {
  const run = tx.em.create(AutomationRun, {
    automationId: automation.id,
    orgId: automation.orgId,
    source,
    eventId,
    plan: { steps: automation.steps, onFailure: automation.onFailure },
    deviceIds: await resolveDevices(tx, automation),
    startedAt: tx.runtime.clock.now(),
  });
  await tx.em.flush();
  await emit(tx, { type: 'automation.started', orgId: automation.orgId, data: runEventData(automation, run) });
  tx.afterCommit(() => tx.runtime.jobs.schedule(ADVANCE_JOB, { runId: run.id }));
  return run;
}

/** Starts the automation now for an authorized caller (`POST /automations/:id/run`, and `/trigger` with credentials); disabled ones too: only their own triggers stop. */
export async function runAutomation(ctx: RequestContext, id: string): Promise<AutomationRunView> {
  const automation = await accessibleAutomation(ctx, id, 'automations:run');
  requirePrincipal(ctx);
  await checkTargets(ctx, automationTarget(automation), { stored: true });
  const run = await withTransaction(ctx, async (tx) => {
    const started = await startRun(tx, automation, 'manual');
    await recordAudit(tx, { action: 'automation.run', resourceType: 'automation', resourceId: automation.id, orgId: automation.orgId, details: { name: automation.name, runId: started.id } });
    return started;
  });
  return (await runViews(ctx, [run]))[0]!;
}

export const TriggerQuery = z.strictObject({ token: z.string().max(200).optional().describe('webhook automations: the token of their webhookUrl, instead of credentials') });
export type TriggerInput = z.input<typeof TriggerQuery>;

/**
 * `POST /automations/:id/trigger`: with the webhook token of the automation's URL (no other
 * credentials needed), or as an authorized caller. A wrong or missing token is 401 and starts nothing.
 */
export async function triggerAutomation(ctx: RequestContext, id: string, rawQuery: TriggerInput): Promise<AutomationRunView> {
  const query = parseInput(TriggerQuery, rawQuery);
  if (query.token === undefined && ctx.principal) return runAutomation(ctx, id);
  skipAuthorization(ctx, 'automation webhook: its token is the credential');
  const automation = isUuid(id) ? await ctx.em.findOne(Automation, { id }) : null;
  const stored = automation?.webhookToken ? ctx.runtime.secrets.decrypt(automation.webhookToken) : null;
  // Hashes compared, so the comparison takes as long whatever the given token's length.
  if (!automation || !stored || !query.token || !safeEqual(sha256Hex(query.token), sha256Hex(stored))) {
    throw ctx.meta.authError && query.token === undefined ? ctx.meta.authError : unauthenticated('A valid automation token is required');
  }
  if (!automation.enabled) throw conflict('The automation is disabled');
  const run = await withTransaction(ctx, (tx) => startRun(tx, automation, 'webhook'));
  return (await runViews(ctx, [run]))[0]!;
}

/** Whether an event's data has every field of the filter, equal (plain values, compared as values). */
function matchesFilter(filter: Record<string, unknown> | undefined, data: Record<string, unknown>): boolean {
  return Object.entries(filter ?? {}).every(([key, value]) => Object.hasOwn(data, key) && data[key] === value);
}

/**
 * The outbox subscriber's work: each committed event starts the enabled event automations of its
 * organization that wait for its type and whose filter it matches, once per (automation, event)
 * however often the event is handed over (the dispatcher's row locks, and the run's unique event).
 */
export async function startEventRuns(tx: RequestContext, events: DomainEvent[]): Promise<void> {
  const orgIds = [...new Set(events.map((e) => e.orgId).filter((id): id is string => !!id))];
  if (orgIds.length === 0) return;
  const automations = await tx.em.find(Automation, { orgId: { $in: orgIds }, triggerType: 'event', enabled: true });
  if (automations.length === 0) return;
  for (const event of events) {
    for (const automation of automations) {
      const trigger = automation.trigger as AutomationTrigger;
      if (automation.orgId !== event.orgId || trigger.eventType !== event.type || !matchesFilter(trigger.filter, event.data as Record<string, unknown>)) continue;
      if ((await tx.em.count(AutomationRun, { automationId: automation.id, eventId: event.id })) > 0) continue;
      await startRun(tx, automation, 'event', event.id);
    }
  }
}

/**
 * The outbox subscriber's work for script.completed/script.failed: the run_script results of those
 * executions take their outcome, and their runs are advanced once that has committed. A repeated
 * event finds its result no longer running and changes nothing.
 */
export async function recordScriptOutcomes(tx: RequestContext, events: DomainEvent[]): Promise<void> {
  const runIds = new Set<string>();
  for (const event of events) {
    const data = event.data as ScriptExecutionEventData;
    const result = await tx.em.findOne(AutomationRunResult, { executionId: data.executionId, status: 'running' });
    if (!result) continue;
    result.status = event.type === 'script.completed' ? 'completed' : 'failed';
    if (result.status === 'failed') result.error = data.exitCode === null ? `script ${data.status}` : `script ${data.status} (exit code ${data.exitCode})`;
    runIds.add(result.runId);
  }
  await tx.em.flush();
  for (const runId of runIds) tx.afterCommit(() => tx.runtime.jobs.schedule(ADVANCE_JOB, { runId }));
}

// ── the schedule tick ───────────────────────────────────────────────────────────────────────────

/**
 * Fires the schedules that are due by the runtime's clock (one run at their cron's minute in their
 * time zone) and resumes runs whose wait is over. The due-work tick runs it on one instance at a time;
 * each automation is claimed under its row lock, so a tick that overlaps another fires nothing twice.
 */
export async function automationTick(sys: RequestContext, now: Date): Promise<void> {
  const due = await sys.em.find(Automation, dueSchedules(now), { fields: ['id'], orderBy: { nextRunAt: 'asc' }, limit: TICK_BATCH });
  for (const { id } of due) await fireSchedule(sys, id, now);
  const waiting = await sys.em.find(AutomationRun, { status: 'running', phase: 'waiting', resumeAt: { $lte: now } }, { fields: ['id'], limit: TICK_BATCH });
  for (const { id } of waiting) await advanceRun(sys, id);
  // Runs whose advance job was lost (queued after a commit, by an instance that died before queueing
  // it): started but never advanced, or with every execution of their step reported.
  const stalled = (await sys.em.execute(
    `select r.id from automation_run r where r.status = 'running' and (
       (r.phase = 'ready' and r.started_at <= ?)
       or (r.phase = 'executing' and not exists (select 1 from automation_run_result x where x.run_id = r.id and x.step_index = r.step_index and x.status = 'running')))
     limit ?`,
    [new Date(now.getTime() - STALLED_AFTER_MS), TICK_BATCH],
  )) as { id: string }[];
  for (const { id } of stalled) await advanceRun(sys, id);
}

/** Enabled schedules whose next occurrence has come, or whose schedule was computed at a time the clock has since been moved back before. */
function dueSchedules(now: Date): FilterQuery<Automation> {
  return { enabled: true, triggerType: 'schedule', $or: [{ nextRunAt: { $lte: now } }, { scheduledAt: { $gt: now } }] };
}

async function fireSchedule(sys: RequestContext, id: string, now: Date): Promise<void> {
  await withTransaction(sys, async (tx) => {
    const automation = await tx.em.findOne(Automation, { $and: [{ id }, dueSchedules(now)] }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
    if (!automation) return;
    reschedule(automation, now);
    await tx.em.flush();
    const latest = previousStart(triggerSchedule(automation.trigger as AutomationTrigger), now);
    if (latest && now.getTime() - latest.getTime() < FIRE_WINDOW_MS) await startRun(tx, automation, 'schedule');
  });
}

// ── the step engine ─────────────────────────────────────────────────────────────────────────────

/**
 * Where the notifications of `notify` steps and `onFailure: "notify"` go out. Channels are another
 * domain's; until it is wired in (`sendToChannel(ctx, channelId, message)` of
 * src/services/alert-channels.ts), each notification is recorded as an `automation.notify` audit
 * entry naming its channel and message.
 */
/** Tells a channel (of the run's organization: `queueChannelMessages` sends nowhere else) about the run; `cause` keeps a step's notice and its failure notice apart. */
async function notifyChannel(tx: RequestContext, run: AutomationRun, channelId: string | null, message: string, cause: 'step' | 'failure'): Promise<void> {
  await recordAudit(tx, { action: 'automation.notify', resourceType: 'automation', resourceId: run.automationId, orgId: run.orgId, details: { runId: run.id, channelId, message } });
  if (!channelId) return;
  const now = tx.runtime.clock.now().toISOString();
  await queueChannelMessages(tx, [
    {
      channelId,
      orgId: run.orgId,
      kind: 'automation',
      alertId: null,
      policyId: null,
      dedupKey: `automation:${run.id}:${run.stepIndex}:${cause}`,
      message: { kind: 'automation', orgId: run.orgId, alertId: null, title: message, message: null, severity: 'info', status: run.status, deviceId: null, ruleId: null, triggeredAt: null, escalationStep: null, timestamp: now },
    },
  ]);
}

/** Devices still in the run at step `index`: with onFailure other than continue, a device that failed a step takes no further steps. */
function activeDevices(run: AutomationRun, results: AutomationRunResult[]): string[] {
  if (run.plan.onFailure === 'continue') return run.deviceIds;
  const failed = new Set(results.filter((r) => r.status === 'failed' && r.stepIndex < run.stepIndex).map((r) => r.deviceId));
  return run.deviceIds.filter((id) => !failed.has(id));
}

/** Runs one device's part of a step in a savepoint: a failure rolls back only that part (and the work it queued for after commit). */
async function onDevice(tx: RequestContext, work: (inner: RequestContext) => Promise<Partial<AutomationRunResult>>): Promise<Partial<AutomationRunResult>> {
  const outcome = await inSavepoint(tx, work);
  return 'value' in outcome ? outcome.value : { status: 'failed', error: outcome.refused.message };
}

/** Starts the run's current step on its devices; answers whether it finished at once (otherwise the run waits). */
async function startStep(tx: RequestContext, run: AutomationRun, automationName: string, devices: string[]): Promise<boolean> {
  const step = run.plan.steps[run.stepIndex] as AutomationStep;
  const record = (deviceId: string, fields: Partial<AutomationRunResult>) =>
    tx.em.create(AutomationRunResult, { runId: run.id, deviceId, stepIndex: run.stepIndex, status: 'completed', ...fields });
  switch (step.type) {
    case 'command':
      for (const deviceId of devices) {
        const outcome = await onDevice(tx, async (inner) => ({ status: 'completed', commandId: (await createCommand(inner, deviceId, { type: step.commandType!, payload: step.payload })).id }));
        record(deviceId, outcome);
      }
      return true;
    case 'notify':
      await notifyChannel(tx, run, step.channelId!, `Automation "${automationName}": step ${run.stepIndex + 1} of run ${run.id}`, 'step');
      for (const deviceId of devices) record(deviceId, {});
      return true;
    case 'wait': {
      const seconds = step.seconds!;
      run.phase = 'waiting';
      run.resumeAt = new Date(tx.runtime.clock.now().getTime() + seconds * 1000);
      // The job comes at the wait's end in real time; the tick also resumes it by the runtime's clock.
      tx.afterCommit(() => tx.runtime.jobs.schedule(ADVANCE_JOB, { runId: run.id }, new Date(Date.now() + seconds * 1000)));
      return false;
    }
    case 'run_script': {
      // One call for every device: a script that cannot run at all (deleted, bad parameters) fails the step on each.
      const hooksBefore = tx.commitHookCount();
      let started: ExecuteResult;
      try {
        started = await tx.em.transactional((em) => executeScript(tx.withEm(em as typeof tx.em), step.scriptId!, { deviceIds: devices, parameters: step.parameters }));
      } catch (error) {
        tx.dropCommitHooksAfter(hooksBefore);
        if (!(error instanceof AppError)) throw error;
        for (const deviceId of devices) record(deviceId, { status: 'failed', error: error.message });
        return true;
      }
      for (const execution of started.executions) record(execution.deviceId, { status: 'running', executionId: execution.id });
      for (const skipped of started.skipped) record(skipped.deviceId, { status: 'failed', error: `skipped: ${skipped.reason}` });
      return started.executions.length === 0;
    }
  }
}

/** The run's final status from its results: every one ok → completed, every one failed → failed, else partial. */
function finalStatus(results: AutomationRunResult[]): AutomationRunStatus {
  const failed = results.filter((r) => r.status === 'failed').length;
  if (failed === 0) return 'completed';
  return failed === results.length ? 'failed' : 'partial';
}

/**
 * Moves the run on as far as it can go now, under its row lock: ends a wait that is over or a step
 * whose executions have all reported, starts the next steps, and ends the run after the last. Safe
 * to call any number of times from anywhere (jobs, the tick, subscribers): it re-reads everything.
 */
export async function advanceRun(sys: RequestContext, runId: string): Promise<void> {
  await withTransaction(sys, async (tx) => {
    const run = await tx.em.findOne(AutomationRun, { id: runId }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
    if (!run || run.status !== 'running') return;
    const automation = await tx.em.findOneOrFail(Automation, { id: run.automationId });
    const results = () => tx.em.find(AutomationRunResult, { runId }, { refresh: true });
    for (;;) {
      if (run.phase === 'waiting') {
        if (run.resumeAt && run.resumeAt > tx.runtime.clock.now()) break;
        for (const deviceId of activeDevices(run, await results())) tx.em.create(AutomationRunResult, { runId, deviceId, stepIndex: run.stepIndex, status: 'completed' });
        await finishStep(tx, run);
      } else if (run.phase === 'executing') {
        const current = (await results()).filter((r) => r.stepIndex === run.stepIndex);
        if (current.some((r) => r.status === 'running')) break;
        await finishStep(tx, run);
      }
      if (run.stepIndex >= run.plan.steps.length) {
        await finishRun(tx, automation, run, await results());
        break;
      }
      const devices = activeDevices(run, await results());
      if (devices.length === 0) {
        await finishRun(tx, automation, run, await results());
        break;
      }
      run.phase = 'executing';
      const done = await startStep(tx, run, automation.name, devices);
      await tx.em.flush();
      if (!done) break;
    }
    await tx.em.flush();
  });
}

/** The current step is over: `onFailure: "notify"` tells the channels of the plan's notify steps about its failures; the next step comes up. */
async function finishStep(tx: RequestContext, run: AutomationRun): Promise<void> {
  await tx.em.flush();
  if (run.plan.onFailure === 'notify') {
    const failed = await tx.em.count(AutomationRunResult, { runId: run.id, stepIndex: run.stepIndex, status: 'failed' });
    if (failed > 0) {
      const channels = [...new Set(run.plan.steps.filter((s) => s.type === 'notify').map((s) => s.channelId as string))];
      const message = `Automation run ${run.id}: step ${run.stepIndex + 1} failed on ${failed} device(s)`;
      for (const channelId of channels.length > 0 ? channels : [null]) await notifyChannel(tx, run, channelId, message, 'failure');
    }
  }
  run.stepIndex += 1;
  run.phase = 'ready';
  run.resumeAt = null;
}

async function finishRun(tx: RequestContext, automation: Automation, run: AutomationRun, results: AutomationRunResult[]): Promise<void> {
  run.status = finalStatus(results);
  run.phase = 'ready';
  run.completedAt = tx.runtime.clock.now();
  await tx.em.flush();
  const failedDeviceIds = [...new Set(results.filter((r) => r.status === 'failed').map((r) => r.deviceId))].sort();
  await emit(tx, { type: run.status === 'completed' ? 'automation.completed' : 'automation.failed', orgId: run.orgId, data: runEventData(automation, run, failedDeviceIds) });
}
