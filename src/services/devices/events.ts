import type { AuditActionTable } from '../../events/types.js';

/** Every device event carries the device as it now is; `lastSeen` is the spec's name (document 2) for `lastSeenAt`. */
export type DeviceEventData = {
  deviceId: string;
  orgId: string;
  siteId: string | null;
  hostname: string;
  status: string;
  previousStatus: string | null;
  lastSeenAt: string | null;
  lastSeen: string | null;
};

export type EnrollmentKeyEventData = {
  enrollmentKeyId: string;
  orgId: string;
  /** the site its devices enroll into; null for the organization's keys */
  siteId: string | null;
  name: string;
};

/** Device and agent audit actions, each with the event its mutation emits (null: recorded, not published). */
export const devicesAuditActions = {
  'device.enroll': 'device.enrolled',
  'device.provision': null,
  'device.update': 'device.updated',
  'device.move': 'device.updated',
  'device.decommission': null,
  'device.command.create': 'device.command_updated',
  'device.command.cancel': 'device.command_updated',
  'enrollment_key.create': 'enrollment_key.created',
  'enrollment_key.rotate': 'enrollment_key.rotated',
  'enrollment_key.delete': 'enrollment_key.deleted',
  'agent_version.sync': 'agent_version.synced',
  'agent_version.promote': 'agent_version.promoted',
} as const satisfies AuditActionTable;
type DevicesAuditActions = typeof devicesAuditActions;

declare module '../../events/types.js' {
  interface DomainEventMap {
    'device.enrolled': DeviceEventData;
    'device.online': DeviceEventData;
    'device.offline': DeviceEventData;
    'device.updated': DeviceEventData & { changes?: string[] };
    'device.decommissioned': DeviceEventData;
    'device.command_updated': { commandId: string; deviceId: string; orgId: string; type: string; status: string };
    'enrollment_key.created': EnrollmentKeyEventData;
    'enrollment_key.rotated': EnrollmentKeyEventData;
    'enrollment_key.deleted': EnrollmentKeyEventData;
    'agent_version.synced': { version: string; prerelease: boolean; changed: string[]; promoted: string[] };
    'agent_version.promoted': { version: string; component: string | null; promoted: string[] };
  }
  interface AuditActionMap extends DevicesAuditActions {}
}
