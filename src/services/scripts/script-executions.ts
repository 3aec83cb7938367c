import { LockMode, raw, type FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import type { Device } from '../../../entities/device.js';
import type { DeviceCommand } from '../../../entities/device-command.js';
import { EXECUTION_STATUSES, FINISHED_STATUSES, ScriptExecution, type ExecutionStatus, Script } from '../../../entities/script.js';
import type { RequestContext } from '../../auth/context.js';
import { loadOwned, permits, requirePrincipal, visibleSiteIds } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { conflict, notFound } from '../../errors.js';
import { DOMAIN_EVENT_TOPIC } from '../../events/dispatcher.js';
import { emit } from '../../events/outbox.js';
import { selectIterable } from '../../events/subscriptions.js';
import type { DomainEvent, DomainEventMap } from '../../events/types.js';
import { MAX_LIMIT, PageQuery, encodeCursor, pageInfoOf, keysetWhere, pageOptions, pageSchema, toPage, type Connection, type Page } from '../../pagination.js';
import { enumValues, parseInput, timestamp, uuid } from '../../validation.js';
import { recordAudit } from '../audit/api.js';
import { checkTargets, commandWasSent, findDevices, queueCommand, toTarget, type CommandResult, type CommandTypeHooks } from '../devices/api.js';
import { JsonObjectSchema } from '../shared/json.js';
import { accessibleScript, maskParameters, resolveParameters, unsealParameters } from './scripts.js';
import { shownWhen } from '../../events/sight.js';

/*
 * Script executions: one per target device, each carried by exactly one `run_script` device command
 * (pending → queued when an agent takes the command → running when it reports the start → a final
 * status from its result, or `timeout` from the sweep, or `cancelled`). Secret parameter values stay
 * sealed in the execution and the command payload; the agent gets them unsealed when it claims it.
 */

const RESOURCE = 'Script execution';
/** Time an execution gets beyond its script's timeout (agent start-up, reporting) before it turns `timeout`. */
export const TIMEOUT_GRACE_SECONDS = 60;
/** Output kept per stream. */
const MAX_STREAM_BYTES = 1024 * 1024;

export const ExecutionStatusSchema = z.enum(EXECUTION_STATUSES).meta({
  title: 'ScriptExecutionStatus',
  description: 'pending: not yet handed out; queued: handed to the agent; running: the agent reported the start; then completed, failed, timeout or cancelled',
}).register(enumValues, {
  pending: 'Created; its run_script command has not been handed to the agent yet.',
  queued: 'The agent took its command but has not reported the start.',
  running: 'The agent reported the start and no end yet.',
  completed: 'The agent reported it finished with exit code 0.',
  failed: 'The agent reported a non-zero exit code or that it could not run the script.',
  timeout: 'Not finished within the script’s timeout plus a grace minute, or the agent reported it timed out.',
  cancelled: 'Cancelled before it finished.',
});

export const ExecutionViewSchema = z
  .object({
    id: uuid().describe('the execution'),
    orgId: uuid().describe("the script's organization"),
    scriptId: uuid().describe('the script that ran'),
    scriptVersion: z.number().int().describe('the version of the script that ran'),
    deviceId: uuid().describe('the device it ran on'),
    commandId: uuid().nullable().describe('the run_script device command that carries it'),
    status: ExecutionStatusSchema,
    exitCode: z.number().int().nullable().describe("the script's exit code, once reported"),
    stdout: z.string().nullable().describe('the first 1 MiB of standard output'),
    stderr: z.string().nullable().describe('the first 1 MiB of standard error'),
    truncated: z.boolean().describe('a stream was longer than 1 MiB and was cut'),
    parameters: z.record(z.string(), z.unknown()).describe('the values it ran with; secret ones read as ********'),
    timeoutSeconds: z.number().int().describe("the script's timeout when it was started"),
    createdBy: uuid().nullable().describe('the user who started it (null for automations and the system)'),
    createdAt: timestamp().describe('when it was requested'),
    startedAt: timestamp().nullable().describe('when the agent reported the start'),
    completedAt: timestamp().nullable().describe('when it finished, timed out or was cancelled'),
  })
  .meta({ title: 'ScriptExecution', description: 'One run of a script on one device, with its output' });
export type ExecutionView = z.output<typeof ExecutionViewSchema>;
export const ExecutionPageSchema = pageSchema(ExecutionViewSchema, 'ScriptExecutionPage').meta({ title: 'ScriptExecutionPage', description: 'A page of executions, newest first' });

export function executionView(execution: ScriptExecution): ExecutionView {
  return {
    id: execution.id,
    orgId: execution.orgId,
    scriptId: execution.scriptId,
    scriptVersion: execution.scriptVersion,
    deviceId: execution.deviceId,
    commandId: execution.commandId,
    status: execution.status,
    exitCode: execution.exitCode,
    stdout: execution.stdout,
    stderr: execution.stderr,
    truncated: execution.truncated,
    parameters: maskParameters(execution.parameters),
    timeoutSeconds: execution.timeoutSeconds,
    createdBy: execution.createdBy,
    createdAt: execution.createdAt.toISOString(),
    startedAt: execution.startedAt?.toISOString() ?? null,
    completedAt: execution.completedAt?.toISOString() ?? null,
  };
}

// ── execute ─────────────────────────────────────────────────────────────────────────────────────

export const ExecuteScriptSchema = z
  .strictObject({
    deviceIds: z.array(uuid()).min(1).max(MAX_LIMIT).optional().describe(`1 to ${MAX_LIMIT} devices of the script's organization`),
    groupId: uuid().optional().describe("a device group of the script's organization: its current members"),
    parameters: JsonObjectSchema.optional().describe('values of the parameters the script declares, by name'),
  })
  .refine((input) => input.deviceIds || input.groupId, { message: 'give deviceIds, a groupId or both', path: ['deviceIds'] })
  .meta({ description: 'Where to run a script (devices, a group, or both) and with which parameter values' });
export type ExecuteScriptInput = z.input<typeof ExecuteScriptSchema>;

export const ExecuteResultSchema = z
  .object({
    executions: z
      .array(
        z
          .object({ id: uuid().describe('the execution'), deviceId: uuid().describe('its device'), commandId: uuid().describe('the run_script command its agent gets'), status: ExecutionStatusSchema })
          .meta({ title: 'ScriptExecutionStarted', description: 'An execution just created' }),
      )
      .describe('one per device that runs the script'),
    skipped: z
      .array(
        z
          .object({ deviceId: uuid().describe('the device left out'), reason: z.string().describe('unsupported_os or decommissioned') })
          .meta({ title: 'ScriptExecutionSkipped', description: 'A target device that does not run the script' }),
      )
      .describe('target devices left out, with the reason'),
  })
  .meta({ title: 'ScriptExecuteResult', description: 'What running a script started, and which devices it left out' });
export type ExecuteResult = z.output<typeof ExecuteResultSchema>;

/**
 * The devices an execution aims at: those named and the group's current members, of the script's
 * organization (`checkTargets`: 404 for what the caller cannot see), as far as the caller sees them.
 */
async function targetDevices(ctx: RequestContext, script: Script, input: z.output<typeof ExecuteScriptSchema>): Promise<Device[]> {
  const target = toTarget({ orgId: script.orgId, deviceIds: input.deviceIds, groupIds: input.groupId ? [input.groupId] : undefined });
  await checkTargets(ctx, target);
  return findDevices(ctx, { target });
}

/**
 * Runs a script on devices: one execution and one `run_script` command per device whose OS the script
 * supports (others are skipped, with the reason). In the caller's transaction when given one (an
 * automation step), else in its own.
 */
export async function executeScript(ctx: RequestContext, scriptId: string, rawInput: ExecuteScriptInput): Promise<ExecuteResult> {
  const input = parseInput(ExecuteScriptSchema, rawInput);
  const script = await accessibleScript(ctx, scriptId, 'scripts:execute');
  const parameters = resolveParameters(ctx.runtime, script, input.parameters ?? {});
  const devices = await targetDevices(ctx, script, input);
  const result: ExecuteResult = { executions: [], skipped: [] };
  const runnable: Device[] = [];
  for (const device of devices) {
    if (device.status === 'decommissioned') result.skipped.push({ deviceId: device.id, reason: 'decommissioned' });
    else if (!device.osType || !script.osTypes.includes(device.osType)) result.skipped.push({ deviceId: device.id, reason: 'unsupported_os' });
    else runnable.push(device);
  }
  if (runnable.length === 0) return result;
  const createdBy = requirePrincipal(ctx).userId;
  return withTransaction(ctx, async (tx) => {
    const now = tx.runtime.clock.now();
    // Until an agent takes it, an execution may wait as long as any command does, then run.
    const deadlineAt = new Date(now.getTime() + (tx.runtime.config.devices.commandTimeoutSeconds + script.timeoutSeconds + TIMEOUT_GRACE_SECONDS) * 1000);
    for (const device of runnable) {
      const execution = tx.em.create(ScriptExecution, {
        orgId: script.orgId,
        scriptId: script.id,
        scriptVersion: script.version,
        deviceId: device.id,
        parameters,
        timeoutSeconds: script.timeoutSeconds,
        deadlineAt,
        createdBy,
        createdAt: now,
      });
      const payload = { executionId: execution.id, language: script.language, content: script.content, parameters, runAs: script.runAs, timeoutSeconds: script.timeoutSeconds };
      const command = await queueCommand(tx, device, { type: 'run_script', payload }, createdBy, { timeoutAt: deadlineAt });
      execution.commandId = command.id;
      result.executions.push({ id: execution.id, deviceId: device.id, commandId: command.id, status: execution.status });
    }
    await tx.em.flush();
    await recordAudit(tx, {
      action: 'script.execute',
      resourceType: 'script',
      resourceId: script.id,
      orgId: script.orgId,
      details: { name: script.name, version: script.version, deviceIds: runnable.map((d) => d.id), executionIds: result.executions.map((e) => e.id) },
    });
    for (const e of result.executions) await emitUpdated(tx, script.orgId, { id: e.id, scriptId: script.id, deviceId: e.deviceId, status: 'pending' });
    return result;
  });
}

// ── read ────────────────────────────────────────────────────────────────────────────────────────

/** An execution the caller may act on: of an organization they see (404 otherwise) and on a device of their sites. */
export async function accessibleExecution(ctx: RequestContext, id: string, permission: 'scripts:read' | 'scripts:execute'): Promise<ScriptExecution> {
  const execution = await loadOwned(ctx, ScriptExecution, id, permission, { resource: RESOURCE });
  if (!(await onVisibleSite(ctx, ctx.em, execution))) throw notFound(RESOURCE);
  return execution;
}

/** Whether the execution's device is, as `em` reads it now, on a site the caller sees (always for callers not limited to sites). */
async function onVisibleSite(ctx: RequestContext, em: RequestContext['em'], execution: Pick<ScriptExecution, 'orgId' | 'deviceId'>): Promise<boolean> {
  const sites = visibleSiteIds(ctx, execution.orgId);
  if (!sites) return true;
  const [device] = await findDevices(ctx.withEm(em), { ids: [execution.deviceId] }, { scope: 'all', fields: ['siteId'] });
  return !!device?.siteId && sites.includes(device.siteId);
}

/** Whether the caller may read the execution (scripts:read in its organization, its device on their sites as `em` reads it now): each live notice of one is decided by it. */
export async function maySeeExecution(ctx: RequestContext, em: RequestContext['em'], execution: Pick<ScriptExecution, 'orgId' | 'deviceId'>): Promise<boolean> {
  return (await permits(ctx, 'scripts:read', { orgId: execution.orgId })) && (await onVisibleSite(ctx, em, execution));
}

export async function getExecution(ctx: RequestContext, id: string): Promise<ExecutionView> {
  return executionView(await accessibleExecution(ctx, id, 'scripts:read'));
}

export const ExecutionListQuery = PageQuery.extend({
  status: ExecutionStatusSchema.optional(),
  deviceId: uuid().optional(),
}).strict();
export type ExecutionListInput = z.input<typeof ExecutionListQuery>;

/** A script's executions the caller can see: site-limited callers, those on their sites' devices only. */
export function executionFilter(ctx: RequestContext, script: Script, query: { status?: ExecutionStatus; deviceId?: string }): FilterQuery<ScriptExecution> {
  const where: FilterQuery<ScriptExecution>[] = [{ scriptId: script.id }];
  const sites = visibleSiteIds(ctx, script.orgId);
  if (sites) where.push((sites.length === 0 ? { deviceId: { $in: [] } } : { deviceId: { $in: raw('select d.id from device d where d.site_id in (?)', [sites]) } }) as FilterQuery<ScriptExecution>);
  if (query.status) where.push({ status: query.status });
  if (query.deviceId) where.push({ deviceId: query.deviceId });
  return { $and: where };
}

/** A script's executions the caller can see, newest first. */
export async function listExecutions(ctx: RequestContext, scriptId: string, rawQuery: ExecutionListInput): Promise<Page<ExecutionView>> {
  const query = parseInput(ExecutionListQuery, rawQuery);
  const script = await accessibleScript(ctx, scriptId, 'scripts:read');
  const [rows, total] = await ctx.em.findAndCount(ScriptExecution, executionFilter(ctx, script, query), { orderBy: { createdAt: 'desc', id: 'desc' }, ...pageOptions(query) });
  return toPage(rows.map(executionView), total, query);
}

/** `listExecutions` as a GraphQL connection: keyset pages, newest first. */
export const ExecutionConnectionArgs = z
  .strictObject({
    scriptId: uuid().describe('the script whose executions to list'),
    status: ExecutionStatusSchema.optional(),
    deviceId: uuid().optional().describe('only executions on this device'),
    first: PageQuery.shape.limit,
    after: z.string().optional().describe("`endCursor` (or an edge's `cursor`) of the previous page"),
  });
export type ExecutionConnectionInput = z.input<typeof ExecutionConnectionArgs>;

export async function executionsConnection(ctx: RequestContext, rawArgs: ExecutionConnectionInput): Promise<Connection<ExecutionView>> {
  const args = parseInput(ExecutionConnectionArgs, rawArgs);
  const script = await accessibleScript(ctx, args.scriptId, 'scripts:read');
  const base = executionFilter(ctx, script, args);
  const seek = keysetWhere('createdAt', 'date', 'desc', args.after);
  const rows = await ctx.em.find(ScriptExecution, { $and: [base, seek.where as FilterQuery<ScriptExecution>] }, { orderBy: seek.orderBy, limit: args.first + 1 });
  const page = rows.slice(0, args.first);
  const edges = page.map((row) => ({ node: executionView(row), cursor: encodeCursor({ value: row.createdAt.toISOString(), id: row.id }) }));
  return { edges, pageInfo: pageInfoOf(edges, rows.length > args.first, args.after != null), totalCount: () => ctx.em.count(ScriptExecution, base) };
}

// ── cancel ──────────────────────────────────────────────────────────────────────────────────────

/**
 * A pending execution is cancelled with its command (the agent never sees it); a queued or running
 * one is cancelled and the agent told to stop it (`cancel_script`). A finished one is 409.
 */
export async function cancelExecution(ctx: RequestContext, id: string): Promise<ExecutionView> {
  await accessibleExecution(ctx, id, 'scripts:execute');
  return withTransaction(ctx, async (tx) => {
    const execution = await tx.em.findOneOrFail(ScriptExecution, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
    if (FINISHED_STATUSES.includes(execution.status)) throw conflict(`The execution has already finished (${execution.status})`);
    const rows = execution.commandId
      ? ((await tx.em.execute(`update device_command set status = 'cancelled', completed_at = ?, updated_at = now() where id = ? and status in ('pending', 'sent') returning status`, [
          tx.runtime.clock.now(),
          execution.commandId,
        ])) as unknown[])
      : [];
    // The claim may have taken a pending command meanwhile: what counts is whether the agent may have it.
    const handedOut = execution.status !== 'pending' || (await commandWasSent(tx, execution.commandId));
    await stopExecution(tx, execution, handedOut);
    await recordAudit(tx, { action: 'script.execution.cancel', resourceType: 'script_execution', resourceId: execution.id, orgId: execution.orgId, details: { scriptId: execution.scriptId, deviceId: execution.deviceId, commandsCancelled: rows.length } });
    return executionView(execution);
  });
}

/** An unfinished execution (locked) turns `cancelled`; an agent that may have its command is told to stop it (`cancel_script`). */
async function stopExecution(tx: RequestContext, execution: ScriptExecution, handedOut: boolean): Promise<void> {
  execution.status = 'cancelled';
  execution.completedAt = tx.runtime.clock.now();
  await tx.em.flush();
  if (handedOut) {
    // Wherever the device is now: the caller decided on the execution.
    const [device] = await findDevices(tx, { ids: [execution.deviceId], active: true }, { scope: 'all' });
    if (device) await queueCommand(tx, device, { type: 'cancel_script', payload: { executionId: execution.id } }, requirePrincipal(tx).userId);
  }
  await emitUpdated(tx, execution.orgId, execution);
}

// ── the agent's side (device-command hooks) ─────────────────────────────────────────────────────

/** Data of the `script.*` events and of `script.execution_updated`. */
function eventData(execution: Pick<ScriptExecution, 'id' | 'scriptId' | 'deviceId' | 'status'> & Partial<Pick<ScriptExecution, 'exitCode'>>, orgId: string) {
  return { executionId: execution.id, scriptId: execution.scriptId, deviceId: execution.deviceId, orgId, status: execution.status, exitCode: execution.exitCode ?? null };
}

async function emitUpdated(tx: RequestContext, orgId: string, execution: Pick<ScriptExecution, 'id' | 'scriptId' | 'deviceId' | 'status'> & Partial<Pick<ScriptExecution, 'exitCode'>>): Promise<void> {
  await emit(tx, { type: 'script.execution_updated', orgId, data: eventData(execution, orgId) });
}

/** The webhook event a final status publishes (timeouts and failures alike are `script.failed`). */
const FINAL_EVENTS: Partial<Record<ExecutionStatus, 'script.completed' | 'script.failed'>> = { completed: 'script.completed', failed: 'script.failed', timeout: 'script.failed' };

/** The first `max` bytes of `text`, never splitting a character. */
function firstBytes(text: string | undefined, max: number): { text: string | null; cut: boolean } {
  if (text === undefined) return { text: null, cut: false };
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= max) return { text, cut: false };
  // A cut inside a multi-byte character decodes to U+FFFD at the end: drop it.
  return { text: bytes.subarray(0, max).toString('utf8').replace(/\uFFFD$/, ''), cut: true };
}

async function executionOf(tx: RequestContext, command: DeviceCommand): Promise<ScriptExecution | null> {
  return tx.em.findOne(ScriptExecution, { commandId: command.id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
}

/**
 * The script executions' command types (registered by the scripts manifest): a run_script carries one
 * execution and secret values only the server sealed, a cancel_script stops one; never queued by hand.
 */
const runScript: CommandTypeHooks = {
  serviceOnly: 'run_script commands are queued by running a script (POST /scripts/:id/execute)',
  // Secret values reach the agent only from the execution the server made and sealed, never from a
  // command's payload; a command without its execution, or whose values do not unseal, is not delivered.
  async toAgent(tx, commands) {
    const executions = await tx.em.find(ScriptExecution, { commandId: { $in: commands.map((c) => c.id) } });
    const byCommand = new Map(executions.map((e) => [e.commandId, e]));
    const payloads = new Map<string, Record<string, unknown>>();
    for (const command of commands) {
      const execution = byCommand.get(command.id);
      if (!execution) continue;
      try {
        payloads.set(command.id, { ...command.payload, parameters: unsealParameters(tx.runtime, execution.parameters) });
      } catch {
        tx.runtime.log.warn({ commandId: command.id, executionId: execution.id }, 'run_script parameters could not be unsealed');
      }
    }
    return payloads;
  },

  toView: (payload) => (payload.parameters && typeof payload.parameters === 'object' ? { ...payload, parameters: maskParameters(payload.parameters as Record<string, unknown>) } : payload),

  async cancelled(tx, command, handedOut) {
    const execution = await executionOf(tx, command);
    if (execution && !FINISHED_STATUSES.includes(execution.status)) await stopExecution(tx, execution, handedOut);
  },

  async claimed(tx, commandIds) {
    const now = tx.runtime.clock.now();
    const rows = (await tx.em.execute(
      `update script_execution set status = 'queued', deadline_at = ?::timestamptz + make_interval(secs => timeout_seconds + ?), updated_at = now()
        where command_id in (${commandIds.map(() => '?').join(', ')}) and status = 'pending'
        returning id, script_id, device_id, org_id`,
      [now, TIMEOUT_GRACE_SECONDS, ...commandIds],
    )) as { id: string; script_id: string; device_id: string; org_id: string }[];
    for (const row of rows) await emitUpdated(tx, row.org_id, { id: row.id, scriptId: row.script_id, deviceId: row.device_id, status: 'queued' });
  },

  async started(tx, command) {
    const execution = await executionOf(tx, command);
    if (!execution || (execution.status !== 'pending' && execution.status !== 'queued')) return;
    const now = tx.runtime.clock.now();
    execution.status = 'running';
    execution.startedAt = now;
    execution.deadlineAt = new Date(now.getTime() + (execution.timeoutSeconds + TIMEOUT_GRACE_SECONDS) * 1000);
    await tx.em.flush();
    await emit(tx, { type: 'script.started', orgId: execution.orgId, data: eventData(execution, execution.orgId) });
    await emitUpdated(tx, execution.orgId, execution);
  },

  async answered(tx, command, input: CommandResult) {
    const execution = await executionOf(tx, command);
    if (!execution) return false;
    if (FINISHED_STATUSES.includes(execution.status)) return true;
    const stdout = firstBytes(input.stdout, MAX_STREAM_BYTES);
    const stderr = firstBytes(input.stderr, MAX_STREAM_BYTES);
    const now = tx.runtime.clock.now();
    const status: ExecutionStatus = input.status === 'timeout' ? 'timeout' : input.status === 'completed' && (input.exitCode ?? 0) === 0 ? 'completed' : 'failed';
    Object.assign(execution, {
      status,
      exitCode: input.exitCode ?? null,
      stdout: stdout.text,
      stderr: stderr.text,
      truncated: stdout.cut || stderr.cut,
      startedAt: execution.startedAt ?? now,
      completedAt: now,
    });
    await tx.em.flush();
    await emit(tx, { type: FINAL_EVENTS[status]!, orgId: execution.orgId, data: eventData(execution, execution.orgId) });
    await emitUpdated(tx, execution.orgId, execution);
    return true;
  },
};

export const scriptCommandTypes: Record<string, CommandTypeHooks> = {
  run_script: runScript,
  cancel_script: { serviceOnly: 'cancel_script commands are queued by cancelling a script execution (POST /scripts/executions/:id/cancel)' },
};

// ── timeouts ────────────────────────────────────────────────────────────────────────────────────

/** Executions past their deadline turn `timeout`, with their open commands. Run by a recurring job. */
export async function timeOutExecutions(ctx: RequestContext): Promise<number> {
  return withTransaction(ctx, async (tx) => {
    const now = tx.runtime.clock.now();
    const rows = (await tx.em.execute(
      `update script_execution set status = 'timeout', completed_at = ?, updated_at = now()
        where id in (select id from script_execution where status in ('pending', 'queued', 'running') and deadline_at <= ? order by deadline_at limit 1000 for update skip locked)
        returning id, script_id, device_id, org_id, command_id`,
      [now, now],
    )) as { id: string; script_id: string; device_id: string; org_id: string; command_id: string | null }[];
    const commandIds = rows.map((r) => r.command_id).filter((id): id is string => id !== null);
    if (commandIds.length > 0) {
      await tx.em.execute(`update device_command set status = 'timeout', completed_at = ?, updated_at = now() where status in ('pending', 'sent') and id in (${commandIds.map(() => '?').join(', ')})`, [
        now,
        ...commandIds,
      ]);
    }
    for (const row of rows) {
      const data = { id: row.id, scriptId: row.script_id, deviceId: row.device_id, status: 'timeout' as const };
      await emit(tx, { type: 'script.failed', orgId: row.org_id, data: eventData(data, row.org_id) });
      await emitUpdated(tx, row.org_id, data);
    }
    return rows.length;
  });
}

// ── live updates ────────────────────────────────────────────────────────────────────────────────

/** The execution as its status changes, from any instance, to a caller who may read it and see its device's site (decided again on each change). */
export async function subscribeExecutionUpdates(ctx: RequestContext, executionId: string): Promise<AsyncIterable<ExecutionView>> {
  const first = await accessibleExecution(ctx, executionId, 'scripts:read');
  return selectIterable(ctx.runtime.pubsub.subscribe(DOMAIN_EVENT_TOPIC), async (event: DomainEvent): Promise<ExecutionView | null> => {
    if (event.type !== 'script.execution_updated') return null;
    const data = event.data as DomainEventMap['script.execution_updated'];
    if (data.executionId !== first.id) return null;
    // A fresh EntityManager per event: the subscription lives long, its rows must not come from a cache.
    const em = ctx.em.fork();
    const execution = await em.findOne(ScriptExecution, { id: first.id });
    // The device may have moved out of a site-limited caller's sites since they subscribed.
    if (!execution || !(await maySeeExecution(ctx, em, execution))) return null;
    return { ...executionView(execution), status: data.status as ExecutionStatus };
  });
}

/** An execution's events reach those who may read it. */
export const executionEventSight = shownWhen((ctx, event) => maySeeExecution(ctx, ctx.em.fork(), event.data as Pick<ScriptExecution, 'orgId' | 'deviceId'>));
