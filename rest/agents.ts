import type { OpenApiRegistry } from '../src/http/openapi.js';
import {
  AgentAckSchema,
  EnrollResultSchema,
  EnrollSchema,
  HeartbeatResultSchema,
  HeartbeatSchema,
  InventorySchema,
  UpdateStatusSchema,
  enroll,
  heartbeat,
  reportCommandResult,
  reportInventory,
  reportUpdateStatus,
} from '../src/services/devices/agents.js';
import { CommandResultSchema } from '../src/services/devices/device-commands.js';
import { RestRouter, pathId } from './router.js';

/** The agent protocol (docs/agent-protocol.md): enrollment with an enrollment key, then calls with the agent's token (`auth: 'agent'`). */
export function agentsRouter(openapi: OpenApiRegistry): RestRouter {
  const agent = { agentId: pathId('Agent') };
  return new RestRouter(openapi, 'Agents')
    .post('/agents/enroll', { summary: 'Enroll a device with an enrollment key (re-enrolling a live device: with its current token as Bearer)', body: EnrollSchema, status: 201, public: true, response: EnrollResultSchema }, (ctx, { body }) =>
      enroll(ctx, body),
    )
    .post('/agents/:agentId/heartbeat', { summary: 'Report presence and metrics; answers the commands to run', params: agent, body: HeartbeatSchema, auth: 'agent', hot: true, response: HeartbeatResultSchema }, (ctx, { body }) =>
      heartbeat(ctx, body),
    )
    .post(
      '/agents/:agentId/commands/:commandId/result',
      { summary: "Report a command's result", params: { ...agent, commandId: pathId('Command') }, body: CommandResultSchema, auth: 'agent', response: AgentAckSchema },
      (ctx, { params, body }) => reportCommandResult(ctx, params.commandId, body),
    )
    .post('/agents/:agentId/inventory', { summary: 'Report the latest inventory', params: agent, body: InventorySchema, auth: 'agent', response: AgentAckSchema }, (ctx, { body }) =>
      reportInventory(ctx, body),
    )
    .post('/agents/:agentId/update-status', { summary: 'Report the progress of a self-update', params: agent, body: UpdateStatusSchema, auth: 'agent', response: AgentAckSchema }, (ctx, { body }) =>
      reportUpdateStatus(ctx, body),
    );
}
