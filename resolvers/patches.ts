import { args, cursorArgs, id, input, mutation, operations, query } from '../src/graphql/contract.js';
import * as patchApprovals from '../src/services/patching/patch-approvals.js';
import * as patches from '../src/services/patching/patches.js';
import { connectionOf, cursored } from './shared.js';

export const PatchResolver = operations({
  patches: query(connectionOf(patches.PatchViewSchema), [cursorArgs('PatchListArgs', patches.PatchListQuery)], cursored(patches.listPatches, (p) => p.createdAt, patches.countPatches), { description: 'Patches of the organizations the caller sees, newest first (as GET /patches)' }),
  patch: query(patches.PatchDetailSchema, [id], patches.getPatch, { description: 'One patch, with the devices the caller sees that report it' }),
  patchSources: query(patches.PatchSourceListSchema, [args('PatchSourcesArgs', patches.PatchSourcesQuery)], patches.listPatchSources, { description: 'Patches per source, every source' }),
  patchApprovals: query(connectionOf(patchApprovals.PatchApprovalViewSchema), [cursorArgs('PatchApprovalListArgs', patchApprovals.PatchApprovalListQuery)], cursored(patchApprovals.listPatchApprovals, (a) => a.decidedAt, patchApprovals.countPatchApprovals), {
    description: 'Approval decisions on patches, newest first',
  }),
  approvePatch: mutation(patches.PatchViewSchema, [id, input('ApprovePatchInput', patchApprovals.PatchDecisionSchemaInput, { nullable: true })], (ctx, patch, decision) => patchApprovals.approvePatch(ctx, patch, decision ?? {}), {
    description: 'Approves a patch',
  }),
  declinePatch: mutation(patches.PatchViewSchema, [id, input('DeclinePatchInput', patchApprovals.PatchDecisionSchemaInput, { nullable: true })], (ctx, patch, decision) => patchApprovals.declinePatch(ctx, patch, decision ?? {}), {
    description: 'Declines a patch',
  }),
  deferPatch: mutation(patches.PatchViewSchema, [id, input('DeferPatchInput', patchApprovals.DeferPatchSchema)], patchApprovals.deferPatch, { description: 'Defers the decision on a patch until a future instant' }),
  bulkApprovePatches: mutation(patchApprovals.BulkApproveResultSchema, [input('BulkApprovePatchesInput', patchApprovals.BulkApproveSchema)], patchApprovals.bulkApprovePatches, { description: 'Approves several patches; answers what was approved and what failed' }),
});
