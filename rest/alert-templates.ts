import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as alertTemplates from '../src/services/alerts/alert-templates.js';
import * as correlation from '../src/services/alerts/correlation.js';
import { call, pathId, RestRouter } from './router.js';

/** Alert rule templates, and the correlation of alerts into incidents. */
export function alertTemplatesRouter(openapi: OpenApiRegistry): RestRouter {
  const template = { id: pathId('Alert template') };
  return new RestRouter(openapi, 'Alert templates')
    .get('/alert-templates/templates', { summary: 'The organizations’ own templates', query: alertTemplates.AlertTemplateListQuery, response: alertTemplates.AlertTemplatePageSchema }, call(alertTemplates.listAlertTemplates))
    .post('/alert-templates/templates', { summary: 'Create a template', body: alertTemplates.CreateAlertTemplateSchema, status: 201, response: alertTemplates.AlertTemplateViewSchema }, call(alertTemplates.createAlertTemplate))
    .get('/alert-templates/templates/built-in', { summary: 'The built-in templates', response: alertTemplates.AlertTemplateListSchema }, call(alertTemplates.listBuiltInTemplates))
    .patch('/alert-templates/templates/:id', { summary: 'Change a template (rules made from it keep their conditions)', params: template, body: alertTemplates.UpdateAlertTemplateSchema, response: alertTemplates.AlertTemplateViewSchema }, call(alertTemplates.updateAlertTemplate))
    .delete('/alert-templates/templates/:id', { summary: 'Delete a template', params: template, status: 204 }, call(alertTemplates.deleteAlertTemplate))
    .get('/alert-templates/correlations', { summary: 'Alerts and the incidents they belong to, newest first', query: correlation.CorrelationListQuery, response: correlation.CorrelationPageSchema }, call(correlation.listCorrelations))
    .get('/alert-templates/correlations/groups', { summary: 'Incidents (correlation groups), latest first', query: correlation.CorrelationGroupListQuery, response: correlation.CorrelationGroupPageSchema }, call(correlation.listCorrelationGroups))
    .post('/alert-templates/correlations/analyze', { summary: 'Regroup the organization’s unresolved alerts into incidents', body: correlation.AnalyzeCorrelationsSchema, response: correlation.CorrelationAnalysisSchema }, call(correlation.analyzeCorrelations));
}
