import { PatchJob, PatchJobDevice, PatchScheduleFire } from '../../../entities/patch-job.js';
import { Patch, PatchApproval, PatchDeviceStatus, PatchPolicy } from '../../../entities/patch.js';
import { PatchReport } from '../../../entities/patch-report.js';
import { ThirdPartyCatalogEntry, VulnerabilityCache } from '../../../entities/third-party-catalog.js';
import { PatchComplianceResolver } from '../../../resolvers/patch-compliance.js';
import { PatchJobResolver } from '../../../resolvers/patch-jobs.js';
import { PatchPolicyResolver } from '../../../resolvers/patch-policies.js';
import { PatchResolver } from '../../../resolvers/patches.js';
import { ThirdPartyCatalogResolver } from '../../../resolvers/third-party-catalog.js';
import { patchComplianceRouter } from '../../../rest/patch-compliance.js';
import { patchJobsRouter } from '../../../rest/patch-jobs.js';
import { patchPoliciesRouter } from '../../../rest/patch-policies.js';
import { patchesRouter } from '../../../rest/patches.js';
import { thirdPartyCatalogRouter } from '../../../rest/third-party-catalog.js';
import { defineDomain } from '../../domain-module.js';
import { patchEnrichmentDueWork, patchEnrichmentJobs } from '../../jobs/patch-enrichment.js';
import { patchReportDueWork, patchReportJobs } from '../../jobs/patch-reports.js';
import { patchingDueWork } from '../../jobs/patching.js';
import { patchingAuditActions } from './events.js';
import { patchCommandTypes } from './patch-commands.js';
import { patchEventSight, patchReport } from './patches.js';
import { catalogCommandTypes } from './third-party-catalog.js';

const permissions = {
  patches: ['read', 'write'],
} as const;
type PatchingPermissions = typeof permissions;
declare module '../../auth/permissions.js' {
  interface PermissionCatalog extends PatchingPermissions {}
}

/**
 * Patches the agents report (the inventory's `patches` part), per organization and device, their
 * approvals, the patch policies that approve them and their install jobs, scans and rollbacks,
 * compliance with them (view and reports), their CVE enrichment, and the platform's third-party catalog.
 */
export const patchingDomain = defineDomain({
  name: 'patching',
  eventSight: { patch: patchEventSight },
  entities: [Patch, PatchDeviceStatus, PatchApproval, PatchPolicy, PatchJob, PatchJobDevice, PatchScheduleFire, PatchReport, ThirdPartyCatalogEntry, VulnerabilityCache],
  // Routers of `/patches/<word>` routes come before `/patches/:id`.
  rest: [patchJobsRouter, patchComplianceRouter, patchesRouter, patchPoliciesRouter, thirdPartyCatalogRouter],
  resolvers: [PatchResolver, PatchPolicyResolver, PatchJobResolver, PatchComplianceResolver, ThirdPartyCatalogResolver],
  deviceReports: { inventory: { patches: patchReport } },
  commandTypes: { ...patchCommandTypes, ...catalogCommandTypes },
  auditActions: patchingAuditActions,
  permissions,
  orgWork: ['patches'],
  dueWork: [...patchingDueWork, ...patchEnrichmentDueWork, ...patchReportDueWork],
  jobs: [...patchEnrichmentJobs, ...patchReportJobs],
});
