import type { AuditActionTable } from '../../events/types.js';

/** Software audit actions, each with the event its mutation emits (null: recorded, not published; the spec names no event of the catalog's, of uninstalls or of deployments). */
export const softwareAuditActions = {
  'software_catalog.create': null,
  'software_catalog.update': null,
  'software_catalog.delete': null,
  'software_version.create': null,
  'software_inventory.uninstall': null,
  'software_deployment.create': null,
  'software_deployment.cancel': null,
} as const satisfies AuditActionTable;
type SoftwareAuditActions = typeof softwareAuditActions;

declare module '../../events/types.js' {
  interface AuditActionMap extends SoftwareAuditActions {}
}
