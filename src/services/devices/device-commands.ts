import { LockMode } from '@mikro-orm/core';
import DataLoader from 'dataloader';
import { z } from 'zod';
import { Device } from '../../../entities/device.js';
import { COMMAND_STATUSES, DeviceCommand } from '../../../entities/device-command.js';
import type { RequestContext } from '../../auth/context.js';
import type { Loaders } from '../../auth/loaders.js';
import { authorize, isUuid, permits, requirePrincipal, tenantWhere, visibleOrgIds } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { uuidArray } from '../../db/arrays.js';
import { AppError, conflict, notFound } from '../../errors.js';
import { emit } from '../../events/outbox.js';
import { MAX_LIMIT, PageQuery, pageSchema, toPage, type Page } from '../../pagination.js';
import { enumValues, parseInput, timestamp, uuid } from '../../validation.js';
import { recordChange } from '../audit/api.js';
import { AutoUpdateSchema, accessibleDevice, authorizeDevice, deviceDecommissioned, setAutoUpdate, type AutoUpdateInput, type DeviceView } from './devices.js';
import { onePer } from '../../memo.js';
import { JsonObjectSchema } from '../shared/json.js';
import { commandTypeOf, commandTypes, type ClaimedRow, type CommandResult, type CommandTypeHooks } from './command-types.js';


const MAX_PAYLOAD_BYTES = 64 * 1024;
const CommandPayloadSchema = JsonObjectSchema.refine((payload) => Buffer.byteLength(JSON.stringify(payload)) <= MAX_PAYLOAD_BYTES, { message: 'payload must be at most 64 KiB' });

const CommandStatusSchema = z
  .enum(COMMAND_STATUSES)
  .meta({ title: 'CommandStatus', description: 'Where a device command stands.' })
  .register(enumValues, {
    pending: 'Queued: not yet handed to the agent.',
    sent: 'Handed to the agent, no answer yet.',
    completed: 'The agent ran it and reported success.',
    failed: 'The agent ran it and reported a failure.',
    timeout: 'No answer before timeoutAt.',
    cancelled: 'Cancelled before it finished (by hand, or the device was decommissioned or moved).',
  });

export const CommandViewSchema = z
  .object({
    id: uuid().describe('Unique ID.'),
    deviceId: uuid().describe('The device it runs on.'),
    orgId: uuid().describe('The organization that queued it (the device’s organization then).'),
    type: z.string().describe('The command name (run_script, reboot, …).'),
    payload: z.record(z.string(), z.unknown()).describe('Its arguments, as given; secret values read as ********.'),
    status: CommandStatusSchema.describe('Where the command stands.'),
    createdBy: uuid().nullable().describe('The user who queued it; null for the system.'),
    createdAt: timestamp().describe('When it was queued.'),
    sentAt: timestamp().nullable().describe('When it was handed to the agent; null until then.'),
    completedAt: timestamp().nullable().describe('When the agent reported the outcome; null until then.'),
    timeoutAt: timestamp().describe('When it times out without an answer.'),
    exitCode: z.number().int().nullable().describe('The process exit code the agent reported; null until completed or when none applies.'),
    stdout: z.string().nullable().describe('Standard output the agent reported (truncated by the agent); null until then.'),
    stderr: z.string().nullable().describe('Standard error the agent reported; null until then.'),
    result: z.record(z.string(), z.unknown()).nullable().describe('Structured result the agent reported (JSON); null until then.'),
  })
  .meta({ title: 'DeviceCommand', description: 'A command queued for a device’s agent, and its outcome.' });
export type CommandView = z.output<typeof CommandViewSchema>;
export const CommandPageSchema = pageSchema(CommandViewSchema, 'DeviceCommandPage');

export function commandView(command: DeviceCommand): CommandView {
  return {
    id: command.id,
    deviceId: command.deviceId,
    orgId: command.orgId,
    type: command.type,
    payload: commandTypeOf(command.type)?.toView?.(command.payload) ?? command.payload,
    status: command.status,
    createdBy: command.createdBy,
    createdAt: command.createdAt.toISOString(),
    sentAt: command.sentAt?.toISOString() ?? null,
    completedAt: command.completedAt?.toISOString() ?? null,
    timeoutAt: command.timeoutAt.toISOString(),
    exitCode: command.exitCode,
    stdout: command.stdout,
    stderr: command.stderr,
    result: command.result,
  };
}

const alreadyPending = (type: string) => new AppError(409, 'ALREADY_PENDING', `A ${type} command is already pending for this device`);

const commandFields = {
  type: z
    .string()
    .trim()
    .regex(/^[a-z][a-z0-9_]{0,99}$/, 'must be a command name such as refresh_inventory')
    .describe('What the agent should do: a command name such as run_script, reboot, refresh_inventory or set_auto_update.'),
  payload: CommandPayloadSchema.optional().describe('The command’s arguments as a JSON object, at most 64 KiB (set_auto_update: `{ enabled }`).'),
};

/** The devices domain's own command types. */
export const deviceCommandTypes: Record<string, CommandTypeHooks> = {
  // Spec Versioning 6: the command switches the device's own setting too (needs devices:write; the payload is `{enabled}`).
  set_auto_update: {
    payload: AutoUpdateSchema,
    async queued(tx, device, payload) {
      await setAutoUpdate(tx, device.id, payload as AutoUpdateInput);
    },
  },
};

/** Payloads the server itself acts on are checked before anything is queued. */
function checkPayload(command: { type: string; payload?: Record<string, unknown> }, ctx: z.RefinementCtx): void {
  const hooks = commandTypeOf(command.type);
  if (hooks?.serviceOnly) ctx.addIssue({ code: 'custom', message: hooks.serviceOnly, path: ['type'] });
  const parsed = hooks?.payload?.safeParse(command.payload ?? {});
  for (const issue of parsed?.error?.issues ?? []) ctx.addIssue({ code: 'custom', message: issue.message, path: ['payload', ...issue.path] });
}

export const CreateCommandSchema = z.object(commandFields).strict().superRefine(checkPayload).describe('A command for one device’s agent.');
export type CreateCommandInput = z.input<typeof CreateCommandSchema>;
type CommandInput = z.output<typeof CreateCommandSchema>;

/**
 * Queues a command in the caller's transaction; singleton types (`refresh_inventory`) refuse a second while
 * one is open. `timeoutAt` replaces the configured command timeout (work that runs longer).
 */
export async function queueCommand(tx: RequestContext, device: Device, input: CommandInput, createdBy: string | null, options: { timeoutAt?: Date } = {}): Promise<DeviceCommand> {
  if (device.status === 'decommissioned') throw deviceDecommissioned();
  // Serializes queueing per device, so two concurrent requests cannot both pass the pending check.
  await tx.em.execute('select pg_advisory_xact_lock(hashtext(?))', [`device-commands:${device.id}`]);
  const hooks = commandTypeOf(input.type);
  if (hooks?.singleton && (await tx.em.count(DeviceCommand, { deviceId: device.id, type: input.type, status: { $in: ['pending', 'sent'] } })) > 0) {
    throw alreadyPending(input.type);
  }
  await hooks?.queued?.(tx, device, input.payload ?? {});
  const now = tx.runtime.clock.now();
  const command = tx.em.create(DeviceCommand, {
    deviceId: device.id,
    orgId: device.orgId,
    type: input.type,
    payload: input.payload ?? {},
    createdBy,
    timeoutAt: options.timeoutAt ?? new Date(now.getTime() + tx.runtime.config.devices.commandTimeoutSeconds * 1000),
  });
  await tx.em.flush();
  await recordChange(
    tx,
    { action: 'device.command.create', resourceType: 'device', resourceId: device.id, orgId: device.orgId, details: { commandId: command.id, type: command.type } },
    commandEventData(command),
  );
  // The instance holding the agent's channel, if any, claims it and pushes it at once; a lost
  // notification only delays it to the channel's next presence tick or the agent's next heartbeat.
  tx.afterCommit(() => tx.runtime.pubsub.publish(COMMANDS_QUEUED_TOPIC, { deviceId: device.id } satisfies CommandsQueued));
  return command;
}

/** Published (LISTEN/NOTIFY, every instance) once a command for the device has committed. */
export const COMMANDS_QUEUED_TOPIC = 'agent-channel:commands';
export interface CommandsQueued {
  deviceId: string;
}

function commandEventData(command: DeviceCommand) {
  return { commandId: command.id, deviceId: command.deviceId, orgId: command.orgId, type: command.type, status: command.status };
}

/** Whether the command was handed to its agent (read now, past the identity map). */
export async function commandWasSent(tx: RequestContext, commandId: string | null): Promise<boolean> {
  if (!commandId) return false;
  const command = await tx.em.findOne(DeviceCommand, { id: commandId }, { fields: ['sentAt'], refresh: true });
  return !!command?.sentAt;
}

export async function createCommand(ctx: RequestContext, deviceId: string, rawInput: CreateCommandInput): Promise<CommandView> {
  const input = parseInput(CreateCommandSchema, rawInput);
  const device = await accessibleDevice(ctx, deviceId, 'devices:execute');
  return commandView(await withTransaction(ctx, (tx) => queueCommand(tx, device, input, requirePrincipal(ctx).userId)));
}

export const CommandListQuery = PageQuery.extend({ status: CommandStatusSchema.optional().describe('Only commands in this state.') }).strict();
export type CommandListInput = z.input<typeof CommandListQuery>;
type CommandQuery = z.output<typeof CommandListQuery>;

export async function listCommands(ctx: RequestContext, deviceId: string, rawQuery: CommandListInput): Promise<Page<CommandView>> {
  const query = parseInput(CommandListQuery, rawQuery);
  const device = await accessibleDevice(ctx, deviceId, 'devices:read');
  const [page] = await commandPages(ctx, query, [device.id]);
  return page!;
}

/** Per request (its Loaders), one batching loader per page shape (page, limit, status). */
const pageLoadersOf = onePer((_loaders: Loaders) => new Map<string, DataLoader<string, Page<CommandView>>>());

/**
 * A device's commands paged like `GET /devices/:id/commands`, for a device the caller has already
 * been shown (GraphQL `Device.commands`). The devices of one list are read together: a
 * request-scoped DataLoader turns every device's page into three queries, however many devices.
 */
export async function deviceCommandPage(ctx: RequestContext, device: Pick<DeviceView, 'id' | 'orgId' | 'siteId'>, rawQuery: CommandListInput): Promise<Page<CommandView>> {
  const query = parseInput(CommandListQuery, rawQuery);
  // Queued before the decision so that every device of a list joins one batch (the decision may wait
  // on a query); nothing is answered unless the decision allows it.
  const page = pageLoader(ctx, query).load(device.id);
  page.catch(() => {});
  await authorizeDevice(ctx, device, 'devices:read');
  return page;
}

function pageLoader(ctx: RequestContext, query: CommandQuery): DataLoader<string, Page<CommandView>> {
  const byShape = pageLoadersOf(ctx.loaders);
  const shape = JSON.stringify([query.page, query.limit, query.status ?? null]);
  let loader = byShape.get(shape);
  // No cache: a later mutation in the same request must not be answered from an earlier read.
  if (!loader) byShape.set(shape, (loader = new DataLoader((deviceIds) => commandPages(ctx, query, deviceIds), { cache: false })));
  return loader;
}

/**
 * Each device's page of its commands, newest first: totals, the ids ranked per device, then the rows.
 * Only commands of organizations the caller sees: a moved device's history before the move stays
 * with the organization that queued it.
 */
async function commandPages(ctx: RequestContext, query: CommandQuery, deviceIds: readonly string[]): Promise<Page<CommandView>[]> {
  const ids = [...new Set(deviceIds)];
  const orgIds = await visibleOrgIds(ctx);
  const inOrgs = orgIds === null ? '' : orgIds.length === 0 ? ' and false' : ` and org_id in (${orgIds.map(() => '?').join(', ')})`;
  const where = `device_id in (${ids.map(() => '?').join(', ')})${inOrgs}${query.status ? ' and status = ?' : ''}`;
  const params: unknown[] = [...ids, ...(orgIds ?? []), ...(query.status ? [query.status] : [])];
  const offset = (query.page - 1) * query.limit;
  const [totals, ranked] = await Promise.all([
    ctx.em.execute(`select device_id, count(*)::int as total from device_command where ${where} group by device_id`, params) as Promise<{ device_id: string; total: number }[]>,
    ctx.em.execute(
      `select id from (select id, row_number() over (partition by device_id order by created_at desc, id desc) as n from device_command where ${where}) ranked
        where n > ? and n <= ?`,
      [...params, offset, offset + query.limit],
    ) as Promise<{ id: string }[]>,
  ]);
  const rows = ranked.length === 0 ? [] : await ctx.em.find(DeviceCommand, { id: { $in: ranked.map((r) => r.id) } }, { orderBy: { createdAt: 'desc', id: 'desc' } });
  const total = new Map(totals.map((t) => [t.device_id, t.total]));
  return deviceIds.map((deviceId) =>
    toPage(
      rows.filter((row) => row.deviceId === deviceId).map(commandView),
      total.get(deviceId) ?? 0,
      query,
    ),
  );
}

export const BulkCommandSchema = z
  .object({ deviceIds: z.array(uuid()).min(1).max(MAX_LIMIT).describe('The devices, 1 to 500.'), ...commandFields })
  .strict()
  .superRefine(checkPayload).describe('The same command for many devices.');
export type BulkCommandInput = z.input<typeof BulkCommandSchema>;
export const BulkCommandResultSchema = z
  .object({
    commands: z.array(CommandViewSchema).describe('The commands queued, one per device.'),
    skipped: z
      .array(
        z
          .object({ deviceId: z.string().describe('The device skipped.'), reason: z.string().describe('Why: decommissioned, or the command is already pending.') })
          .describe('A device the command was not queued for, and why.'),
      )
      .describe('Devices skipped: decommissioned, or with the command already pending.'),
    failed: z
      .array(
        z
          .object({
            deviceId: z.string().describe('The device refused.'),
            code: z.string().describe('The error code, as REST answers it (NOT_FOUND, …).'),
            message: z.string().describe('The error message.'),
          })
          .describe('A device the command was refused for.'),
      )
      .describe('Devices refused, with the error each would get alone (unknown or invisible devices: NOT_FOUND).'),
  })
  .meta({ title: 'BulkCommandResult', description: 'What a bulk command did per device.' });
export type BulkCommandResult = z.output<typeof BulkCommandResultSchema>;

/**
 * The same command to many devices, each on its own: devices the caller cannot see fail as not
 * found, decommissioned ones and those with the command already pending are skipped.
 */
export async function bulkCommands(ctx: RequestContext, rawInput: BulkCommandInput): Promise<BulkCommandResult> {
  const input = parseInput(BulkCommandSchema, rawInput);
  const principal = await authorize(ctx, 'devices:execute');
  const ids = [...new Set(input.deviceIds)];
  const visible = await tenantWhere<Device>(ctx, { org: 'orgId', site: 'siteId' });
  const devices = await ctx.em.find(Device, { $and: [{ id: { $in: ids } }, visible ?? {}] });
  const byId = new Map(devices.map((d) => [d.id, d]));
  const result: BulkCommandResult = { commands: [], skipped: [], failed: [] };
  for (const deviceId of ids) {
    const device = byId.get(deviceId);
    if (!device) {
      result.failed.push({ deviceId, code: 'NOT_FOUND', message: notFound('Device').message });
      continue;
    }
    try {
      await authorize(ctx, 'devices:execute', { orgId: device.orgId, resource: 'Device' });
      const command = await withTransaction(ctx, (tx) => queueCommand(tx, device, { type: input.type, payload: input.payload }, principal.userId));
      result.commands.push(commandView(command));
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      if (error.code === 'ALREADY_PENDING') result.skipped.push({ deviceId, reason: 'already_pending' });
      else if (error.code === 'DEVICE_DECOMMISSIONED') result.skipped.push({ deviceId, reason: 'decommissioned' });
      else result.failed.push({ deviceId, code: error.code, message: error.message });
    }
  }
  return result;
}

/** A command as the agent receives it (heartbeat answers and channel pushes). */
export const ClaimedCommandSchema = z.object({ id: uuid(), type: z.string(), payload: z.record(z.string(), z.unknown()) });
export type ClaimedCommand = z.output<typeof ClaimedCommandSchema>;

const CLAIM_BATCH = 50;

/**
 * Hands out the device's pending commands, oldest first, in one statement: `for update skip locked`
 * lets concurrent claimers (heartbeats and channel pushes, on any instance) each take different rows,
 * and a row another claimer has just sent no longer matches `status = 'pending'` once locked, so each
 * command goes out once.
 */
export async function claimCommands(ctx: RequestContext, deviceId: string): Promise<ClaimedCommand[]> {
  return withTransaction(ctx, async (tx) => {
    const rows = (await tx.em.execute(
      `with claimed as (
         update device_command set status = 'sent', sent_at = now(), updated_at = now()
          where id in (select id from device_command where device_id = ? and status = 'pending' order by created_at, id limit ${CLAIM_BATCH} for update skip locked)
          returning id, org_id, type, payload, created_at)
       select id, org_id, type, payload from claimed order by created_at, id`,
      [deviceId],
    )) as (ClaimedRow & { org_id: string })[];
    const prepared = new Map<string, Record<string, unknown>>();
    for (const [type, hooks] of commandTypes()) {
      const own = rows.filter((row) => row.type === type);
      if (own.length > 0 && hooks.toAgent) for (const [id, payload] of await hooks.toAgent(tx, own)) prepared.set(id, payload);
    }
    const delivered: ClaimedCommand[] = [];
    for (const row of rows) {
      const payload = commandTypeOf(row.type)?.toAgent ? prepared.get(row.id) : row.payload;
      if (!payload) {
        // One command the server cannot prepare must not hold back the device's others (nor fail every claim until it times out).
        await failUndeliverable(tx, row.id);
        continue;
      }
      delivered.push({ id: row.id, type: row.type, payload });
      await emit(tx, { type: 'device.command_updated', orgId: row.org_id, data: { commandId: row.id, deviceId, orgId: row.org_id, type: row.type, status: 'sent' } });
    }
    for (const [type, hooks] of commandTypes()) {
      const ids = delivered.filter((command) => command.type === type).map((command) => command.id);
      if (ids.length > 0) await hooks.claimed?.(tx, ids);
    }
    return delivered;
  });
}

/** A claimed command that cannot be handed to its agent: failed, as if the agent had reported so, and never sent. */
async function failUndeliverable(tx: RequestContext, commandId: string): Promise<void> {
  const command = await tx.em.findOneOrFail(DeviceCommand, { id: commandId }, { refresh: true });
  command.sentAt = null;
  await answer(tx, command, { status: 'failed', result: { error: 'The command could not be prepared for its agent' } });
}

/**
 * Puts claimed commands that could not be handed over (the channel closed under the push) back to
 * `pending`, for the next claim; one answered or cancelled meanwhile stays as it is.
 */
export async function releaseCommands(ctx: RequestContext, deviceId: string, commandIds: string[]): Promise<number> {
  if (commandIds.length === 0) return 0;
  return withTransaction(ctx, async (tx) => {
    const rows = (await tx.em.execute(
      `update device_command set status = 'pending', sent_at = null, updated_at = now()
        where device_id = ? and status = 'sent' and id in (${commandIds.map(() => '?').join(', ')})
        returning id, org_id, type`,
      [deviceId, ...commandIds],
    )) as { id: string; org_id: string; type: string }[];
    for (const row of rows) {
      await emit(tx, { type: 'device.command_updated', orgId: row.org_id, data: { commandId: row.id, deviceId, orgId: row.org_id, type: row.type, status: 'pending' } });
    }
    return rows.length;
  });
}

/** Which of these devices have commands waiting to be claimed. */
export async function devicesWithPendingCommands(ctx: RequestContext, deviceIds: string[]): Promise<Set<string>> {
  if (deviceIds.length === 0) return new Set();
  const rows = (await ctx.em.execute(
    `select distinct device_id from device_command where status = 'pending' and device_id in (${deviceIds.map(() => '?').join(', ')})`,
    deviceIds,
  )) as { device_id: string }[];
  return new Set(rows.map((r) => r.device_id));
}

/** Output kept per stream; longer output is cut with a marker. */
const MAX_OUTPUT = 1024 * 1024;
const capped = (text: string | undefined) => (text === undefined ? null : text.length > MAX_OUTPUT ? `${text.slice(0, MAX_OUTPUT)}\n[truncated: ${text.length - MAX_OUTPUT} more characters]` : text);


/** The agent's answer to one of its own commands; answering twice, or a cancelled command, changes nothing. */
export async function completeCommand(ctx: RequestContext, deviceId: string, commandId: string, input: CommandResult): Promise<void> {
  if (!uuid().safeParse(commandId).success) throw notFound('Command');
  await withTransaction(ctx, async (tx) => {
    const command = await tx.em.findOne(DeviceCommand, { id: commandId, deviceId });
    if (!command) throw notFound('Command');
    if (!isOpen(command)) return;
    if (input.status === 'running') {
      await commandTypeOf(command.type)?.started?.(tx, command);
      return;
    }
    await answer(tx, command, input);
  });
}

const isOpen = (command: DeviceCommand) => command.status === 'pending' || command.status === 'sent';

/** Records an open command's final result (and its service's, through `answered`). */
async function answer(tx: RequestContext, command: DeviceCommand, input: CommandResult): Promise<void> {
  const keptElsewhere = (await commandTypeOf(command.type)?.answered?.(tx, command, input)) ?? false;
  Object.assign(command, {
    status: input.status,
    exitCode: input.exitCode ?? null,
    stdout: keptElsewhere ? null : capped(input.stdout),
    stderr: keptElsewhere ? null : capped(input.stderr),
    result: input.result ?? null,
    completedAt: tx.runtime.clock.now(),
  });
  await tx.em.flush();
  await emit(tx, { type: 'device.command_updated', orgId: command.orgId, data: commandEventData(command) });
}

/**
 * Cancels a command not yet finished (pending, or sent and not answered: a late result is then
 * ignored); a finished one is 409. Commands queued by another organization (before the device moved)
 * are not the caller's: 404 unless the caller also sees that organization.
 */
export async function cancelCommand(ctx: RequestContext, deviceId: string, commandId: string): Promise<CommandView> {
  const device = await accessibleDevice(ctx, deviceId, 'devices:execute');
  return withTransaction(ctx, async (tx) => {
    // The row lock orders this with the claim (`for update skip locked`): either took the command first.
    const command = isUuid(commandId) ? await tx.em.findOne(DeviceCommand, { id: commandId, deviceId: device.id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true }) : null;
    if (!command || !(await permits(tx, 'devices:execute', { orgId: command.orgId }))) throw notFound('Command');
    if (!isOpen(command)) throw conflict(`The command has already finished (${command.status})`);
    const handedOut = command.status === 'sent';
    command.status = 'cancelled';
    command.completedAt = tx.runtime.clock.now();
    await tx.em.flush();
    await commandTypeOf(command.type)?.cancelled?.(tx, command, handedOut);
    await recordChange(
      tx,
      { action: 'device.command.cancel', resourceType: 'device', resourceId: device.id, orgId: command.orgId, details: { commandId: command.id, type: command.type, handedOut } },
      commandEventData(command),
    );
    return commandView(command);
  });
}

/**
 * Cancels those of `commandIds` (queued by the calling service) that no agent has taken yet, in one
 * statement: the row locks order it with the claim, so each is either handed out or cancelled, never
 * both. `tellTypes`: each cancelled command's type hears it (`cancelled`, as when a user cancels it:
 * a staged rollout's run_script execution ends with it); without it the caller updates its own rows.
 * Answers the ids cancelled.
 */
export async function cancelQueuedCommands(tx: RequestContext, commandIds: readonly string[], options: { tellTypes?: boolean } = {}): Promise<string[]> {
  if (commandIds.length === 0) return [];
  const rows = (await tx.em.execute(
    `update device_command set status = 'cancelled', completed_at = ?, updated_at = now()
      where id = any(?::uuid[]) and status = 'pending'
      returning id, device_id, org_id, type`,
    [tx.runtime.clock.now(), uuidArray(commandIds)],
  )) as { id: string; device_id: string; org_id: string; type: string }[];
  const hooked = options.tellTypes ? rows.filter((row) => commandTypeOf(row.type)?.cancelled) : [];
  if (hooked.length > 0) {
    const commands = await tx.em.find(DeviceCommand, { id: { $in: hooked.map((row) => row.id) } }, { refresh: true });
    for (const command of commands) await commandTypeOf(command.type)!.cancelled!(tx, command, false);
  }
  for (const row of rows) {
    await emit(tx, { type: 'device.command_updated', orgId: row.org_id, data: { commandId: row.id, deviceId: row.device_id, orgId: row.org_id, type: row.type, status: 'cancelled' } });
  }
  return rows.map((row) => row.id);
}

/** Commands past their `timeoutAt` that no agent answered: `timeout`. Run by a recurring job. */
export async function timeOutCommands(ctx: RequestContext): Promise<number> {
  return withTransaction(ctx, async (tx) => {
    const rows = (await tx.em.execute(
      `update device_command set status = 'timeout', completed_at = now(), updated_at = now()
        where id in (select id from device_command where status in ('pending', 'sent') and timeout_at <= ? order by timeout_at limit 1000 for update skip locked)
        returning id, device_id, org_id, type`,
      [tx.runtime.clock.now()],
    )) as { id: string; device_id: string; org_id: string; type: string }[];
    for (const row of rows) {
      await emit(tx, { type: 'device.command_updated', orgId: row.org_id, data: { commandId: row.id, deviceId: row.device_id, orgId: row.org_id, type: row.type, status: 'timeout' } });
    }
    return rows.length;
  });
}
