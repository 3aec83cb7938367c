import type { EventSubscriber } from '../events/types.js';
import { recordCommandUpdates } from '../services/deployments/progress.js';

/** Rollout devices follow the commands that carry their change (handed out, then a final status), matched by commandId. */
export const deploymentCommandUpdates: EventSubscriber = {
  name: 'deployments.command-updates',
  on: ['device.command_updated'],
  handle: (tx, event) => recordCommandUpdates(tx, [event]),
  handleBatch: (tx, events) => recordCommandUpdates(tx, events),
};
