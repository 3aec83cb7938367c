import type { AuditActionTable } from '../../events/types.js';

/** Maintenance audit actions, each with the event its mutation emits (null: recorded, not published). */
export const maintenanceAuditActions = {
  // Maintenance windows: no webhook catalog event (spec, document 2), so audited only; devices entering or leaving maintenance emit their status events.
  'maintenance_window.create': null,
  'maintenance_window.update': null,
  'maintenance_window.delete': null,
  'maintenance_window.cancel': null,
  'maintenance_occurrence.start': null,
  'maintenance_occurrence.end': null,
} as const satisfies AuditActionTable;
type MaintenanceAuditActions = typeof maintenanceAuditActions;

declare module '../../events/types.js' {
  interface AuditActionMap extends MaintenanceAuditActions {}
}
