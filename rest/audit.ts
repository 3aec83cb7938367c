import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Response } from 'express';
import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as auditExport from '../src/services/audit/audit-export.js';
import * as auditLog from '../src/services/audit/audit-log.js';
import * as auditReports from '../src/services/audit/audit-reports.js';
import { call, pathId, RestRouter } from './router.js';

/** Streams the export straight to the client: rows leave as they are read, never buffered whole. */
async function sendExport(res: Response, file: auditExport.AuditExport): Promise<void> {
  res.status(200);
  res.setHeader('Content-Type', file.contentType);
  res.setHeader('Content-Disposition', `attachment; filename="${file.filename}"`);
  res.setHeader('Cache-Control', 'no-store');
  await pipeline(Readable.from(file.body), res);
}

export function auditRouter(openapi: OpenApiRegistry): RestRouter {
  const list = { summary: 'Audit log entries, newest first (action accepts `*` wildcards)', query: auditLog.AuditListQuery, response: auditLog.AuditLogPageSchema };
  return new RestRouter(openapi, 'Audit')
    .get('/audit', list, (ctx, { query }) => auditLog.listAuditLogs(ctx, query))
    .get('/audit/logs', list, (ctx, { query }) => auditLog.listAuditLogs(ctx, query))
    .get('/audit/logs/:id', { summary: 'One audit log entry', params: { id: pathId('Audit log entry') }, response: auditLog.AuditLogViewSchema }, call(auditLog.getAuditLog))
    .get('/audit/search', { summary: 'Text search over action, resource, actor email and details', query: auditLog.AuditSearchQuery, response: auditLog.AuditLogPageSchema }, call(auditLog.searchAuditLogs))
    .get('/audit/export', { summary: 'Download the filtered log as CSV or JSON (streamed)', query: auditExport.AuditExportQuery }, async (ctx, { query, res }) => {
      const { format, ...filters } = query;
      await sendExport(res, await auditExport.exportAuditLog(ctx, { format, filters }));
    })
    .post('/audit/export', { summary: 'Download the filtered log as CSV or JSON (streamed)', body: auditExport.AuditExportInput }, async (ctx, { body, res }) => {
      await sendExport(res, await auditExport.exportAuditLog(ctx, body));
    })
    .get('/audit/reports/user-activity', { summary: 'Entries per actor in a period (default: last 30 days)', query: auditReports.AuditReportQuery, response: auditReports.UserActivityReportSchema }, call(auditReports.userActivityReport))
    .get('/audit/reports/security-events', { summary: 'Sign-ins, failures, denied attempts, MFA, API key and role changes', query: auditReports.AuditReportQuery, response: auditReports.SecurityEventsReportSchema }, call(auditReports.securityEventsReport))
    .get('/audit/reports/compliance', { summary: 'Totals and integrity; system callers also get the whole hash chain verified', query: auditReports.AuditPeriodQuery, response: auditReports.ComplianceReportSchema }, call(auditReports.complianceReport))
    .get('/audit/stats', { summary: 'Counts by action, result and day', query: auditReports.AuditPeriodQuery, response: auditReports.AuditStatsSchema }, call(auditReports.auditStats));
}
