import { ID } from 'type-graphql';
import { arg, args, id, input, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
import * as automationRuns from '../src/services/automations/automation-runs.js';
import * as automations from '../src/services/automations/automations.js';
import { connectionOf, pageConnectionOf, paged } from './shared.js';

export const AutomationResolver = operations({
  automations: query(
    pageConnectionOf(automations.AutomationPageSchema),
    // `enabled` takes "true"/"false" in a REST query string too; GraphQL has real booleans.
    [pageArgs('AutomationListArgs', automations.AutomationListQuery, { fields: { enabled: { type: () => Boolean } } })],
    paged(automations.listAutomations),
    { description: 'Automations the caller can see (partner and system callers: of one organization, orgId)' },
  ),
  automation: query(automations.AutomationViewSchema, [id], automations.getAutomation, { description: 'One automation' }),
  automationRun: query(automationRuns.AutomationRunViewSchema, [arg('runId', ID, { description: 'the run' })], automationRuns.getRun, { description: 'One run with its per-device step results' }),
  automationRuns: query(connectionOf(automationRuns.AutomationRunViewSchema), [arg('automationId', ID, { description: 'the automation' }), args('AutomationRunConnectionArgs', automationRuns.RunConnectionArgs)], automationRuns.runsConnection, {
    description: 'An automation’s runs, newest first',
  }),
  createAutomation: mutation(automations.AutomationViewSchema, [input('CreateAutomationInput', automations.CreateAutomationSchema)], automations.createAutomation, { description: 'Creates an automation' }),
  updateAutomation: mutation(automations.AutomationViewSchema, [id, input('UpdateAutomationInput', automations.UpdateAutomationSchema)], automations.updateAutomation, {
    description: 'Changes an automation (disabling it stops its schedule, event and webhook triggers)',
  }),
  deleteAutomation: mutation(Boolean, [id], automations.deleteAutomation, { description: 'Deletes the automation and its runs' }),
  triggerAutomation: mutation(automationRuns.AutomationRunViewSchema, [id], automationRuns.runAutomation, { description: 'Starts a run of the automation now' }),
});
