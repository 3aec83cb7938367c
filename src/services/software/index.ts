import { DeviceSoftware, SoftwareCatalog, SoftwareVersion } from '../../../entities/software.js';
import { SoftwareDeployment, SoftwareDeploymentResult } from '../../../entities/software-deployment.js';
import { SoftwareResolver } from '../../../resolvers/software.js';
import { SoftwareDeploymentResolver } from '../../../resolvers/software-deployments.js';
import { softwareRouter } from '../../../rest/software.js';
import { softwareDeploymentsRouter } from '../../../rest/software-deployments.js';
import { defineDomain } from '../../domain-module.js';
import { softwareDeploymentDueWork } from '../../jobs/software-deployments.js';
import { softwareDeploymentTimeouts } from '../../subscribers/software-deployments.js';
import { softwareCommandTypes } from './deployments.js';
import { softwareAuditActions } from './events.js';
import { softwareReport } from './inventory.js';

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
 * fleet, and uninstalled through the agent (`uninstall_software`); deployments of catalog versions to
 * devices (`install_software` / `uninstall_software`, the default owner of both types) with each device's result.
 */
export const softwareDomain = defineDomain({
  name: 'software',
  entities: [SoftwareCatalog, SoftwareVersion, DeviceSoftware, SoftwareDeployment, SoftwareDeploymentResult],
  rest: [softwareRouter, softwareDeploymentsRouter],
  resolvers: [SoftwareResolver, SoftwareDeploymentResolver],
  deviceReports: { inventory: { software: softwareReport } },
  commandTypes: softwareCommandTypes,
  dueWork: softwareDeploymentDueWork,
  subscribers: [softwareDeploymentTimeouts],
  auditActions: softwareAuditActions,
  permissions,
  orgWork: ['software'],
});
