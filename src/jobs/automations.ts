import { RequestContext } from '../auth/context.js';
import { ADVANCE_JOB, AdvanceJobSchema, advanceRun, automationTick } from '../services/automations/automation-runs.js';
import type { DueWork, JobDefinition } from './types.js';

export const automationJobs: JobDefinition<never>[] = [
  {
    // A run's next steps: after it started, when a wait's time is up, when its script executions have reported.
    name: ADVANCE_JOB,
    handler: async (runtime, data: unknown) => advanceRun(RequestContext.system(runtime, ADVANCE_JOB), AdvanceJobSchema.parse(data).runId),
    concurrency: 10,
  },
];

export const automationDueWork: DueWork[] = [
  // Every tick, so that a schedule fires within its cron's minute; waits over and stalled runs are resumed.
  { name: 'automations', run: automationTick },
];
