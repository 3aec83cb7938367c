import { withTransaction } from '../db/transaction.js';
import type { EventSubscriber } from '../events/types.js';
import { policyCheckTimedOut } from '../services/policies/evaluation.js';
import { remediationEnded } from '../services/policies/remediation.js';

/**
 * Commands' final statuses: a remediation command a policy queued (whoever owns its type) that
 * completed has its device evaluated again; a `policy_check` that timed out settles its device.
 */
export const configurationPolicyCommands: EventSubscriber = {
  name: 'configuration-policies.commands',
  on: ['device.command_updated'],
  handle: (ctx, event) =>
    withTransaction(ctx, async (tx) => {
      await policyCheckTimedOut(tx, event);
      await remediationEnded(tx, event);
    }),
};
