import { ID } from 'type-graphql';
import { arg, cursorArgs, id, input, mutation, operations, query } from '../src/graphql/contract.js';
import * as rollouts from '../src/services/deployments/rollouts.js';
import { uuid } from '../src/validation.js';
import { connectionOf, cursored } from './shared.js';

// The devices' list takes its rollout's id beside the page.
const DeviceListArgs = rollouts.DeploymentDeviceListQuery.extend({ id: uuid().describe('the rollout') });

const action = (service: typeof rollouts.startDeployment, description: string) => mutation(rollouts.DeploymentViewSchema, [id], service, { description });

export const DeploymentResolver = operations({
  deployments: query(connectionOf(rollouts.DeploymentViewSchema), [cursorArgs('DeploymentListArgs', rollouts.DeploymentListQuery)], cursored(rollouts.listDeployments, (d) => d.createdAt, rollouts.countDeployments), {
    description: 'Staged rollouts of the organizations the caller sees, newest first (as GET /deployments)',
  }),
  deployment: query(rollouts.DeploymentViewSchema, [id], rollouts.getDeployment, { description: 'One staged rollout with its waves' }),
  deploymentDevices: query(connectionOf(rollouts.DeploymentDeviceViewSchema), [cursorArgs('DeploymentDeviceListArgs', DeviceListArgs)], rollouts.deploymentDevicesConnection, {
    description: 'A rollout’s devices in its order (as GET /deployments/:id/devices)',
  }),
  createDeployment: mutation(rollouts.DeploymentViewSchema, [input('CreateDeploymentInput', rollouts.CreateDeploymentSchema)], rollouts.createDeployment, { description: 'Creates a staged rollout (draft)' }),
  updateDeployment: mutation(rollouts.DeploymentViewSchema, [id, input('UpdateDeploymentInput', rollouts.UpdateDeploymentSchema)], rollouts.updateDeployment, { description: 'Changes a rollout in draft or ready' }),
  deleteDeployment: mutation(Boolean, [id], rollouts.deleteDeployment, { description: 'Deletes a rollout in draft or ready' }),
  initializeDeployment: action(rollouts.initializeDeployment, 'Cuts the targeted devices into waves (draft → ready)'),
  startDeployment: action(rollouts.startDeployment, 'Starts the first wave (ready → running)'),
  pauseDeployment: action(rollouts.pauseDeployment, 'Pauses a running rollout'),
  resumeDeployment: action(rollouts.resumeDeployment, 'Resumes a paused rollout where it stopped'),
  cancelDeployment: action(rollouts.cancelDeployment, 'Cancels a rollout: devices not yet handed the change are left out'),
  retryDeploymentDevice: mutation(rollouts.RetryResultSchema, [id, arg('deviceId', ID, { description: 'The failed device.' })], rollouts.retryDeploymentDevice, {
    description: 'Hands a failed device its change again (as POST /deployments/:id/devices/:deviceId/retry)',
  }),
});
