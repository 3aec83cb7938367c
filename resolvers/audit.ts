import { arg, args, id, inputType, operations, query } from '../src/graphql/contract.js';
import { PageQuery } from '../src/pagination.js';
import { AuditFilters, AuditLogPageSchema, AuditLogViewSchema, AuditPeriodQuery, AuditStatsSchema, auditStats, getAuditLog, listAuditLogs } from '../src/services/audit.js';

export const AuditResolver = operations({
  auditLogs: query(
    AuditLogPageSchema,
    [args('PageArgs', PageQuery), arg('filters', inputType('AuditLogFilter', AuditFilters), { nullable: true })],
    (ctx, page, filters) => listAuditLogs(ctx, { ...filters, ...page }),
    { description: 'Audit entries of the tenants you can see, newest first.' },
  ),
  auditLog: query(AuditLogViewSchema, [id], getAuditLog),
  auditStats: query(AuditStatsSchema, [args('AuditPeriodArgs', AuditPeriodQuery)], auditStats, {
    description: 'Counts by action, result and day; the last 30 days unless from/to say otherwise.',
  }),
});
