import { z } from 'zod';
import { RequestContext } from '../auth/context.js';
import { END_JOB, START_JOB, maintenanceTick, runOccurrenceJob } from '../services/maintenance/maintenance-occurrences.js';
import type { DueWork, JobDefinition } from './types.js';

const OccurrenceJobData = z.object({ occurrenceId: z.uuid() });

const occurrenceJob = (name: string): JobDefinition<never> => ({
  name,
  handler: async (runtime, data) => {
    await runOccurrenceJob(RequestContext.system(runtime, name), OccurrenceJobData.parse(data).occurrenceId);
  },
});

export const maintenanceJobs: JobDefinition<never>[] = [occurrenceJob(START_JOB), occurrenceJob(END_JOB)];

export const maintenanceDueWork: DueWork[] = [
  {
    // The safety net behind each occurrence's own jobs, and what extends windows to the horizon.
    name: 'maintenance',
    run: async (ctx, now) => {
      const moved = await maintenanceTick(ctx, now);
      if (moved > 0) ctx.runtime.log.debug({ moved }, 'maintenance occurrences caught up');
    },
  },
];
