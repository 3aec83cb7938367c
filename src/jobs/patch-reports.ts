import { RequestContext } from '../auth/context.js';
import { BUILD_JOB, BuildJobSchema, buildComplianceReport, deleteExpiredReports } from '../services/patching/compliance-reports.js';
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
    name: 'patch-reports.expiry',
    everySeconds: 3600,
    run: async (ctx, now) => {
      const deleted = await deleteExpiredReports(ctx, now);
      if (deleted > 0) ctx.runtime.log.debug({ deleted }, 'expired patch compliance reports deleted');
    },
  },
];
