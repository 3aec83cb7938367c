import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as compliance from '../src/services/policies/compliance.js';
import * as policies from '../src/services/policies/policies.js';
import * as remediation from '../src/services/policies/remediation.js';
import { call, pathId, RestRouter } from './router.js';

/** Configuration policies: CRUD, activation, evaluation, compliance and remediation. */
export function configurationPoliciesRouter(openapi: OpenApiRegistry): RestRouter {
  const policy = { id: pathId('Configuration policy') };
  return (
    new RestRouter(openapi, 'Configuration policies')
      .get('/policies', { summary: 'Configuration policies of the organizations you see, newest first', query: policies.ConfigurationPolicyListQuery, response: policies.ConfigurationPolicyPageSchema }, call(policies.listConfigurationPolicies))
      .post('/policies', { summary: 'Create a configuration policy (inactive)', body: policies.CreateConfigurationPolicySchema, status: 201, response: policies.ConfigurationPolicyViewSchema }, call(policies.createConfigurationPolicy))
      // Before `/policies/:id`.
      .get('/policies/compliance/stats', { summary: 'Compliance across the policies (a device counts by its worst status)', query: compliance.ComplianceStatsQuery, response: compliance.ComplianceStatsSchema }, call(compliance.complianceStats))
      .get('/policies/compliance/summary', { summary: 'Each policy with its devices’ counts, newest first', query: compliance.ComplianceSummaryQuery, response: compliance.ComplianceSummaryPageSchema }, call(compliance.complianceSummary))
      .get(
        '/policies/compliance/device/:deviceId',
        { summary: 'How one device complies with the policies', params: { deviceId: pathId('Device') }, response: compliance.DeviceComplianceSchema },
        call(compliance.deviceCompliance),
      )
      .get('/policies/:id', { summary: 'One configuration policy', params: policy, response: policies.ConfigurationPolicyViewSchema }, call(policies.getConfigurationPolicy))
      .put('/policies/:id', { summary: 'Replace a configuration policy', params: policy, body: policies.ReplaceConfigurationPolicySchema, response: policies.ConfigurationPolicyViewSchema }, call(policies.replaceConfigurationPolicy))
      .patch('/policies/:id', { summary: 'Change a configuration policy', params: policy, body: policies.UpdateConfigurationPolicySchema, response: policies.ConfigurationPolicyViewSchema }, call(policies.updateConfigurationPolicy))
      .delete('/policies/:id', { summary: 'Delete a configuration policy with its evaluations', params: policy, status: 204 }, call(policies.deleteConfigurationPolicy))
      .post('/policies/:id/activate', { summary: 'Activate a policy and evaluate it now (409 when active)', params: policy, response: policies.ConfigurationPolicyViewSchema }, call(policies.activateConfigurationPolicy))
      .post('/policies/:id/deactivate', { summary: 'Stop evaluating a policy (409 when inactive)', params: policy, response: policies.ConfigurationPolicyViewSchema }, call(policies.deactivateConfigurationPolicy))
      .post('/policies/:id/evaluate', { summary: 'Evaluate an active policy on its devices now', params: policy, status: 202, response: policies.EvaluationStartedSchema }, call(policies.evaluateConfigurationPolicy))
      .get('/policies/:id/compliance', { summary: 'How the devices you see comply with a policy', params: policy, response: compliance.PolicyComplianceSchema }, call(compliance.policyCompliance))
      .post(
        '/policies/:id/remediate',
        { summary: 'Queue the remediations of the violated rules of non-compliant devices', params: policy, body: remediation.RemediateSchema, status: 202, response: remediation.RemediationResultSchema },
        call(remediation.remediateConfigurationPolicy),
      )
  );
}
