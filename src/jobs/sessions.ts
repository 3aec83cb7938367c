import { RequestContext } from '../auth/context.js';
import { pruneAuthRecords } from '../services/identity/auth.js';
import type { JobDefinition } from './types.js';

export const sessionJobs: JobDefinition<never>[] = [
  {
    name: 'auth.prune',
    every: '1 hour',
    handler: async (runtime) => {
      const removed = await pruneAuthRecords(RequestContext.system(runtime, 'auth.prune'));
      runtime.log.debug(removed, 'pruned old login attempts and refresh tokens');
    },
  },
];
