import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as alertRules from '../src/services/alerts/alert-rules.js';
import * as alerts from '../src/services/alerts/alerts.js';
import { call, pathId, RestRouter } from './router.js';

/** Alerts and the rules that raise them. */
export function alertsRouter(openapi: OpenApiRegistry): RestRouter {
  const alert = { id: pathId('Alert') };
  const rule = { id: pathId('Alert rule') };
  return new RestRouter(openapi, 'Alerts')
    .get('/alerts', { summary: 'Alerts you can see, newest first (every status unless `status` is given)', query: alerts.AlertListQuery, response: alerts.AlertPageSchema }, call(alerts.listAlerts))
    .get('/alerts/summary', { summary: 'Counts: unresolved alerts in total and per severity, every alert per status', query: alerts.AlertSummaryQuery, response: alerts.AlertSummarySchema }, call(alerts.alertSummary))
    .get('/alerts/rules', { summary: 'Alert rules', query: alertRules.AlertRuleListQuery, response: alertRules.AlertRulePageSchema }, call(alertRules.listAlertRules))
    .post('/alerts/rules', { summary: 'Create an alert rule (from a template, or with conditions and severity)', body: alertRules.CreateAlertRuleSchema, status: 201, response: alertRules.AlertRuleViewSchema }, call(alertRules.createAlertRule))
    .get('/alerts/rules/:id', { summary: 'One alert rule', params: rule, response: alertRules.AlertRuleViewSchema }, call(alertRules.getAlertRule))
    .patch('/alerts/rules/:id', { summary: 'Change an alert rule', params: rule, body: alertRules.UpdateAlertRuleSchema, response: alertRules.AlertRuleViewSchema }, call(alertRules.updateAlertRule))
    .delete('/alerts/rules/:id', { summary: 'Delete an alert rule (its alerts stay)', params: rule, status: 204 }, call(alertRules.deleteAlertRule))
    .post('/alerts/rules/:id/test', { summary: 'Which devices the rule would fire for now; raises nothing', params: rule, body: alertRules.TestAlertRuleSchema, response: alertRules.AlertRuleTestResultSchema }, call(alertRules.testAlertRule))
    .get('/alerts/:id', { summary: 'One alert', params: alert, response: alerts.AlertViewSchema }, call(alerts.getAlert))
    .post('/alerts/:id/acknowledge', { summary: 'Acknowledge an alert', params: alert, response: alerts.AlertViewSchema }, call(alerts.acknowledgeAlert))
    .post('/alerts/:id/resolve', { summary: 'Resolve an alert', params: alert, body: alerts.ResolveAlertSchema, response: alerts.AlertViewSchema }, call(alerts.resolveAlert))
    .post('/alerts/:id/suppress', { summary: 'Suppress an alert until a given time', params: alert, body: alerts.SuppressAlertSchema, response: alerts.AlertViewSchema }, call(alerts.suppressAlert));
}
