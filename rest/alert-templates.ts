import type { OpenApiRegistry } from '../src/http/openapi.js';
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
  CorrelationListQuery,
  CorrelationPageSchema,
  analyzeCorrelations,
  listCorrelationGroups,
  listCorrelations,
} from '../src/services/alerts/correlation.js';
import { RestRouter, pathId } from './router.js';

/** Alert rule templates, and the correlation of alerts into incidents. */
export function alertTemplatesRouter(openapi: OpenApiRegistry): RestRouter {
  const template = { id: pathId('Alert template') };
  return new RestRouter(openapi, 'Alert templates')
    .get('/alert-templates/templates', { summary: 'The organizations’ own templates', query: AlertTemplateListQuery, response: AlertTemplatePageSchema }, (ctx, { query }) => listAlertTemplates(ctx, query))
    .post('/alert-templates/templates', { summary: 'Create a template', body: CreateAlertTemplateSchema, status: 201, response: AlertTemplateViewSchema }, (ctx, { body }) => createAlertTemplate(ctx, body))
    .get('/alert-templates/templates/built-in', { summary: 'The built-in templates', response: AlertTemplateListSchema }, (ctx) => listBuiltInTemplates(ctx))
    .patch('/alert-templates/templates/:id', { summary: 'Change a template (rules made from it keep their conditions)', params: template, body: UpdateAlertTemplateSchema, response: AlertTemplateViewSchema }, (ctx, { params, body }) =>
      updateAlertTemplate(ctx, params.id, body),
    )
    .delete('/alert-templates/templates/:id', { summary: 'Delete a template', params: template, status: 204 }, (ctx, { params }) => deleteAlertTemplate(ctx, params.id))
    .get('/alert-templates/correlations', { summary: 'Alerts and the incidents they belong to, newest first', query: CorrelationListQuery, response: CorrelationPageSchema }, (ctx, { query }) =>
      listCorrelations(ctx, query),
    )
    .get('/alert-templates/correlations/groups', { summary: 'Incidents (correlation groups), latest first', query: CorrelationGroupListQuery, response: CorrelationGroupPageSchema }, (ctx, { query }) =>
      listCorrelationGroups(ctx, query),
    )
    .post('/alert-templates/correlations/analyze', { summary: 'Regroup the organization’s unresolved alerts into incidents', body: AnalyzeCorrelationsSchema, response: CorrelationAnalysisSchema }, (ctx, { body }) =>
      analyzeCorrelations(ctx, body),
    );
}
