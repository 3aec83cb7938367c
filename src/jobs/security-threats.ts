import { failUnansweredScans } from '../services/security/security-scans.js';
import { failUnansweredActions } from '../services/security/threats.js';
import type { DueWork } from './types.js';

export const securityThreatsDueWork: DueWork[] = [
  {
    // Commands time out without telling their type: threat actions and scans left waiting fail here.
    name: 'security.unanswered-commands',
    run: async (ctx, now) => {
      const [threats, scans] = [await failUnansweredActions(ctx, now), await failUnansweredScans(ctx, now)];
      if (threats + scans > 0) ctx.runtime.log.debug({ threats, scans }, 'unanswered threat actions and scans failed');
    },
  },
];
