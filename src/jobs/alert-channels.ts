import { RequestContext } from '../auth/context.js';
import { SEND_JOB, SendJobSchema, sendDelivery, SWEEP_JOB, sweepChannelDeliveries } from '../services/alerts/alert-channels.js';
import { ESCALATE_JOB, ESCALATION_CHECK_JOB, EscalateJobSchema, escalateDue } from '../services/alerts/alert-policies.js';
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
  {
    // One escalation step at its due time; it escalates only if due by the service's clock and the alert is still unattended.
    name: ESCALATE_JOB,
    handler: async (runtime, data: unknown) => void (await escalateDue(RequestContext.system(runtime, ESCALATE_JOB), EscalateJobSchema.parse(data).escalationId)),
  },
  {
    // The backstop of the jobs above, against the service's clock (a step whose job ran early, or was lost).
    name: ESCALATION_CHECK_JOB,
    handler: async (runtime) => void (await escalateDue(RequestContext.system(runtime, ESCALATION_CHECK_JOB))),
    every: (config) => `${config.alertChannels.escalationCheckSeconds} seconds`,
    concurrency: 1,
  },
];
