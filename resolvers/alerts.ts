import { ID } from 'type-graphql';
import { arg, args, id, input, mutation, operations, pageArgs, query, subscription } from '../src/graphql/contract.js';
import {
  AlertRuleListQuery,
  AlertRulePageSchema,
  AlertRuleTestResultSchema,
  AlertRuleViewSchema,
  CreateAlertRuleSchema,
  TestAlertRuleSchema,
  UpdateAlertRuleSchema,
  createAlertRule,
  deleteAlertRule,
  getAlertRule,
  listAlertRules,
  testAlertRule,
  updateAlertRule,
} from '../src/services/alerts/alert-rules.js';
import {
  AlertTemplateListQuery,
  AlertTemplateListSchema,
  AlertTemplatePageSchema,
  AlertTemplateViewSchema,
  CreateAlertTemplateSchema,
  UpdateAlertTemplateSchema,
  createAlertTemplate,
  deleteAlertTemplate,
  listAlertTemplates,
  listBuiltInTemplates,
  updateAlertTemplate,
} from '../src/services/alerts/alert-templates.js';
import {
  AnalyzeCorrelationsSchema,
  CorrelationAnalysisSchema,
  CorrelationGroupListQuery,
  CorrelationGroupPageSchema,
  analyzeCorrelations,
  listCorrelationGroups,
} from '../src/services/alerts/correlation.js';
import {
  AlertConnectionArgs,
  AlertSummaryQuery,
  AlertSummarySchema,
  AlertViewSchema,
  ResolveAlertSchema,
  SuppressAlertSchema,
  acknowledgeAlert,
  alertSummary,
  alertsConnection,
  getAlert,
  resolveAlert,
  subscribeAlertChanges,
  suppressAlert,
} from '../src/services/alerts/alerts.js';
import { connectionOf, pageConnectionOf, paged } from './shared.js';

export const AlertResolver = operations({
  alerts: query(connectionOf(AlertViewSchema), [args('AlertConnectionArgs', AlertConnectionArgs)], alertsConnection, { description: 'Alerts the caller can see, newest first (every status unless one is given)' }),
  alertSummary: query(AlertSummarySchema, [args('AlertSummaryArgs', AlertSummaryQuery)], alertSummary, { description: 'Unresolved alerts in total and per severity; every alert per status' }),
  alert: query(AlertViewSchema, [id], getAlert, { description: 'One alert' }),
  acknowledgeAlert: mutation(AlertViewSchema, [id], acknowledgeAlert, { description: 'Someone is on it' }),
  resolveAlert: mutation(AlertViewSchema, [id, input('ResolveAlertInput', ResolveAlertSchema, { nullable: true })], (ctx, alert, resolve) => resolveAlert(ctx, alert, resolve ?? {}), {
    description: 'Resolves the alert, with an optional note',
  }),
  suppressAlert: mutation(AlertViewSchema, [id, input('SuppressAlertInput', SuppressAlertSchema)], suppressAlert, { description: 'Suppresses the alert until the given time' }),
  alertChanged: subscription(AlertViewSchema, [arg('orgId', ID, { nullable: true, description: 'only this organization’s alerts' })], (ctx, orgId) => subscribeAlertChanges(ctx, orgId ?? null), {
    description: 'Alerts as they are raised, acknowledged, resolved or suppressed, on any server instance, of the organizations and sites the caller may see',
  }),
  alertRules: query(pageConnectionOf(AlertRulePageSchema), [pageArgs('AlertRuleListArgs', AlertRuleListQuery, { fields: { enabled: { type: () => Boolean } } })], paged(listAlertRules), { description: 'The alert rules of the organizations the caller can see, oldest first (optionally only enabled or disabled ones, or of one severity)' }),
  alertRule: query(AlertRuleViewSchema, [id], getAlertRule, { description: 'One alert rule' }),
  createAlertRule: mutation(AlertRuleViewSchema, [input('CreateAlertRuleInput', CreateAlertRuleSchema)], createAlertRule, { description: 'Creates an alert rule, from a template or with conditions and severity' }),
  updateAlertRule: mutation(AlertRuleViewSchema, [id, input('UpdateAlertRuleInput', UpdateAlertRuleSchema)], updateAlertRule, { description: 'Changes an alert rule' }),
  deleteAlertRule: mutation(Boolean, [id], deleteAlertRule, { description: 'Deletes an alert rule; its alerts stay' }),
  testAlertRule: mutation(AlertRuleTestResultSchema, [id, input('TestAlertRuleInput', TestAlertRuleSchema, { nullable: true })], (ctx, rule, test) => testAlertRule(ctx, rule, test ?? {}), {
    description: 'Which devices the rule would fire for now; raises nothing',
  }),
  alertTemplates: query(pageConnectionOf(AlertTemplatePageSchema), [pageArgs('AlertTemplateListArgs', AlertTemplateListQuery)], paged(listAlertTemplates), { description: 'The organizations’ own alert templates' }),
  builtInAlertTemplates: query(AlertTemplateListSchema, [], listBuiltInTemplates, { description: 'The built-in alert templates' }),
  createAlertTemplate: mutation(AlertTemplateViewSchema, [input('CreateAlertTemplateInput', CreateAlertTemplateSchema)], createAlertTemplate, { description: 'Creates an alert template' }),
  updateAlertTemplate: mutation(AlertTemplateViewSchema, [id, input('UpdateAlertTemplateInput', UpdateAlertTemplateSchema)], updateAlertTemplate, { description: 'Changes an alert template' }),
  deleteAlertTemplate: mutation(Boolean, [id], deleteAlertTemplate, { description: 'Deletes an alert template; rules made from it keep their conditions' }),
  alertCorrelationGroups: query(pageConnectionOf(CorrelationGroupPageSchema), [pageArgs('AlertCorrelationGroupListArgs', CorrelationGroupListQuery)], paged(listCorrelationGroups), { description: 'Incidents (correlated alerts), latest first' }),
  analyzeAlertCorrelations: mutation(CorrelationAnalysisSchema, [input('AnalyzeAlertCorrelationsInput', AnalyzeCorrelationsSchema, { nullable: true })], (ctx, analyze) => analyzeCorrelations(ctx, analyze ?? {}), {
    description: 'Regroups the organization’s unresolved alerts into incidents',
  }),
});
