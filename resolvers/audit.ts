import { arg, args, id, inputType, operations, pageArgs, query } from '../src/graphql/contract.js';
import { PageQuery, type PageInput } from '../src/pagination.js';
import { AuditFilters, AuditLogPageSchema, AuditLogViewSchema, getAuditLog, listAuditLogs } from '../src/services/audit/audit-log.js';
import { AuditPeriodQuery, AuditStatsSchema, auditStats } from '../src/services/audit/audit-reports.js';
import { pageConnectionOf, paged } from './shared.js';

export const AuditResolver = operations({
  auditLogs: query(
    pageConnectionOf(AuditLogPageSchema),
    [arg('filters', inputType('AuditLogFilter', AuditFilters), { nullable: true, description: 'Which entries to list; every entry the caller can see when left out.' }), pageArgs('AuditLogListArgs', PageQuery)],
    paged((ctx, filters: AuditFilters | null | undefined, page: PageInput) => listAuditLogs(ctx, { ...filters, ...page })),
    { description: 'Audit entries of the tenants you can see, newest first.' },
  ),
  auditLog: query(AuditLogViewSchema, [id], getAuditLog, { description: 'One audit entry.' }),
  auditStats: query(AuditStatsSchema, [args('AuditPeriodArgs', AuditPeriodQuery)], auditStats, {
    description: 'Counts by action, result and day; the last 30 days unless from/to say otherwise.',
  }),
});
