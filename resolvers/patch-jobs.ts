import { cursorArgs, id, input, mutation, operations, query } from '../src/graphql/contract.js';
import * as patchCommands from '../src/services/patching/patch-commands.js';
import * as patchJobs from '../src/services/patching/patch-jobs.js';
import { connectionOf, cursored } from './shared.js';

export const PatchJobResolver = operations({
  patchJobs: query(connectionOf(patchJobs.PatchJobViewSchema), [cursorArgs('PatchJobListArgs', patchJobs.PatchJobListQuery)], cursored(patchJobs.listPatchJobs, (j) => j.createdAt, patchJobs.countPatchJobs), {
    description: 'Patch install jobs of the organizations the caller sees, newest first (as GET /patches/jobs)',
  }),
  scanPatches: mutation(patchCommands.PatchCommandsResultSchema, [input('ScanPatchesInput', patchCommands.ScanPatchesSchema)], patchCommands.scanPatches, {
    description: 'Asks devices’ agents to report their patches now (as POST /patches/scan)',
  }),
  rollbackPatch: mutation(patchCommands.PatchCommandsResultSchema, [id, input('RollbackPatchInput', patchCommands.RollbackPatchSchema, { nullable: true })], (ctx, patch, rollback) => patchCommands.rollbackPatch(ctx, patch, rollback ?? {}), {
    description: 'Rolls a patch back on devices that have it installed and declines it (as POST /patches/:id/rollback)',
  }),
});
