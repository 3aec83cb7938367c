import { z } from 'zod';
import { Device, type DeviceStatus } from '../../../entities/device.js';
import { DeviceCommand } from '../../../entities/device-command.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, permits } from '../../auth/policy.js';
import { DOMAIN_EVENT_TOPIC } from '../../events/dispatcher.js';
import { selectIterable } from '../../events/subscriptions.js';
import type { DomainEvent, DomainEventMap } from '../../events/types.js';
import type { DeviceEventData } from './events.js';
import { timestamp, uuid } from '../../validation.js';
import { commandView, type CommandView } from './device-commands.js';
import { DeviceStatusSchema, accessibleDevice, maySeeDevice } from './devices.js';

// Live device changes for the dashboard (GraphQL subscriptions), read from the committed domain
// events every instance publishes (the outbox dispatcher → PgPubSub), each decided per event
// against what the subscriber may see.

export const DeviceStatusChangeSchema = z
  .object({
    deviceId: uuid().describe('The device.'),
    orgId: uuid().describe('Its organization.'),
    hostname: z.string().describe('Its hostname.'),
    status: DeviceStatusSchema.describe('The status it changed to.'),
    previousStatus: DeviceStatusSchema.nullable().describe('null: the device was new'),
    lastSeenAt: timestamp().nullable().describe('Its last heartbeat; null if never.'),
  })
  .meta({ title: 'DeviceStatusChange', description: 'A device changed status' });
export type DeviceStatusChange = z.output<typeof DeviceStatusChangeSchema>;

/** The events that carry a status change; `device.updated` only when it says what the status was (entering `updating`). */
const STATUS_EVENTS = new Set<string>(['device.enrolled', 'device.online', 'device.offline', 'device.decommissioned', 'device.updated']);

function statusChange(event: DomainEvent): DeviceEventData | null {
  if (!STATUS_EVENTS.has(event.type)) return null;
  const data = event.data as DeviceEventData;
  // Tag, site, auto-update changes and moves are `device.updated` without a previous status.
  if (event.type === 'device.updated' && data.previousStatus === null) return null;
  return data.previousStatus === data.status ? null : data;
}

/**
 * Status changes (online, offline, updating, decommissioned, enrolled) of the devices the caller may
 * see, optionally of one organization, within moments of the heartbeat or sweep that caused them, on
 * whichever instance that ran. Each event is decided with the organization and site it carries,
 * as `GET /devices/:id` would decide it.
 */
export async function subscribeDeviceStatus(ctx: RequestContext, orgId: string | null): Promise<AsyncIterable<DeviceStatusChange>> {
  if (orgId) await authorize(ctx, 'devices:read', { orgId, resource: 'Organization' });
  else await authorize(ctx, 'devices:read');
  return selectIterable(ctx.runtime.pubsub.subscribe(DOMAIN_EVENT_TOPIC), async (event: DomainEvent): Promise<DeviceStatusChange | null> => {
    const data = statusChange(event);
    if (!data || (orgId && data.orgId !== orgId) || !(await maySeeDevice(ctx, data))) return null;
    return {
      deviceId: data.deviceId,
      orgId: data.orgId,
      hostname: data.hostname,
      status: data.status as DeviceStatus,
      previousStatus: data.previousStatus as DeviceStatus | null,
      lastSeenAt: data.lastSeenAt,
    };
  });
}

/**
 * The device's commands as they change (queued, sent, answered, timed out), from
 * `device.command_updated` events. Each is answered with the command as it is when the event
 * arrives; an event a later one has already overtaken (sent, when the result is in) is skipped, so
 * every answer is a state the command really had and the last is its current one. A device the
 * caller cannot see is `Device not found` at subscribe time; one moved out of its sight since is
 * silent from then on, and so are commands of an organization the caller does not see.
 */
export async function subscribeCommandUpdates(ctx: RequestContext, deviceId: string): Promise<AsyncIterable<CommandView>> {
  await accessibleDevice(ctx, deviceId, 'devices:read');
  return selectIterable(ctx.runtime.pubsub.subscribe(DOMAIN_EVENT_TOPIC), async (event: DomainEvent): Promise<CommandView | null> => {
    if (event.type !== 'device.command_updated') return null;
    const data = event.data as DomainEventMap['device.command_updated'];
    if (data.deviceId !== deviceId) return null;
    // A fresh EntityManager per event: the subscription lives long, its rows must not come from a cache.
    const em = ctx.em.fork();
    const [command, device] = await Promise.all([em.findOne(DeviceCommand, { id: data.commandId, deviceId }), em.findOne(Device, { id: deviceId }, { fields: ['orgId', 'siteId'] })]);
    if (!command || !device || command.status !== data.status || !(await maySeeDevice(ctx, device))) return null;
    // A command queued by the device's organization before a move stays that organization's.
    if (command.orgId !== device.orgId && !(await permits(ctx, 'devices:read', { orgId: command.orgId }))) return null;
    return commandView(command);
  });
}
