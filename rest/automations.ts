import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as automationRuns from '../src/services/automations/automation-runs.js';
import * as automations from '../src/services/automations/automations.js';
import type { RateLimit } from '../src/http/rate-limit.js';
import { call, pathId, RestRouter } from './router.js';

/** Automations: steps run on devices when a schedule, an event, a webhook call or a caller triggers them; their runs. */
export function automationsRouter(openapi: OpenApiRegistry): RestRouter {
  const automation = { id: pathId('Automation') };
  // The webhook URL is reachable without credentials: its guesses are budgeted per client.
  const triggerLimit: RateLimit = { name: 'automation-trigger', perMinute: () => 120 };
  return new RestRouter(openapi, 'Automations')
    .get('/automations', { summary: 'Automations you can see', query: automations.AutomationListQuery, response: automations.AutomationPageSchema }, call(automations.listAutomations))
    .post('/automations', { summary: 'Create an automation', body: automations.CreateAutomationSchema, status: 201, response: automations.AutomationViewSchema }, call(automations.createAutomation))
    .get('/automations/runs/:runId', { summary: 'One run with its per-device step results', params: { runId: pathId('Automation run') }, response: automationRuns.AutomationRunViewSchema }, call(automationRuns.getRun))
    .get('/automations/:id', { summary: 'One automation', params: automation, response: automations.AutomationViewSchema }, call(automations.getAutomation))
    .patch('/automations/:id', { summary: 'Change an automation (disabling it stops its schedule, event and webhook triggers)', params: automation, body: automations.UpdateAutomationSchema, response: automations.AutomationViewSchema }, call(automations.updateAutomation))
    .delete('/automations/:id', { summary: 'Delete an automation and its runs', params: automation, status: 204 }, call(automations.deleteAutomation))
    .post(
      '/automations/:id/trigger',
      {
        summary: 'Start a run now: with the token of a webhook automation’s webhookUrl (no other credentials), or as a caller allowed to run it',
        params: automation,
        query: automationRuns.TriggerQuery,
        status: 202,
        response: automationRuns.AutomationRunViewSchema,
        public: true,
        limit: triggerLimit,
      },
      call(automationRuns.triggerAutomation))
    .post('/automations/:id/run', { summary: 'Start a run now', params: automation, status: 202, response: automationRuns.AutomationRunViewSchema }, call(automationRuns.runAutomation))
    .get('/automations/:id/runs', { summary: 'The automation’s runs, newest first', params: automation, query: automationRuns.RunListQuery, response: automationRuns.AutomationRunPageSchema }, call(automationRuns.listRuns));
}
