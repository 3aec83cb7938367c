import type { AuditActionTable } from '../../events/types.js';

/** Device group audit actions, each with the event its mutation emits (null: recorded, not published). */
export const groupsAuditActions = {
  // Device groups: no webhook catalog event (spec, document 2), so audited only.
  'device_group.create': null,
  'device_group.update': null,
  'device_group.delete': null,
  'device_group.member.add': null,
  'device_group.member.remove': null,
  'device_group.pin': null,
  'device_group.unpin': null,
} as const satisfies AuditActionTable;
type GroupsAuditActions = typeof groupsAuditActions;

declare module '../../events/types.js' {
  interface AuditActionMap extends GroupsAuditActions {}
}
