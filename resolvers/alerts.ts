import { ID } from 'type-graphql';
import { arg, args, id, input, mutation, operations, pageArgs, query, subscription } from '../src/graphql/contract.js';
import * as alertRules from '../src/services/alerts/alert-rules.js';
import * as alertTemplates from '../src/services/alerts/alert-templates.js';
import * as correlation from '../src/services/alerts/correlation.js';
import * as alerts from '../src/services/alerts/alerts.js';
import { connectionOf, pageConnectionOf, paged } from './shared.js';

export const AlertResolver = operations({
  alerts: query(connectionOf(alerts.AlertViewSchema), [args('AlertConnectionArgs', alerts.AlertConnectionArgs)], alerts.alertsConnection, { description: 'Alerts the caller can see, newest first (every status unless one is given)' }),
  alertSummary: query(alerts.AlertSummarySchema, [args('AlertSummaryArgs', alerts.AlertSummaryQuery)], alerts.alertSummary, { description: 'Unresolved alerts in total and per severity; every alert per status' }),
  alert: query(alerts.AlertViewSchema, [id], alerts.getAlert, { description: 'One alert' }),
  acknowledgeAlert: mutation(alerts.AlertViewSchema, [id], alerts.acknowledgeAlert, { description: 'Someone is on it' }),
  resolveAlert: mutation(alerts.AlertViewSchema, [id, input('ResolveAlertInput', alerts.ResolveAlertSchema, { nullable: true })], (ctx, alert, resolve) => alerts.resolveAlert(ctx, alert, resolve ?? {}), {
    description: 'Resolves the alert, with an optional note',
  }),
  suppressAlert: mutation(alerts.AlertViewSchema, [id, input('SuppressAlertInput', alerts.SuppressAlertSchema)], alerts.suppressAlert, { description: 'Suppresses the alert until the given time' }),
  alertChanged: subscription(alerts.AlertViewSchema, [arg('orgId', ID, { nullable: true, description: 'only this organization’s alerts' })], (ctx, orgId) => alerts.subscribeAlertChanges(ctx, orgId ?? null), {
    description: 'Alerts as they are raised, acknowledged, resolved or suppressed, on any server instance, of the organizations and sites the caller may see',
  }),
  alertRules: query(pageConnectionOf(alertRules.AlertRulePageSchema), [pageArgs('AlertRuleListArgs', alertRules.AlertRuleListQuery, { fields: { enabled: { type: () => Boolean } } })], paged(alertRules.listAlertRules), { description: 'The alert rules of the organizations the caller can see, oldest first (optionally only enabled or disabled ones, or of one severity)' }),
  alertRule: query(alertRules.AlertRuleViewSchema, [id], alertRules.getAlertRule, { description: 'One alert rule' }),
  createAlertRule: mutation(alertRules.AlertRuleViewSchema, [input('CreateAlertRuleInput', alertRules.CreateAlertRuleSchema)], alertRules.createAlertRule, { description: 'Creates an alert rule, from a template or with conditions and severity' }),
  updateAlertRule: mutation(alertRules.AlertRuleViewSchema, [id, input('UpdateAlertRuleInput', alertRules.UpdateAlertRuleSchema)], alertRules.updateAlertRule, { description: 'Changes an alert rule' }),
  deleteAlertRule: mutation(Boolean, [id], alertRules.deleteAlertRule, { description: 'Deletes an alert rule; its alerts stay' }),
  testAlertRule: mutation(alertRules.AlertRuleTestResultSchema, [id, input('TestAlertRuleInput', alertRules.TestAlertRuleSchema, { nullable: true })], (ctx, rule, test) => alertRules.testAlertRule(ctx, rule, test ?? {}), {
    description: 'Which devices the rule would fire for now; raises nothing',
  }),
  alertTemplates: query(pageConnectionOf(alertTemplates.AlertTemplatePageSchema), [pageArgs('AlertTemplateListArgs', alertTemplates.AlertTemplateListQuery)], paged(alertTemplates.listAlertTemplates), { description: 'The organizations’ own alert templates' }),
  builtInAlertTemplates: query(alertTemplates.AlertTemplateListSchema, [], alertTemplates.listBuiltInTemplates, { description: 'The built-in alert templates' }),
  createAlertTemplate: mutation(alertTemplates.AlertTemplateViewSchema, [input('CreateAlertTemplateInput', alertTemplates.CreateAlertTemplateSchema)], alertTemplates.createAlertTemplate, { description: 'Creates an alert template' }),
  updateAlertTemplate: mutation(alertTemplates.AlertTemplateViewSchema, [id, input('UpdateAlertTemplateInput', alertTemplates.UpdateAlertTemplateSchema)], alertTemplates.updateAlertTemplate, { description: 'Changes an alert template' }),
  deleteAlertTemplate: mutation(Boolean, [id], alertTemplates.deleteAlertTemplate, { description: 'Deletes an alert template; rules made from it keep their conditions' }),
  alertCorrelationGroups: query(pageConnectionOf(correlation.CorrelationGroupPageSchema), [pageArgs('AlertCorrelationGroupListArgs', correlation.CorrelationGroupListQuery)], paged(correlation.listCorrelationGroups), { description: 'Incidents (correlated alerts), latest first' }),
  analyzeAlertCorrelations: mutation(correlation.CorrelationAnalysisSchema, [input('AnalyzeAlertCorrelationsInput', correlation.AnalyzeCorrelationsSchema, { nullable: true })], (ctx, analyze) => correlation.analyzeCorrelations(ctx, analyze ?? {}), {
    description: 'Regroups the organization’s unresolved alerts into incidents',
  }),
});
