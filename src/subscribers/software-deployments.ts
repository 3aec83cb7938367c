import type { EventSubscriber } from '../events/types.js';
import { failTimedOutCommands } from '../services/software/deployments.js';

/** A deployment's command that timed out fails its result (timeouts reach no command hook, only this event). */
export const softwareDeploymentTimeouts: EventSubscriber = {
  name: 'software.deployment-timeouts',
  on: ['device.command_updated'],
  handle: (tx, event) => failTimedOutCommands(tx, [event]),
  handleBatch: (tx, events) => failTimedOutCommands(tx, events),
};
