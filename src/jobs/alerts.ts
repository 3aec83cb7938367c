import { RequestContext } from '../auth/context.js';
import { checkDueConditions } from '../services/alerts/alert-evaluation.js';
import { endSuppressions } from '../services/alerts/alerts.js';
import type { JobDefinition } from './types.js';

export const alertJobs: JobDefinition<never>[] = [
  {
    // Duration conditions of devices that send nothing more (gone silent) still fire, and suppressions
    // end, within this period of their time.
    name: 'alerts.due-conditions',
    every: '5 seconds',
    handler: async (runtime) => {
      const ctx = RequestContext.system(runtime, 'alerts.due-conditions');
      await checkDueConditions(ctx);
      await endSuppressions(ctx);
    },
  },
];
