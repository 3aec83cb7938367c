import type { AuditActionTable } from '../../events/types.js';

/** Audit audit actions, each with the event its mutation emits (null: recorded, not published). */
export const auditAuditActions = {
  'access.denied': null,
  'audit.read': null,
  'audit.export': null,
} as const satisfies AuditActionTable;
type AuditAuditActions = typeof auditAuditActions;

declare module '../../events/types.js' {
  interface AuditActionMap extends AuditAuditActions {}
}
