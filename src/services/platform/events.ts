import type { AuditActionTable } from '../../events/types.js';

/** Platform audit actions, each with the event its mutation emits (null: recorded, not published). */
export const platformAuditActions = {
  'graphql.trusted_documents.import': null,
  'bench.write': null,
} as const satisfies AuditActionTable;
type PlatformAuditActions = typeof platformAuditActions;

declare module '../../events/types.js' {
  interface AuditActionMap extends PlatformAuditActions {}
}
