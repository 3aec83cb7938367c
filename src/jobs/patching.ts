import { withTransaction } from '../db/transaction.js';
import { approveAgedPatches } from '../services/patching/auto-approval.js';
import { installForOrg, patchJobsTick } from '../services/patching/patch-jobs.js';
import type { DueWork } from './types.js';

export const patchingDueWork: DueWork[] = [
  {
    // Patches that age into a rule's minAgeDays: at most once an hour by the service's clock; the
    // immediate policies of the organizations concerned then install them.
    name: 'patch-policies.aging',
    run: async (ctx, now) => {
      const { approved, orgIds } = await approveAgedPatches(ctx, now);
      if (approved > 0) ctx.runtime.log.debug({ approved }, 'aged patches approved by patch policies');
      for (const orgId of orgIds) await withTransaction(ctx, (tx) => installForOrg(tx, orgId));
    },
  },
  {
    // Cron policies' instants, deferred devices whose maintenance is over, install commands timed out.
    name: 'patch-jobs',
    run: patchJobsTick,
  },
];
