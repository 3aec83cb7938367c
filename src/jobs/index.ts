import type { JobDefinition } from './types.js';
import { alertChannelJobs } from './alert-channels.js';
import { alertJobs } from './alerts.js';
import { automationDueWork, automationJobs } from './automations.js';
import { deviceJobs } from './devices.js';
import { dueWorkJob } from './due-work.js';
import { maintenanceDueWork, maintenanceJobs } from './maintenance.js';
import { scriptJobs } from './scripts.js';
import { sessionJobs } from './sessions.js';
import { webhookJobs } from './webhooks.js';

/** Every domain's job definitions. A duplicate name is a programming error and stops start-up. */
export function collectJobs(...lists: JobDefinition<never>[][]): JobDefinition<never>[] {
  const seen = new Set<string>();
  const all = lists.flat();
  for (const job of all) {
    if (seen.has(job.name)) throw new Error(`Duplicate job definition: ${job.name}`);
    seen.add(job.name);
  }
  return all;
}

export const jobDefinitions: JobDefinition<never>[] = collectJobs(sessionJobs, webhookJobs, deviceJobs, maintenanceJobs, alertChannelJobs, alertJobs, scriptJobs, automationJobs, [
  dueWorkJob(automationDueWork, maintenanceDueWork),
]);
