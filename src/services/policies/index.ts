import { ConfigurationPolicy, ConfigurationPolicyDevice, ConfigurationPolicyRemediation } from '../../../entities/configuration-policy.js';
import { ConfigurationPolicyResolver } from '../../../resolvers/configuration-policies.js';
import { configurationPoliciesRouter } from '../../../rest/configuration-policies.js';
import { defineDomain } from '../../domain-module.js';
import { configurationPoliciesDueWork } from '../../jobs/configuration-policies.js';
import { configurationPolicyCommands } from '../../subscribers/configuration-policies.js';
import { evaluateOnReport, policyCommandTypes, policyEventSight } from './evaluation.js';
import { policiesAuditActions } from './events.js';

const permissions = {
  policies: ['read', 'write'],
} as const;
type PoliciesPermissions = typeof permissions;
declare module '../../auth/permissions.js' {
  interface PermissionCatalog extends PoliciesPermissions {}
}

/**
 * Configuration policies: rules an organization's targeted devices must pass (software required or
 * forbidden, OS versions, disk encryption, and checks their agents answer: services, registry values,
 * configuration files), evaluated on activation, on demand, on each inventory report and on an
 * interval; per-device compliance, its events and alerts, and remediation through the agents.
 */
export const policiesDomain = defineDomain({
  name: 'policies',
  entities: [ConfigurationPolicy, ConfigurationPolicyDevice, ConfigurationPolicyRemediation],
  rest: [configurationPoliciesRouter],
  resolvers: [ConfigurationPolicyResolver],
  eventSight: { policy: policyEventSight },
  deviceReports: { inventoryReported: evaluateOnReport },
  commandTypes: policyCommandTypes,
  subscribers: [configurationPolicyCommands],
  dueWork: configurationPoliciesDueWork,
  auditActions: policiesAuditActions,
  permissions,
  orgWork: ['policies'],
});
