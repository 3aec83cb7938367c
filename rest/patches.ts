import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as patchApprovals from '../src/services/patching/patch-approvals.js';
import * as patches from '../src/services/patching/patches.js';
import { call, pathId, RestRouter } from './router.js';

/** Patches the agents report, and their approvals. */
export function patchesRouter(openapi: OpenApiRegistry): RestRouter {
  const patch = { id: pathId('Patch') };
  return new RestRouter(openapi, 'Patches')
    .get('/patches', { summary: 'Patches of the organizations you see, newest first', query: patches.PatchListQuery, response: patches.PatchPageSchema }, call(patches.listPatches))
    .get('/patches/sources', { summary: 'Patches per source (every source)', query: patches.PatchSourcesQuery, response: patches.PatchSourceListSchema }, call(patches.listPatchSources))
    .get('/patches/approvals', { summary: 'Approval decisions, newest first', query: patchApprovals.PatchApprovalListQuery, response: patchApprovals.PatchApprovalPageSchema }, call(patchApprovals.listPatchApprovals))
    .post('/patches/bulk-approve', { summary: 'Approve several patches; answers what was approved and what failed', body: patchApprovals.BulkApproveSchema, response: patchApprovals.BulkApproveResultSchema }, call(patchApprovals.bulkApprovePatches))
    .get('/patches/:id', { summary: 'One patch, with the devices that report it', params: patch, response: patches.PatchDetailSchema }, call(patches.getPatch))
    .post('/patches/:id/approve', { summary: 'Approve a patch', params: patch, body: patchApprovals.PatchDecisionSchemaInput, response: patches.PatchViewSchema }, call(patchApprovals.approvePatch))
    .post('/patches/:id/decline', { summary: 'Decline a patch', params: patch, body: patchApprovals.PatchDecisionSchemaInput, response: patches.PatchViewSchema }, call(patchApprovals.declinePatch))
    .post('/patches/:id/defer', { summary: 'Defer the decision on a patch until a future instant', params: patch, body: patchApprovals.DeferPatchSchema, response: patches.PatchViewSchema }, call(patchApprovals.deferPatch));
}
