import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as alertPolicies from '../src/services/alerts/alert-policies.js';
import { call, pathId, RestRouter } from './router.js';

/** Alert policies: which channels and users hear of which alerts, and their escalation steps. */
export function alertPoliciesRouter(openapi: OpenApiRegistry): RestRouter {
  const policy = { id: pathId('Alert policy') };
  return new RestRouter(openapi, 'Alert policies')
    .get('/alerts/policies', { summary: "An organization's alert policies", query: alertPolicies.ListAlertPoliciesQuery, response: alertPolicies.AlertPolicyPageSchema }, call(alertPolicies.listAlertPolicies))
    .post('/alerts/policies', { summary: 'Create an alert policy', body: alertPolicies.CreateAlertPolicySchema, status: 201, response: alertPolicies.AlertPolicyViewSchema }, call(alertPolicies.createAlertPolicy))
    .get('/alerts/policies/:id', { summary: 'One alert policy', params: policy, response: alertPolicies.AlertPolicyViewSchema }, call(alertPolicies.getAlertPolicy))
    .patch('/alerts/policies/:id', { summary: 'Change an alert policy', params: policy, body: alertPolicies.UpdateAlertPolicySchema, response: alertPolicies.AlertPolicyViewSchema }, call(alertPolicies.updateAlertPolicy))
    .delete('/alerts/policies/:id', { summary: 'Delete an alert policy (its waiting escalation steps go with it)', params: policy, status: 204 }, call(alertPolicies.deleteAlertPolicy));
}
