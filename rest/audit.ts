import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Response } from 'express';
import type { OpenApiRegistry } from '../src/http/openapi.js';
import { AuditExportInput, AuditExportQuery, exportAuditLog, type AuditExport } from '../src/services/audit/audit-export.js';
import { AuditListQuery, AuditLogPageSchema, AuditLogViewSchema, AuditSearchQuery, getAuditLog, listAuditLogs, searchAuditLogs } from '../src/services/audit/audit-log.js';
import {
  AuditPeriodQuery,
  AuditReportQuery,
  AuditStatsSchema,
  ComplianceReportSchema,
  SecurityEventsReportSchema,
  UserActivityReportSchema,
  auditStats,
  complianceReport,
  securityEventsReport,
  userActivityReport,
} from '../src/services/audit/audit-reports.js';
import { RestRouter, pathId } from './router.js';

/** Streams the export straight to the client: rows leave as they are read, never buffered whole. */
async function sendExport(res: Response, file: AuditExport): Promise<void> {
  res.status(200);
  res.setHeader('Content-Type', file.contentType);
  res.setHeader('Content-Disposition', `attachment; filename="${file.filename}"`);
  res.setHeader('Cache-Control', 'no-store');
  await pipeline(Readable.from(file.body), res);
}

export function auditRouter(openapi: OpenApiRegistry): RestRouter {
  const list = { summary: 'Audit log entries, newest first (action accepts `*` wildcards)', query: AuditListQuery, response: AuditLogPageSchema };
  return new RestRouter(openapi, 'Audit')
    .get('/audit', list, (ctx, { query }) => listAuditLogs(ctx, query))
    .get('/audit/logs', list, (ctx, { query }) => listAuditLogs(ctx, query))
    .get('/audit/logs/:id', { summary: 'One audit log entry', params: { id: pathId('Audit log entry') }, response: AuditLogViewSchema }, (ctx, { params }) => getAuditLog(ctx, params.id))
    .get('/audit/search', { summary: 'Text search over action, resource, actor email and details', query: AuditSearchQuery, response: AuditLogPageSchema }, (ctx, { query }) =>
      searchAuditLogs(ctx, query),
    )
    .get('/audit/export', { summary: 'Download the filtered log as CSV or JSON (streamed)', query: AuditExportQuery }, async (ctx, { query, res }) => {
      const { format, ...filters } = query;
      await sendExport(res, await exportAuditLog(ctx, { format, filters }));
    })
    .post('/audit/export', { summary: 'Download the filtered log as CSV or JSON (streamed)', body: AuditExportInput }, async (ctx, { body, res }) => {
      await sendExport(res, await exportAuditLog(ctx, body));
    })
    .get('/audit/reports/user-activity', { summary: 'Entries per actor in a period (default: last 30 days)', query: AuditReportQuery, response: UserActivityReportSchema }, (ctx, { query }) =>
      userActivityReport(ctx, query),
    )
    .get('/audit/reports/security-events', { summary: 'Sign-ins, failures, denied attempts, MFA, API key and role changes', query: AuditReportQuery, response: SecurityEventsReportSchema }, (ctx, { query }) =>
      securityEventsReport(ctx, query),
    )
    .get('/audit/reports/compliance', { summary: 'Totals and integrity; system callers also get the whole hash chain verified', query: AuditPeriodQuery, response: ComplianceReportSchema }, (ctx, { query }) =>
      complianceReport(ctx, query),
    )
    .get('/audit/stats', { summary: 'Counts by action, result and day', query: AuditPeriodQuery, response: AuditStatsSchema }, (ctx, { query }) => auditStats(ctx, query));
}
