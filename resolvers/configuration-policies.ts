import { ID } from 'type-graphql';
import { args, arg, cursorArgs, id, input, mutation, operations, query } from '../src/graphql/contract.js';
import * as compliance from '../src/services/policies/compliance.js';
import * as policies from '../src/services/policies/policies.js';
import * as remediation from '../src/services/policies/remediation.js';
import { connectionOf, cursored } from './shared.js';

export const ConfigurationPolicyResolver = operations({
  configurationPolicies: query(
    connectionOf(policies.ConfigurationPolicyViewSchema),
    [cursorArgs('ConfigurationPolicyListArgs', policies.ConfigurationPolicyListQuery)],
    cursored(policies.listConfigurationPolicies, (p) => p.createdAt, policies.countConfigurationPolicies),
    { description: 'Configuration policies of the organizations the caller sees, newest first (as GET /policies)' },
  ),
  configurationPolicy: query(policies.ConfigurationPolicyViewSchema, [id], policies.getConfigurationPolicy, { description: 'One configuration policy' }),
  configurationPolicyCompliance: query(compliance.PolicyComplianceSchema, [id], compliance.policyCompliance, { description: 'How the devices the caller sees comply with a policy (as GET /policies/:id/compliance)' }),
  configurationPolicyComplianceStats: query(compliance.ComplianceStatsSchema, [args('ConfigurationPolicyComplianceStatsArgs', compliance.ComplianceStatsQuery)], compliance.complianceStats, {
    description: 'Compliance across the policies; a device counts by its worst status (as GET /policies/compliance/stats)',
  }),
  configurationPolicyComplianceSummary: query(compliance.ComplianceSummaryPageSchema, [args('ConfigurationPolicyComplianceSummaryArgs', compliance.ComplianceSummaryQuery)], compliance.complianceSummary, {
    description: 'Each policy with its devices’ counts, newest first (as GET /policies/compliance/summary)',
  }),
  deviceConfigurationCompliance: query(compliance.DeviceComplianceSchema, [arg('deviceId', ID, { description: 'The device.' })], compliance.deviceCompliance, {
    description: 'How one device complies with the policies (as GET /policies/compliance/device/:deviceId)',
  }),
  createConfigurationPolicy: mutation(policies.ConfigurationPolicyViewSchema, [input('CreateConfigurationPolicyInput', policies.CreateConfigurationPolicySchema)], policies.createConfigurationPolicy, {
    description: 'Creates a configuration policy (inactive until activated)',
  }),
  replaceConfigurationPolicy: mutation(policies.ConfigurationPolicyViewSchema, [id, input('ReplaceConfigurationPolicyInput', policies.ReplaceConfigurationPolicySchema)], policies.replaceConfigurationPolicy, {
    description: 'Replaces a configuration policy (as PUT /policies/:id)',
  }),
  updateConfigurationPolicy: mutation(policies.ConfigurationPolicyViewSchema, [id, input('UpdateConfigurationPolicyInput', policies.UpdateConfigurationPolicySchema)], policies.updateConfigurationPolicy, {
    description: 'Changes the given fields of a configuration policy (as PATCH /policies/:id)',
  }),
  deleteConfigurationPolicy: mutation(Boolean, [id], policies.deleteConfigurationPolicy, { description: 'Deletes a configuration policy with its evaluations' }),
  activateConfigurationPolicy: mutation(policies.ConfigurationPolicyViewSchema, [id], policies.activateConfigurationPolicy, { description: 'Activates a policy and evaluates it now' }),
  deactivateConfigurationPolicy: mutation(policies.ConfigurationPolicyViewSchema, [id], policies.deactivateConfigurationPolicy, { description: 'Stops evaluating a policy' }),
  evaluateConfigurationPolicy: mutation(policies.EvaluationStartedSchema, [id], policies.evaluateConfigurationPolicy, { description: 'Evaluates an active policy on its devices now' }),
  remediateConfigurationPolicy: mutation(remediation.RemediationResultSchema, [id, input('RemediateConfigurationPolicyInput', remediation.RemediateSchema, { nullable: true })], (ctx, policyId, raw) => remediation.remediateConfigurationPolicy(ctx, policyId, raw ?? {}), {
    description: 'Queues the remediations of the violated rules of non-compliant devices',
  }),
});
