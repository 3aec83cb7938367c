import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as complianceReports from '../src/services/patching/compliance-reports.js';
import * as patchCompliance from '../src/services/patching/patch-compliance.js';
import { call, pathId, RestRouter } from './router.js';

/** Patch compliance and its reports (listed before the patches router: `/patches/:id` would take these paths). */
export function patchComplianceRouter(openapi: OpenApiRegistry): RestRouter {
  const report = { id: pathId('Report') };
  return new RestRouter(openapi, 'Patches')
    .get('/patches/compliance', { summary: 'Compliance with the approved patches of the devices you see', query: patchCompliance.PatchComplianceQuery, response: patchCompliance.PatchComplianceSchema }, call(patchCompliance.getPatchCompliance))
    .get(
      '/patches/compliance/report',
      { summary: 'Queue a compliance report (CSV or PDF) of the devices you see', query: complianceReports.PatchComplianceReportQuery, status: 202, response: complianceReports.PatchComplianceReportSchema },
      call(complianceReports.requestComplianceReport),
    )
    .get('/patches/compliance/report/:id', { summary: 'One of your compliance reports', params: report, response: complianceReports.PatchComplianceReportSchema }, call(complianceReports.getComplianceReport))
    .get('/patches/compliance/report/:id/download', { summary: 'Download a completed report (409 REPORT_NOT_READY before)', params: report }, async (ctx, { params, res }) => {
      const file = await complianceReports.downloadComplianceReport(ctx, params.id);
      res.status(200);
      res.setHeader('Content-Type', file.contentType);
      res.setHeader('Content-Disposition', `attachment; filename="${file.filename}"`);
      res.setHeader('Cache-Control', 'no-store');
      res.end(file.body);
    });
}
