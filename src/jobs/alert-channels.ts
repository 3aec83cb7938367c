import { RequestContext } from '../auth/context.js';
import { SEND_JOB, SendJobSchema, sendDelivery, SWEEP_JOB, sweepChannelDeliveries } from '../services/alert-channels.js';
import type { JobDefinition } from './types.js';

export const alertChannelJobs: JobDefinition<never>[] = [
  {
    // One delivery's attempt (the first, queued on commit, or a retry at its backoff's due time).
    name: SEND_JOB,
    handler: async (runtime, data: unknown) => sendDelivery(RequestContext.system(runtime, SEND_JOB), SendJobSchema.parse(data).deliveryId),
    concurrency: 20,
  },
  {
    name: SWEEP_JOB,
    handler: async (runtime) => void (await sweepChannelDeliveries(RequestContext.system(runtime, SWEEP_JOB))),
    every: '1 minute',
    concurrency: 1,
  },
];
