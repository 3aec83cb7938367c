import { RequestContext } from '../auth/context.js';
import { DELIVER_JOB, deliver, DeliverJobSchema, SWEEP_JOB, sweepDeliveries } from '../services/webhooks/delivery-pipeline.js';
import type { JobDefinition } from './types.js';

export const webhookJobs: JobDefinition<never>[] = [
  {
    // A retry (or a sweep's re-queue) comes due: handed to this instance's delivery worker, which attempts it
    // when its webhook has a free slot. The job ends once the worker has looked at it, not after the request.
    name: DELIVER_JOB,
    handler: async (runtime, data: unknown) => deliver(RequestContext.system(runtime, DELIVER_JOB), DeliverJobSchema.parse(data)),
    lockLifetimeMs: 60_000,
    concurrency: 20,
  },
  {
    name: SWEEP_JOB,
    handler: async (runtime) => void (await sweepDeliveries(RequestContext.system(runtime, SWEEP_JOB))),
    every: '1 minute',
    concurrency: 1,
  },
];
