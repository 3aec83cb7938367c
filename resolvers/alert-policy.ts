import { args, id, input, mutation, operations, query } from '../src/graphql/contract.js';
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
} from '../src/services/alert-policies.js';

export const AlertPolicyResolver = operations({
  alertPolicies: query(AlertPolicyPageSchema, [args('AlertPolicyListArgs', ListAlertPoliciesQuery)], listAlertPolicies, { description: "An organization's alert policies" }),
  alertPolicy: query(AlertPolicyViewSchema, [id], getAlertPolicy, { description: 'One alert policy' }),
  createAlertPolicy: mutation(AlertPolicyViewSchema, [input('CreateAlertPolicyInput', CreateAlertPolicySchema)], createAlertPolicy, { description: 'Creates an alert policy' }),
  updateAlertPolicy: mutation(AlertPolicyViewSchema, [id, input('UpdateAlertPolicyInput', UpdateAlertPolicySchema)], updateAlertPolicy, { description: 'Changes an alert policy' }),
  deleteAlertPolicy: mutation(Boolean, [id], deleteAlertPolicy, { description: 'Deletes an alert policy and its waiting escalation steps' }),
});
