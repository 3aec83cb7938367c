import { RequestContext } from '../auth/context.js';
import { BUILD_JOB, BuildJobSchema, buildComplianceReport, deleteExpiredReports, requeueStalledReports } from '../services/patching/compliance-reports.js';
import type { DueWork, JobDefinition } from './types.js';

export const patchReportJobs: JobDefinition<never>[] = [
  {
    // A requested compliance report: built once, its file stored in its row.
    name: BUILD_JOB,
    handler: async (runtime, data: unknown) => buildComplianceReport(RequestContext.system(runtime, BUILD_JOB), BuildJobSchema.parse(data).reportId),
    lockLifetimeMs: 300_000,
    concurrency: 2,
  },
];

export const patchReportDueWork: DueWork[] = [
  {
    // Every tick: an indexed probe of the unfinished reports (few: a build takes seconds).
    name: 'patch-reports.requeue',
    run: async (ctx, now) => {
      const requeued = await requeueStalledReports(ctx, now);
      if (requeued > 0) ctx.runtime.log.warn({ requeued }, 'stalled patch compliance reports queued again');
    },
  },
  {
    name: 'patch-reports.expiry',
    everySeconds: 3600,
    run: async (ctx, now) => {
      const deleted = await deleteExpiredReports(ctx, now);
      if (deleted > 0) ctx.runtime.log.debug({ deleted }, 'expired patch compliance reports deleted');
    },
  },
];
