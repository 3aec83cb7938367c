import type { z } from 'zod';
import { cursorArgs, id, input, mutation, operations, query } from '../src/graphql/contract.js';
import * as deployments from '../src/services/software/deployments.js';
import { uuid } from '../src/validation.js';
import { connectionOf, cursored } from './shared.js';

// The results take their deployment's id beside the page (`deploymentId`).
const ResultListArgs = deployments.SoftwareDeploymentResultListQuery.extend({ deploymentId: uuid().describe('the deployment') });

export const SoftwareDeploymentResolver = operations({
  softwareDeployments: query(
    connectionOf(deployments.SoftwareDeploymentViewSchema),
    [cursorArgs('SoftwareDeploymentListArgs', deployments.SoftwareDeploymentListQuery)],
    cursored(deployments.listSoftwareDeployments, (d) => d.createdAt, deployments.countSoftwareDeployments),
    { description: 'Software deployments of the organizations the caller sees, newest first (as GET /software/deployments)' },
  ),
  softwareDeployment: query(deployments.SoftwareDeploymentViewSchema, [id], deployments.getSoftwareDeployment, { description: 'One software deployment' }),
  softwareDeploymentResults: query(
    connectionOf(deployments.SoftwareDeploymentResultViewSchema),
    [cursorArgs('SoftwareDeploymentResultListArgs', ResultListArgs)],
    cursored(
      (ctx, { deploymentId, ...page }: z.input<typeof ResultListArgs>) => deployments.listSoftwareDeploymentResults(ctx, deploymentId, page),
      (r) => r.hostname,
      (ctx, { deploymentId, ...filters }) => deployments.countSoftwareDeploymentResults(ctx, deploymentId, filters),
    ),
    { description: 'A deployment’s devices and where each stands, by hostname (as GET /software/deployments/:id/results)' },
  ),
  createSoftwareDeployment: mutation(deployments.SoftwareDeploymentViewSchema, [input('CreateSoftwareDeploymentInput', deployments.CreateSoftwareDeploymentSchema)], deployments.createSoftwareDeployment, {
    description: 'Installs or uninstalls a catalog version on devices (as POST /software/deployments)',
  }),
  cancelSoftwareDeployment: mutation(deployments.SoftwareDeploymentViewSchema, [id], deployments.cancelSoftwareDeployment, {
    description: 'Cancels a deployment: devices still pending are not sent their command (as POST /software/deployments/:id/cancel)',
  }),
});
