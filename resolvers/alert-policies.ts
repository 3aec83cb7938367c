import { ID } from 'type-graphql';
import { arg, inputType, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
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
import { pageConnectionOf, paged } from './shared.js';

const id = arg('id', ID, { description: 'The alert policy' });

export const AlertPolicyResolver = operations({
  alertPolicies: query(pageConnectionOf(AlertPolicyPageSchema), [pageArgs('AlertPolicyListArgs', ListAlertPoliciesQuery)], paged(listAlertPolicies), { description: "An organization's alert policies" }),
  alertPolicy: query(AlertPolicyViewSchema, [id], getAlertPolicy, { description: 'One alert policy' }),
  createAlertPolicy: mutation(AlertPolicyViewSchema, [arg('input', inputType('CreateAlertPolicyInput', CreateAlertPolicySchema), { description: 'The policy to create' })], createAlertPolicy, { description: 'Creates an alert policy' }),
  updateAlertPolicy: mutation(AlertPolicyViewSchema, [id, arg('input', inputType('UpdateAlertPolicyInput', UpdateAlertPolicySchema), { description: 'What to change' })], updateAlertPolicy, { description: 'Changes an alert policy' }),
  deleteAlertPolicy: mutation(Boolean, [id], deleteAlertPolicy, { description: 'Deletes an alert policy and its waiting escalation steps' }),
});
