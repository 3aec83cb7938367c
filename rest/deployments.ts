import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as rollouts from '../src/services/deployments/rollouts.js';
import { call, pathId, RestRouter } from './router.js';

/** Staged rollouts and their devices. */
export function deploymentsRouter(openapi: OpenApiRegistry): RestRouter {
  const rollout = { id: pathId('Deployment') };
  const action = (verb: string, summary: string, service: typeof rollouts.startDeployment) =>
    [`/deployments/:id/${verb}`, { summary, params: rollout, response: rollouts.DeploymentViewSchema }, call(service)] as const;
  return new RestRouter(openapi, 'Deployments')
    .get('/deployments', { summary: 'Staged rollouts of the organizations you see, newest first', query: rollouts.DeploymentListQuery, response: rollouts.DeploymentPageSchema }, call(rollouts.listDeployments))
    .post('/deployments', { summary: 'Create a staged rollout (draft)', body: rollouts.CreateDeploymentSchema, status: 201, response: rollouts.DeploymentViewSchema }, call(rollouts.createDeployment))
    .get('/deployments/:id', { summary: 'One staged rollout with its waves', params: rollout, response: rollouts.DeploymentViewSchema }, call(rollouts.getDeployment))
    .patch('/deployments/:id', { summary: 'Change a rollout in draft or ready', params: rollout, body: rollouts.UpdateDeploymentSchema, response: rollouts.DeploymentViewSchema }, call(rollouts.updateDeployment))
    .delete('/deployments/:id', { summary: 'Delete a rollout in draft or ready', params: rollout, status: 204 }, call(rollouts.deleteDeployment))
    .post(...action('initialize', 'Cut the targeted devices into waves (draft → ready)', rollouts.initializeDeployment))
    .post(...action('start', 'Start the first wave (ready → running)', rollouts.startDeployment))
    .post(...action('pause', 'Pause a running rollout', rollouts.pauseDeployment))
    .post(...action('resume', 'Resume a paused rollout where it stopped', rollouts.resumeDeployment))
    .post(...action('cancel', 'Cancel a rollout: devices not yet handed the change are left out', rollouts.cancelDeployment))
    .get('/deployments/:id/devices', { summary: 'A rollout’s devices in its order', params: rollout, query: rollouts.DeploymentDeviceListQuery, response: rollouts.DeploymentDevicePageSchema }, call(rollouts.listDeploymentDevices))
    .post(
      '/deployments/:id/devices/:deviceId/retry',
      { summary: 'Hand a failed device its change again', params: { ...rollout, deviceId: pathId('Device') }, status: 202, response: rollouts.RetryResultSchema },
      call(rollouts.retryDeploymentDevice),
    );
}
