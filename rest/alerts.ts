import type { OpenApiRegistry } from '../src/http/openapi.js';
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
  AlertListQuery,
  AlertPageSchema,
  AlertSummaryQuery,
  AlertSummarySchema,
  AlertViewSchema,
  ResolveAlertSchema,
  SuppressAlertSchema,
  acknowledgeAlert,
  alertSummary,
  getAlert,
  listAlerts,
  resolveAlert,
  suppressAlert,
} from '../src/services/alerts/alerts.js';
import { RestRouter, pathId } from './router.js';

/** Alerts and the rules that raise them. */
export function alertsRouter(openapi: OpenApiRegistry): RestRouter {
  const alert = { id: pathId('Alert') };
  const rule = { id: pathId('Alert rule') };
  return new RestRouter(openapi, 'Alerts')
    .get('/alerts', { summary: 'Alerts you can see, newest first (every status unless `status` is given)', query: AlertListQuery, response: AlertPageSchema }, (ctx, { query }) => listAlerts(ctx, query))
    .get('/alerts/summary', { summary: 'Counts: unresolved alerts in total and per severity, every alert per status', query: AlertSummaryQuery, response: AlertSummarySchema }, (ctx, { query }) =>
      alertSummary(ctx, query),
    )
    .get('/alerts/rules', { summary: 'Alert rules', query: AlertRuleListQuery, response: AlertRulePageSchema }, (ctx, { query }) => listAlertRules(ctx, query))
    .post('/alerts/rules', { summary: 'Create an alert rule (from a template, or with conditions and severity)', body: CreateAlertRuleSchema, status: 201, response: AlertRuleViewSchema }, (ctx, { body }) =>
      createAlertRule(ctx, body),
    )
    .get('/alerts/rules/:id', { summary: 'One alert rule', params: rule, response: AlertRuleViewSchema }, (ctx, { params }) => getAlertRule(ctx, params.id))
    .patch('/alerts/rules/:id', { summary: 'Change an alert rule', params: rule, body: UpdateAlertRuleSchema, response: AlertRuleViewSchema }, (ctx, { params, body }) => updateAlertRule(ctx, params.id, body))
    .delete('/alerts/rules/:id', { summary: 'Delete an alert rule (its alerts stay)', params: rule, status: 204 }, (ctx, { params }) => deleteAlertRule(ctx, params.id))
    .post('/alerts/rules/:id/test', { summary: 'Which devices the rule would fire for now; raises nothing', params: rule, body: TestAlertRuleSchema, response: AlertRuleTestResultSchema }, (ctx, { params, body }) =>
      testAlertRule(ctx, params.id, body),
    )
    .get('/alerts/:id', { summary: 'One alert', params: alert, response: AlertViewSchema }, (ctx, { params }) => getAlert(ctx, params.id))
    .post('/alerts/:id/acknowledge', { summary: 'Acknowledge an alert', params: alert, response: AlertViewSchema }, (ctx, { params }) => acknowledgeAlert(ctx, params.id))
    .post('/alerts/:id/resolve', { summary: 'Resolve an alert', params: alert, body: ResolveAlertSchema, response: AlertViewSchema }, (ctx, { params, body }) => resolveAlert(ctx, params.id, body))
    .post('/alerts/:id/suppress', { summary: 'Suppress an alert until a given time', params: alert, body: SuppressAlertSchema, response: AlertViewSchema }, (ctx, { params, body }) =>
      suppressAlert(ctx, params.id, body),
    );
}
