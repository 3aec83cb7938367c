import { Rollout, RolloutDevice } from '../../../entities/deployment.js';
import { DeploymentResolver } from '../../../resolvers/deployments.js';
import { deploymentsRouter } from '../../../rest/deployments.js';
import { defineDomain } from '../../domain-module.js';
import { deploymentsDueWork } from '../../jobs/deployments.js';
import { deploymentCommandUpdates } from '../../subscribers/deployments.js';
import { deploymentAuditActions } from './events.js';

const permissions = {
  deployments: ['read', 'write'],
} as const;
type DeploymentsPermissions = typeof permissions;
declare module '../../auth/permissions.js' {
  interface PermissionCatalog extends DeploymentsPermissions {}
}

/**
 * Staged rollouts (`/deployments`): a script, a catalog version, a configuration policy or an agent
 * version handed to an organization's devices wave by wave, pausing when failures pass a threshold.
 */
export const deploymentsDomain = defineDomain({
  name: 'deployments',
  entities: [Rollout, RolloutDevice],
  rest: [deploymentsRouter],
  resolvers: [DeploymentResolver],
  subscribers: [deploymentCommandUpdates],
  dueWork: deploymentsDueWork,
  auditActions: deploymentAuditActions,
  permissions,
  orgWork: ['deployments'],
});
