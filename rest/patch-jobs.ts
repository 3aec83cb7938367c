import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as patchCommands from '../src/services/patching/patch-commands.js';
import * as patchJobs from '../src/services/patching/patch-jobs.js';
import { call, pathId, RestRouter } from './router.js';

/** Patch install jobs, scans and rollbacks (listed before the patches router: `/patches/<word>` paths). */
export function patchJobsRouter(openapi: OpenApiRegistry): RestRouter {
  return new RestRouter(openapi, 'Patches')
    .get('/patches/jobs', { summary: 'Patch install jobs of the organizations you see, newest first', query: patchJobs.PatchJobListQuery, response: patchJobs.PatchJobPageSchema }, call(patchJobs.listPatchJobs))
    .post('/patches/scan', { summary: 'Ask devices’ agents to report their patches now', body: patchCommands.ScanPatchesSchema, status: 202, response: patchCommands.PatchCommandsResultSchema }, call(patchCommands.scanPatches))
    .post(
      '/patches/:id/rollback',
      { summary: 'Roll a patch back on devices that have it installed (the patch is declined)', params: { id: pathId('Patch') }, body: patchCommands.RollbackPatchSchema, status: 202, response: patchCommands.PatchCommandsResultSchema },
      call(patchCommands.rollbackPatch),
    );
}
