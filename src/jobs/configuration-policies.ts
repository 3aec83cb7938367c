import { evaluateDuePolicies } from '../services/policies/evaluation.js';
import type { DueWork } from './types.js';

export const configurationPoliciesDueWork: DueWork[] = [
  {
    // Active policies evaluate their devices again every POLICY_EVALUATION_INTERVAL_MINUTES by the service's
    // clock; each tick reads which are due (one indexed statement when none is).
    name: 'configuration-policies.interval',
    run: evaluateDuePolicies,
  },
];
