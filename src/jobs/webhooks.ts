import { z } from 'zod';
import { RequestContext } from '../auth/context.js';
import { DELIVER_JOB, deliver, SWEEP_JOB, sweepDeliveries } from '../services/webhook-deliveries.js';
import type { JobDefinition } from './types.js';

const DeliverData = z.object({ deliveryId: z.uuid() });

export const webhookJobs: JobDefinition<never>[] = [
  {
    name: DELIVER_JOB,
    handler: async (runtime, data: unknown) => deliver(RequestContext.system(runtime, DELIVER_JOB), DeliverData.parse(data)),
    // Above the 30 s request timeout plus the claim margin, so a live worker never loses its job.
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
