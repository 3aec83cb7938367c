import type { DeviceEventData, EventSubscriber } from '../events/types.js';
import { reconcileDeviceMemberships } from '../services/device-groups.js';

/**
 * Keeps materialized group membership current as devices change: dynamic groups re-match the device,
 * and a device that moved out of a group's organization or site, or was decommissioned, leaves. It
 * re-reads the device and its groups, so a repeated or late event changes nothing (at least once).
 */
export const deviceGroupMembership: EventSubscriber = {
  name: 'device-groups.membership',
  on: ['device.enrolled', 'device.updated', 'device.online', 'device.offline', 'device.decommissioned'],
  // Every event of `on` carries DeviceEventData.
  handle: (tx, event) => reconcileDeviceMemberships(tx, (event.data as DeviceEventData).deviceId),
};
