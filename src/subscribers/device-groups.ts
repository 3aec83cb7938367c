import type { DomainEvent, EventSubscriber } from '../events/types.js';
import type { DeviceEventData } from '../services/devices/events.js';
import { reconcileDeviceMemberships } from '../services/groups/group-membership.js';

// Every event of `on` carries DeviceEventData.
const deviceOf = (event: DomainEvent) => (event.data as DeviceEventData).deviceId;

/**
 * Keeps materialized group membership current as devices change: dynamic groups re-match the device,
 * and a device that moved out of a group's organization or site, or was decommissioned, leaves. A
 * dispatcher batch is reconciled at once (each device once, a bounded number of statements); it
 * re-reads the devices and their groups, so a repeated or late event changes nothing (at least once).
 */
export const deviceGroupMembership: EventSubscriber = {
  name: 'device-groups.membership',
  on: ['device.enrolled', 'device.updated', 'device.online', 'device.offline', 'device.decommissioned'],
  handle: (tx, event) => reconcileDeviceMemberships(tx, [deviceOf(event)]),
  handleBatch: (tx, events) => reconcileDeviceMemberships(tx, events.map(deviceOf)),
};
