import { z } from 'zod';
import type { Device } from '../../../entities/device.js';
import { DeviceCommand } from '../../../entities/device-command.js';
import type { RequestContext } from '../../auth/context.js';
import { JsonObjectSchema } from '../shared/json.js';

export const CommandResultSchema = z
  .object({
    status: z.enum(['running', 'completed', 'failed', 'timeout']).describe('running: a progress report (the command started), the command stays open'),
    exitCode: z.number().int().min(-2_147_483_648).max(2_147_483_647).optional(),
    stdout: z.string().max(16 * 1024 * 1024).optional(),
    stderr: z.string().max(16 * 1024 * 1024).optional(),
    result: JsonObjectSchema.optional(),
  })
  .strict();
export type CommandResultInput = z.input<typeof CommandResultSchema>;
export type CommandResult = z.output<typeof CommandResultSchema>;

/** A claimed command's row, before it is prepared for the agent. */
export interface ClaimedRow {
  id: string;
  type: string;
  payload: Record<string, unknown>;
}

/**
 * What a command type's owning domain says about it and does around the generic lifecycle, registered
 * by name through its manifest (`commandTypes`, installed by `installDomains`). Hooks run in the
 * transaction of the step they follow. Types no domain registers are queued and delivered as given.
 */
export interface CommandTypeHooks {
  /**
   * A type several domains queue (`install_software`: software deployments, third-party catalog tests)
   * is registered by each; every registration but one (the type's default owner) says which payloads
   * are its own. `claimed` of a shared type hears every claimed id of the type (match your own rows).
   */
  owns?(payload: Record<string, unknown>): boolean;
  /** only the owning service queues it, with payloads it makes: queueing it by hand is 400 with this message */
  serviceOnly?: string;
  /** not queued twice while one is pending or sent (409 ALREADY_PENDING) */
  singleton?: boolean;
  /** the payload a user's command must have, checked before anything is queued */
  payload?: z.ZodType;
  /** the command is being queued (in its transaction, before the row is written) */
  queued?(tx: RequestContext, device: Device, payload: Record<string, unknown>): Promise<void>;
  /**
   * The payloads as the agent receives them, by command id (e.g. secrets unsealed from the service's
   * own rows; the stored payloads stay as they are). A command left out cannot be delivered: it fails
   * alone, and the others go out.
   */
  toAgent?(tx: RequestContext, commands: ClaimedRow[]): Promise<Map<string, Record<string, unknown>>>;
  /** the payload as views show it (secret values masked) */
  toView?(payload: Record<string, unknown>): Record<string, unknown>;
  /** these commands were just handed to their agent */
  claimed?(tx: RequestContext, commandIds: string[]): Promise<void>;
  /** the agent reported it started the command (`status: "running"`) */
  started?(tx: RequestContext, command: DeviceCommand): Promise<void>;
  /** the command's final result (the agent's, or a failure to deliver it); true when the service kept the output (the command row then does not) */
  answered?(tx: RequestContext, command: DeviceCommand, input: CommandResult): Promise<boolean>;
  /** the command was cancelled by hand; `handedOut`: its agent may already have it */
  cancelled?(tx: RequestContext, command: DeviceCommand, handedOut: boolean): Promise<void>;
}

let commandTypeHooks = new Map<string, CommandTypeHooks>();

/** The hooks of a command type; undefined for types no domain registers. */
export const commandTypeOf = (type: string): CommandTypeHooks | undefined => commandTypeHooks.get(type);

/** Every registered command type with its hooks. */
export const commandTypes = (): ReadonlyMap<string, CommandTypeHooks> => commandTypeHooks;

/** Installs every domain's command types (at start, from the manifests); a shared type needs exactly one default owner (registered without `owns`), else start-up stops. */
export function installCommandTypes(tables: Record<string, CommandTypeHooks>[]): void {
  const byType = new Map<string, CommandTypeHooks[]>();
  for (const [type, hooks] of tables.flatMap((table) => Object.entries(table))) byType.set(type, [...(byType.get(type) ?? []), hooks]);
  commandTypeHooks = new Map();
  for (const [type, registrations] of byType) {
    // Payloads no registration owns go to the default owner: without exactly one, they would fail undelivered.
    if (registrations.length > 1 && registrations.filter((hooks) => !hooks.owns).length !== 1) throw new Error(`The command type ${type} needs exactly one registration without owns`);
    commandTypeHooks.set(type, registrations.length === 1 ? registrations[0] : sharedType(registrations));
  }
}

/** One type's hooks over its registrations, each payload handled by the registration that owns it. */
function sharedType(registrations: CommandTypeHooks[]): CommandTypeHooks {
  const owner = (payload: Record<string, unknown>) => registrations.find((hooks) => hooks.owns?.(payload)) ?? registrations.find((hooks) => !hooks.owns);
  return {
    serviceOnly: registrations.find((hooks) => !hooks.owns)?.serviceOnly ?? registrations.find((hooks) => hooks.serviceOnly)?.serviceOnly,
    queued: (tx, device, payload) => owner(payload)?.queued?.(tx, device, payload) ?? Promise.resolve(),
    async toAgent(tx, rows) {
      const prepared = new Map<string, Record<string, unknown>>();
      for (const hooks of registrations) {
        const own = rows.filter((row) => owner(row.payload) === hooks);
        if (own.length === 0) continue;
        if (!hooks.toAgent) for (const row of own) prepared.set(row.id, row.payload);
        else for (const [id, payload] of await hooks.toAgent(tx, own)) prepared.set(id, payload);
      }
      return prepared;
    },
    toView: (payload) => owner(payload)?.toView?.(payload) ?? payload,
    async claimed(tx, commandIds) {
      for (const hooks of registrations) await hooks.claimed?.(tx, commandIds);
    },
    started: (tx, command) => owner(command.payload)?.started?.(tx, command) ?? Promise.resolve(),
    answered: (tx, command, input) => owner(command.payload)?.answered?.(tx, command, input) ?? Promise.resolve(false),
    cancelled: (tx, command, handedOut) => owner(command.payload)?.cancelled?.(tx, command, handedOut) ?? Promise.resolve(),
  };
}


/**
 * Cancels every open command of the device in one statement (it is decommissioned, or moved to another
 * organization) and tells each one's type (a script execution stops with its command). Answers the
 * cancelled commands.
 */
export async function cancelOpenCommands(tx: RequestContext, deviceId: string): Promise<{ id: string; orgId: string; type: string }[]> {
  const rows = (await tx.em.execute(
    `update device_command c set status = 'cancelled', completed_at = ?, updated_at = now()
      from (select id, status from device_command where device_id = ? and status in ('pending', 'sent') for update) was
      where c.id = was.id
      returning c.id, c.org_id, c.type, was.status as was`,
    [tx.runtime.clock.now(), deviceId],
  )) as { id: string; org_id: string; type: string; was: string }[];
  const hooked = rows.filter((row) => commandTypeHooks.get(row.type)?.cancelled);
  if (hooked.length > 0) {
    const commands = new Map((await tx.em.find(DeviceCommand, { id: { $in: hooked.map((row) => row.id) } }, { refresh: true })).map((command) => [command.id, command]));
    for (const row of hooked) await commandTypeHooks.get(row.type)!.cancelled!(tx, commands.get(row.id)!, row.was === 'sent');
  }
  return rows.map((row) => ({ id: row.id, orgId: row.org_id, type: row.type }));
}
