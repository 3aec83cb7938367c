import { Arg, Args, Ctx, ID, Query, Resolver } from 'type-graphql';
import { argsType, inputType, objectType } from '../src/graphql/contract.js';
import type { GraphqlContext } from '../src/graphql/context.js';
import { PageQuery, pageSchema, type PageInput } from '../src/pagination.js';
import {
  AuditFilters,
  AuditLogViewSchema,
  AuditPeriodQuery,
  AuditStatsSchema,
  auditStats,
  getAuditLog,
  listAuditLogs,
  type AuditPeriodQuery as AuditPeriodInput,
} from '../src/services/audit.js';

const AuditLogObject = objectType('AuditLog', AuditLogViewSchema);
const AuditLogPage = objectType('AuditLogPage', pageSchema(AuditLogViewSchema, 'AuditLogPage'));
const AuditStatsObject = objectType('AuditStats', AuditStatsSchema);
const AuditLogFilter = inputType('AuditLogFilter', AuditFilters);
const AuditPeriodArgs = argsType('AuditPeriodArgs', AuditPeriodQuery);
const PageArgs = argsType('PageArgs', PageQuery);

@Resolver()
export class AuditResolver {
  @Query(() => AuditLogPage, { description: 'Audit entries of the tenants you can see, newest first.' })
  auditLogs(
    @Ctx() { ctx }: GraphqlContext,
    @Args(() => PageArgs) page: PageInput,
    @Arg('filters', () => AuditLogFilter, { nullable: true }) filters?: AuditFilters,
  ) {
    return listAuditLogs(ctx, { ...filters, ...page });
  }

  @Query(() => AuditLogObject)
  auditLog(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string) {
    return getAuditLog(ctx, id);
  }

  @Query(() => AuditStatsObject, { description: 'Counts by action, result and day; the last 30 days unless from/to say otherwise.' })
  auditStats(@Ctx() { ctx }: GraphqlContext, @Args(() => AuditPeriodArgs) period: AuditPeriodInput) {
    return auditStats(ctx, period);
  }
}
