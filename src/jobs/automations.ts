import { RequestContext } from '../auth/context.js';
import { ADVANCE_JOB, AdvanceJobSchema, TICK_JOB, advanceRun, automationTick } from '../services/automations/automation-runs.js';
import type { JobDefinition } from './types.js';

export const automationJobs: JobDefinition<never>[] = [
  {
    // A run's next steps: after it started, when a wait's time is up, when its script executions have reported.
    name: ADVANCE_JOB,
    handler: async (runtime, data: unknown) => advanceRun(RequestContext.system(runtime, ADVANCE_JOB), AdvanceJobSchema.parse(data).runId),
    concurrency: 10,
  },
  {
    // Often enough that a schedule fires within its cron's minute; reads the runtime's clock, so tests move time instead of waiting.
    name: TICK_JOB,
    handler: async (runtime) => automationTick(RequestContext.system(runtime, TICK_JOB)),
    every: '5 seconds',
    concurrency: 1,
  },
];
