import { queueDueDeployments } from '../services/software/deployments.js';
import type { DueWork } from './types.js';

export const softwareDeploymentDueWork: DueWork[] = [
  {
    // `at` deployments past their instant, and maintenance_window devices now under maintenance, get their commands.
    name: 'software-deployments',
    run: queueDueDeployments,
  },
];
