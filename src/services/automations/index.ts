import { Automation, AutomationRun, AutomationRunResult } from '../../../entities/automation.js';
import { automationsRouter } from '../../../rest/automations.js';
import { AutomationResolver } from '../../../resolvers/automations.js';
import { defineDomain } from '../../domain-module.js';
import { automationDueWork, automationJobs } from '../../jobs/automations.js';
import { automationEventTriggers, automationScriptOutcomes } from '../../subscribers/automations.js';
import { runEventInSight } from './automation-runs.js';
import { automationsAuditActions } from './events.js';

const permissions = {
  automations: ['read', 'write', 'run'],
} as const;
type AutomationsPermissions = typeof permissions;
declare module '../../auth/permissions.js' {
  interface PermissionCatalog extends AutomationsPermissions {}
}

/** Automations: triggers, targets, steps and runs. */
export const automationsDomain = defineDomain({
  name: 'automations',
  eventSight: { automation: runEventInSight },
  entities: [Automation, AutomationRun, AutomationRunResult],
  rest: [automationsRouter],
  resolvers: [AutomationResolver],
  jobs: [...automationJobs],
  dueWork: automationDueWork,
  subscribers: [automationEventTriggers, automationScriptOutcomes],
  auditActions: automationsAuditActions,
  permissions,
  orgWork: ['automations'],
});
