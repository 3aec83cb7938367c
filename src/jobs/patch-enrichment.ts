import { RequestContext } from '../auth/context.js';
import { enrichmentDue, enrichPatches, ENRICH_JOB } from '../services/patching/cve-enrichment.js';
import type { DueWork, JobDefinition } from './types.js';

/** One enrichment run: the job a patch report schedules, and the tick's retries (with their backoff, by the service clock). */
async function enrich(ctx: RequestContext): Promise<void> {
  const { enriched, failed } = await enrichPatches(ctx);
  if (enriched > 0 || failed > 0) ctx.runtime.log.debug({ enriched, failed }, 'third-party patches enriched');
}

export const patchEnrichmentJobs: JobDefinition<never>[] = [
  { name: ENRICH_JOB, concurrency: 1, lockLifetimeMs: 5 * 60_000, handler: (runtime) => enrich(RequestContext.system(runtime, ENRICH_JOB)) },
];

export const patchEnrichmentDueWork: DueWork[] = [
  {
    name: 'patches.enrichment',
    run: async (ctx, now) => {
      if (await enrichmentDue(ctx, now)) await enrich(ctx);
    },
  },
];
