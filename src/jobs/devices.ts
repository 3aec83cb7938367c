import { RequestContext } from '../auth/context.js';
import { sweepDeviceStatus } from '../services/devices/agents.js';
import { timeOutCommands } from '../services/devices/device-commands.js';
import type { JobDefinition } from './types.js';

export const deviceJobs: JobDefinition<never>[] = [
  {
    name: 'devices.status-sweep',
    // Often enough that a device turns offline within a fifth of the threshold after it.
    every: (config) => `${Math.max(1, Math.min(60, Math.floor(config.devices.offlineAfterSeconds / 5)))} seconds`,
    handler: async (runtime) => {
      const changed = await sweepDeviceStatus(RequestContext.system(runtime, 'devices.status-sweep'));
      if (changed > 0) runtime.log.debug({ changed }, 'devices marked offline');
    },
  },
  {
    name: 'devices.command-timeouts',
    every: '1 minute',
    handler: async (runtime) => {
      await timeOutCommands(RequestContext.system(runtime, 'devices.command-timeouts'));
    },
  },
];
