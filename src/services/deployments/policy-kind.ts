import { z } from 'zod';
import { badRequest } from '../../errors.js';
import { uuid } from '../../validation.js';
import type { RolloutKind } from './kinds.js';

// Placeholder until the policies domain lands (branch `policies`): replaced by the policy type.
export const policyKind: RolloutKind = {
  permission: 'deployments:write',
  payload: z.strictObject({ policyId: uuid() }),
  check: () => Promise.reject(badRequest('policy rollouts are not available yet')),
  handOut: () => Promise.reject(badRequest('policy rollouts are not available yet')),
};
