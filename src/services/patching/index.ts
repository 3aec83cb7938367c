import { Patch, PatchApproval, PatchDeviceStatus } from '../../../entities/patch.js';
import { PatchResolver } from '../../../resolvers/patches.js';
import { patchesRouter } from '../../../rest/patches.js';
import { defineDomain } from '../../domain-module.js';
import { patchingAuditActions } from './events.js';
import { patchReport } from './patches.js';

const permissions = {
  patches: ['read', 'write'],
} as const;
type PatchingPermissions = typeof permissions;
declare module '../../auth/permissions.js' {
  interface PermissionCatalog extends PatchingPermissions {}
}

/** Patches the agents report (the inventory's `patches` part), per organization and device, and their approvals. */
export const patchingDomain = defineDomain({
  name: 'patching',
  entities: [Patch, PatchDeviceStatus, PatchApproval],
  rest: [patchesRouter],
  resolvers: [PatchResolver],
  deviceReports: { inventory: { patches: patchReport } },
  auditActions: patchingAuditActions,
  permissions,
  orgWork: ['patches'],
});
