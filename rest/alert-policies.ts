import type { OpenApiRegistry } from '../src/http/openapi.js';
import {
  AlertPolicyPageSchema,
  AlertPolicyViewSchema,
  CreateAlertPolicySchema,
  ListAlertPoliciesQuery,
  UpdateAlertPolicySchema,
  createAlertPolicy,
  deleteAlertPolicy,
  getAlertPolicy,
  listAlertPolicies,
  updateAlertPolicy,
} from '../src/services/alerts/alert-policies.js';
import { RestRouter, pathId } from './router.js';

/** Alert policies: which channels and users hear of which alerts, and their escalation steps. */
export function alertPoliciesRouter(openapi: OpenApiRegistry): RestRouter {
  const policy = { id: pathId('Alert policy') };
  return new RestRouter(openapi, 'Alert policies')
    .get('/alerts/policies', { summary: "An organization's alert policies", query: ListAlertPoliciesQuery, response: AlertPolicyPageSchema }, (ctx, { query }) => listAlertPolicies(ctx, query))
    .post('/alerts/policies', { summary: 'Create an alert policy', body: CreateAlertPolicySchema, status: 201, response: AlertPolicyViewSchema }, (ctx, { body }) => createAlertPolicy(ctx, body))
    .get('/alerts/policies/:id', { summary: 'One alert policy', params: policy, response: AlertPolicyViewSchema }, (ctx, { params }) => getAlertPolicy(ctx, params.id))
    .patch('/alerts/policies/:id', { summary: 'Change an alert policy', params: policy, body: UpdateAlertPolicySchema, response: AlertPolicyViewSchema }, (ctx, { params, body }) =>
      updateAlertPolicy(ctx, params.id, body),
    )
    .delete('/alerts/policies/:id', { summary: 'Delete an alert policy (its waiting escalation steps go with it)', params: policy, status: 204 }, (ctx, { params }) => deleteAlertPolicy(ctx, params.id));
}
