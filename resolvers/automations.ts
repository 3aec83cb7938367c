import { ID } from 'type-graphql';
import { arg, args, id, input, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
import { AutomationRunViewSchema, RunConnectionArgs, getRun, runAutomation, runsConnection } from '../src/services/automations/automation-runs.js';
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
import { connectionOf, pageConnectionOf, paged } from './shared.js';

export const AutomationResolver = operations({
  automations: query(
    pageConnectionOf(AutomationPageSchema),
    // `enabled` takes "true"/"false" in a REST query string too; GraphQL has real booleans.
    [pageArgs('AutomationListArgs', AutomationListQuery, { fields: { enabled: { type: () => Boolean } } })],
    paged(listAutomations),
    { description: 'Automations the caller can see (partner and system callers: of one organization, orgId)' },
  ),
  automation: query(AutomationViewSchema, [id], getAutomation, { description: 'One automation' }),
  automationRun: query(AutomationRunViewSchema, [arg('runId', ID, { description: 'the run' })], getRun, { description: 'One run with its per-device step results' }),
  automationRuns: query(connectionOf(AutomationRunViewSchema), [arg('automationId', ID, { description: 'the automation' }), args('AutomationRunConnectionArgs', RunConnectionArgs)], runsConnection, {
    description: 'An automation’s runs, newest first',
  }),
  createAutomation: mutation(AutomationViewSchema, [input('CreateAutomationInput', CreateAutomationSchema)], createAutomation, { description: 'Creates an automation' }),
  updateAutomation: mutation(AutomationViewSchema, [id, input('UpdateAutomationInput', UpdateAutomationSchema)], updateAutomation, {
    description: 'Changes an automation (disabling it stops its schedule, event and webhook triggers)',
  }),
  deleteAutomation: mutation(Boolean, [id], deleteAutomation, { description: 'Deletes the automation and its runs' }),
  triggerAutomation: mutation(AutomationRunViewSchema, [id], runAutomation, { description: 'Starts a run of the automation now' }),
});
