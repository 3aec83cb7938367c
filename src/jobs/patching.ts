import { approveAgedPatches } from '../services/patching/auto-approval.js';
import type { DueWork } from './types.js';

export const patchingDueWork: DueWork[] = [
  {
    // Patches that age into a rule's minAgeDays: at most once an hour by the service's clock.
    name: 'patch-policies.aging',
    run: async (ctx, now) => {
      const approved = await approveAgedPatches(ctx, now);
      if (approved > 0) ctx.runtime.log.debug({ approved }, 'aged patches approved by patch policies');
    },
  },
];
