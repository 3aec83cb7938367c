import type { OpenApiRegistry } from '../src/http/openapi.js';
import { AutomationRunPageSchema, AutomationRunViewSchema, RunListQuery, TriggerQuery, getRun, listRuns, runAutomation, triggerAutomation } from '../src/services/automations/automation-runs.js';
import {
  AutomationListQuery,
  AutomationPageSchema,
  AutomationViewSchema,
  CreateAutomationSchema,
  UpdateAutomationSchema,
  createAutomation,
  deleteAutomation,
  getAutomation,
  listAutomations,
  updateAutomation,
} from '../src/services/automations/automations.js';
import type { RateLimit } from '../src/http/rate-limit.js';
import { RestRouter, pathId } from './router.js';

/** Automations: steps run on devices when a schedule, an event, a webhook call or a caller triggers them; their runs. */
export function automationsRouter(openapi: OpenApiRegistry): RestRouter {
  const automation = { id: pathId('Automation') };
  // The webhook URL is reachable without credentials: its guesses are budgeted per client.
  const triggerLimit: RateLimit = { name: 'automation-trigger', perMinute: () => 120 };
  return new RestRouter(openapi, 'Automations')
    .get('/automations', { summary: 'Automations you can see', query: AutomationListQuery, response: AutomationPageSchema }, (ctx, { query }) => listAutomations(ctx, query))
    .post('/automations', { summary: 'Create an automation', body: CreateAutomationSchema, status: 201, response: AutomationViewSchema }, (ctx, { body }) => createAutomation(ctx, body))
    .get('/automations/runs/:runId', { summary: 'One run with its per-device step results', params: { runId: pathId('Automation run') }, response: AutomationRunViewSchema }, (ctx, { params }) =>
      getRun(ctx, params.runId),
    )
    .get('/automations/:id', { summary: 'One automation', params: automation, response: AutomationViewSchema }, (ctx, { params }) => getAutomation(ctx, params.id))
    .patch('/automations/:id', { summary: 'Change an automation (disabling it stops its schedule, event and webhook triggers)', params: automation, body: UpdateAutomationSchema, response: AutomationViewSchema }, (ctx, { params, body }) =>
      updateAutomation(ctx, params.id, body),
    )
    .delete('/automations/:id', { summary: 'Delete an automation and its runs', params: automation, status: 204 }, (ctx, { params }) => deleteAutomation(ctx, params.id))
    .post(
      '/automations/:id/trigger',
      {
        summary: 'Start a run now: with the token of a webhook automation’s webhookUrl (no other credentials), or as a caller allowed to run it',
        params: automation,
        query: TriggerQuery,
        status: 202,
        response: AutomationRunViewSchema,
        public: true,
        limit: triggerLimit,
      },
      (ctx, { params, query }) => triggerAutomation(ctx, params.id, query),
    )
    .post('/automations/:id/run', { summary: 'Start a run now', params: automation, status: 202, response: AutomationRunViewSchema }, (ctx, { params }) => runAutomation(ctx, params.id))
    .get('/automations/:id/runs', { summary: 'The automation’s runs, newest first', params: automation, query: RunListQuery, response: AutomationRunPageSchema }, (ctx, { params, query }) =>
      listRuns(ctx, params.id, query),
    );
}
