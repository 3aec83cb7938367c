import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as deployments from '../src/services/software/deployments.js';
import { call, pathId, RestRouter } from './router.js';

/** Software deployments: a catalog version installed on or uninstalled from devices, with each device's result. */
export function softwareDeploymentsRouter(openapi: OpenApiRegistry): RestRouter {
  const deployment = { id: pathId('Software deployment') };
  return new RestRouter(openapi, 'Software')
    .get('/software/deployments', { summary: 'Software deployments of the organizations you see, newest first', query: deployments.SoftwareDeploymentListQuery, response: deployments.SoftwareDeploymentPageSchema }, call(deployments.listSoftwareDeployments))
    .post('/software/deployments', { summary: 'Install or uninstall a catalog version on devices', body: deployments.CreateSoftwareDeploymentSchema, status: 201, response: deployments.SoftwareDeploymentViewSchema }, call(deployments.createSoftwareDeployment))
    .get('/software/deployments/:id', { summary: 'One software deployment', params: deployment, response: deployments.SoftwareDeploymentViewSchema }, call(deployments.getSoftwareDeployment))
    .get(
      '/software/deployments/:id/results',
      { summary: 'A deployment’s devices and where each stands, by hostname', params: deployment, query: deployments.SoftwareDeploymentResultListQuery, response: deployments.SoftwareDeploymentResultPageSchema },
      call(deployments.listSoftwareDeploymentResults),
    )
    .post('/software/deployments/:id/cancel', { summary: 'Cancel a deployment: devices still pending are not sent their command', params: deployment, response: deployments.SoftwareDeploymentViewSchema }, call(deployments.cancelSoftwareDeployment));
}
