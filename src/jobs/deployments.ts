import { settleRunningDevices } from '../services/deployments/progress.js';
import type { DueWork } from './types.js';

export const deploymentsDueWork: DueWork[] = [
  {
    // Devices of the types no command carries (a policy evaluated, an agent on its new version) settle here.
    name: 'deployments.settle',
    run: (ctx) => settleRunningDevices(ctx),
  },
];
