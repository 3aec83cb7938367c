import { MaintenanceOccurrence, MaintenanceWindow } from '../../../entities/maintenance.js';
import { maintenanceRouter } from '../../../rest/maintenance.js';
import { MaintenanceResolver } from '../../../resolvers/maintenance.js';
import { defineDomain } from '../../domain-module.js';
import { maintenanceDueWork, maintenanceJobs } from '../../jobs/maintenance.js';
import { maintenanceAuditActions } from './events.js';

const permissions = {
  maintenance: ['read', 'write'],
} as const;
type MaintenancePermissions = typeof permissions;
declare module '../../auth/permissions.js' {
  interface PermissionCatalog extends MaintenancePermissions {}
}

/** Maintenance windows and their occurrences. */
export const maintenanceDomain = defineDomain({
  name: 'maintenance',
  entities: [MaintenanceWindow, MaintenanceOccurrence],
  rest: [maintenanceRouter],
  resolvers: [MaintenanceResolver],
  jobs: [...maintenanceJobs],
  dueWork: maintenanceDueWork,
  auditActions: maintenanceAuditActions,
  permissions,
  orgWork: ['maintenance'],
});
