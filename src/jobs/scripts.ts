import { RequestContext } from '../auth/context.js';
import { timeOutExecutions } from '../services/scripts/script-executions.js';
import type { JobDefinition } from './types.js';

export const scriptJobs: JobDefinition<never>[] = [
  {
    name: 'scripts.execution-timeouts',
    // The deadline is read from the runtime's clock on each run: a few seconds late at most.
    every: '5 seconds',
    handler: async (runtime) => {
      const timedOut = await timeOutExecutions(RequestContext.system(runtime, 'scripts.execution-timeouts'));
      if (timedOut > 0) runtime.log.debug({ timedOut }, 'script executions timed out');
    },
  },
];
