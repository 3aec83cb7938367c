import { ID } from 'type-graphql';
import { arg, inputType, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
import * as alertPolicies from '../src/services/alerts/alert-policies.js';
import { pageConnectionOf, paged } from './shared.js';

const id = arg('id', ID, { description: 'The alert policy' });

export const AlertPolicyResolver = operations({
  alertPolicies: query(pageConnectionOf(alertPolicies.AlertPolicyPageSchema), [pageArgs('AlertPolicyListArgs', alertPolicies.ListAlertPoliciesQuery)], paged(alertPolicies.listAlertPolicies), { description: "An organization's alert policies" }),
  alertPolicy: query(alertPolicies.AlertPolicyViewSchema, [id], alertPolicies.getAlertPolicy, { description: 'One alert policy' }),
  createAlertPolicy: mutation(alertPolicies.AlertPolicyViewSchema, [arg('input', inputType('CreateAlertPolicyInput', alertPolicies.CreateAlertPolicySchema), { description: 'The policy to create' })], alertPolicies.createAlertPolicy, { description: 'Creates an alert policy' }),
  updateAlertPolicy: mutation(alertPolicies.AlertPolicyViewSchema, [id, arg('input', inputType('UpdateAlertPolicyInput', alertPolicies.UpdateAlertPolicySchema), { description: 'What to change' })], alertPolicies.updateAlertPolicy, { description: 'Changes an alert policy' }),
  deleteAlertPolicy: mutation(Boolean, [id], alertPolicies.deleteAlertPolicy, { description: 'Deletes an alert policy and its waiting escalation steps' }),
});
