import { DeviceSoftware, SoftwareCatalog, SoftwareVersion } from '../../../entities/software.js';
import { SoftwareResolver } from '../../../resolvers/software.js';
import { softwareRouter } from '../../../rest/software.js';
import { defineDomain } from '../../domain-module.js';
import { softwareAuditActions } from './events.js';
import { softwareCommandTypes, softwareReport } from './inventory.js';

const permissions = {
  software: ['read', 'write'],
} as const;
type SoftwarePermissions = typeof permissions;
declare module '../../auth/permissions.js' {
  interface PermissionCatalog extends SoftwarePermissions {}
}

/**
 * An organization's software catalog (packages, versions, per-OS installers, search) and the software
 * its devices' agents report installed (the inventory's `software` part): per device, across the
 * fleet, and uninstalled through the agent (`uninstall_software`).
 */
export const softwareDomain = defineDomain({
  name: 'software',
  entities: [SoftwareCatalog, SoftwareVersion, DeviceSoftware],
  rest: [softwareRouter],
  resolvers: [SoftwareResolver],
  deviceReports: { inventory: { software: softwareReport } },
  commandTypes: softwareCommandTypes,
  auditActions: softwareAuditActions,
  permissions,
  orgWork: ['software'],
});
