import { Patch, PatchApproval, PatchDeviceStatus, PatchPolicy } from '../../../entities/patch.js';
import { PatchReport } from '../../../entities/patch-report.js';
import { PatchPolicyResolver } from '../../../resolvers/patch-policies.js';
import { PatchResolver } from '../../../resolvers/patches.js';
import { patchPoliciesRouter } from '../../../rest/patch-policies.js';
import { patchesRouter } from '../../../rest/patches.js';
import { defineDomain } from '../../domain-module.js';
import { patchingDueWork } from '../../jobs/patching.js';
import { patchingAuditActions } from './events.js';
import { patchEventSight, patchReport } from './patches.js';

const permissions = {
  patches: ['read', 'write'],
} as const;
type PatchingPermissions = typeof permissions;
declare module '../../auth/permissions.js' {
  interface PermissionCatalog extends PatchingPermissions {}
}

/** Patches the agents report (the inventory's `patches` part), per organization and device, their approvals and the patch policies that approve them. */
export const patchingDomain = defineDomain({
  name: 'patching',
  eventSight: { patch: patchEventSight },
  entities: [Patch, PatchDeviceStatus, PatchApproval, PatchPolicy, PatchReport],
  rest: [patchesRouter, patchPoliciesRouter],
  resolvers: [PatchResolver, PatchPolicyResolver],
  deviceReports: { inventory: { patches: patchReport } },
  auditActions: patchingAuditActions,
  permissions,
  orgWork: ['patches'],
  dueWork: patchingDueWork,
});
