import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as agents from '../src/services/devices/agents.js';
import * as commandTypes from '../src/services/devices/command-types.js';
import { call, pathId, RestRouter } from './router.js';

/** The agent protocol (docs/agent-protocol.md): enrollment with an enrollment key, then calls with the agent's token (`auth: 'agent'`). */
export function agentsRouter(openapi: OpenApiRegistry): RestRouter {
  const agent = { agentId: pathId('Agent') };
  return new RestRouter(openapi, 'Agents')
    .post('/agents/enroll', { summary: 'Enroll a device with an enrollment key (re-enrolling a live device: with its current token as Bearer)', body: agents.EnrollSchema, status: 201, public: true, response: agents.EnrollResultSchema }, call(agents.enroll))
    .post('/agents/:agentId/heartbeat', { summary: 'Report presence and metrics; answers the commands to run', params: agent, body: agents.HeartbeatSchema, auth: 'agent', hot: true, response: agents.HeartbeatResultSchema }, (ctx, { body }) =>
      agents.heartbeat(ctx, body),
    )
    .post(
      '/agents/:agentId/commands/:commandId/result',
      { summary: "Report a command's result", params: { ...agent, commandId: pathId('Command') }, body: commandTypes.CommandResultSchema, auth: 'agent', response: agents.AgentAckSchema },
      (ctx, { params, body }) => agents.reportCommandResult(ctx, params.commandId, body),
    )
    .post('/agents/:agentId/inventory', { summary: 'Report the latest inventory', params: agent, body: agents.InventorySchema, auth: 'agent', response: agents.AgentAckSchema }, (ctx, { body }) =>
      agents.reportInventory(ctx, body),
    )
    .post('/agents/:agentId/update-status', { summary: 'Report the progress of a self-update', params: agent, body: agents.UpdateStatusSchema, auth: 'agent', response: agents.AgentAckSchema }, (ctx, { body }) =>
      agents.reportUpdateStatus(ctx, body),
    );
}
