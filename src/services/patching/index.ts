import { Patch, PatchApproval, PatchDeviceStatus, PatchPolicy } from '../../../entities/patch.js';
import { PatchReport } from '../../../entities/patch-report.js';
import { PatchComplianceResolver } from '../../../resolvers/patch-compliance.js';
import { PatchPolicyResolver } from '../../../resolvers/patch-policies.js';
import { PatchResolver } from '../../../resolvers/patches.js';
import { patchComplianceRouter } from '../../../rest/patch-compliance.js';
import { patchPoliciesRouter } from '../../../rest/patch-policies.js';
import { patchesRouter } from '../../../rest/patches.js';
import { defineDomain } from '../../domain-module.js';
import { patchReportDueWork, patchReportJobs } from '../../jobs/patch-reports.js';
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

/** Patches the agents report (the inventory's `patches` part), per organization and device, their approvals, the patch policies that approve them, and compliance with them (view and reports). */
export const patchingDomain = defineDomain({
  name: 'patching',
  eventSight: { patch: patchEventSight },
  entities: [Patch, PatchDeviceStatus, PatchApproval, PatchPolicy, PatchReport],
  rest: [patchComplianceRouter, patchesRouter, patchPoliciesRouter],
  resolvers: [PatchResolver, PatchPolicyResolver, PatchComplianceResolver],
  deviceReports: { inventory: { patches: patchReport } },
  auditActions: patchingAuditActions,
  permissions,
  orgWork: ['patches'],
  jobs: patchReportJobs,
  dueWork: [...patchingDueWork, ...patchReportDueWork],
});
