import { arg, args, id, inputType, operations, pageArgs, query } from '../src/graphql/contract.js';
import { PageQuery, type PageInput } from '../src/pagination.js';
import * as auditLog from '../src/services/audit/audit-log.js';
import * as auditReports from '../src/services/audit/audit-reports.js';
import { pageConnectionOf, paged } from './shared.js';

export const AuditResolver = operations({
  auditLogs: query(
    pageConnectionOf(auditLog.AuditLogPageSchema),
    [arg('filters', inputType('AuditLogFilter', auditLog.AuditFilters), { nullable: true, description: 'Which entries to list; every entry the caller can see when left out.' }), pageArgs('AuditLogListArgs', PageQuery)],
    paged((ctx, filters: auditLog.AuditFilters | null | undefined, page: PageInput) => auditLog.listAuditLogs(ctx, { ...filters, ...page })),
    { description: 'Audit entries of the tenants you can see, newest first.' },
  ),
  auditLog: query(auditLog.AuditLogViewSchema, [id], auditLog.getAuditLog, { description: 'One audit entry.' }),
  auditStats: query(auditReports.AuditStatsSchema, [args('AuditPeriodArgs', auditReports.AuditPeriodQuery)], auditReports.auditStats, {
    description: 'Counts by action, result and day; the last 30 days unless from/to say otherwise.',
  }),
});
