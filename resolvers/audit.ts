import { GraphQLJSONObject } from 'graphql-scalars';
import { Arg, Args, Ctx, Field, ID, InputType, Int, ObjectType, Query, Resolver } from 'type-graphql';
import type { ActorType, AuditResult } from '../entities/audit-log.js';
import type { GraphqlContext } from '../src/graphql/context.js';
import { auditStats, getAuditLog, listAuditLogs, type AuditLogView, type AuditStats } from '../src/services/audit.js';
import { PageArgs, PageOf } from './shared.js';

@ObjectType('AuditLog', { description: 'One entry of the hash-chained audit log.' })
class AuditLogObject implements AuditLogView {
  @Field(() => ID)
  id!: string;

  @Field(() => String, { description: 'position in the chain' })
  seq!: string;

  @Field(() => String)
  createdAt!: string;

  @Field(() => String, { description: 'user, api_key, agent, system or anonymous' })
  actorType!: ActorType;

  @Field(() => ID, { nullable: true })
  actorId!: string | null;

  @Field(() => String, { nullable: true })
  actorEmail!: string | null;

  @Field(() => String)
  action!: string;

  @Field(() => String)
  resourceType!: string;

  @Field(() => String, { nullable: true })
  resourceId!: string | null;

  @Field(() => ID, { nullable: true })
  orgId!: string | null;

  @Field(() => ID, { nullable: true })
  partnerId!: string | null;

  @Field(() => String, { nullable: true })
  ip!: string | null;

  @Field(() => String, { nullable: true })
  userAgent!: string | null;

  @Field(() => String, { description: 'success, denied or failure' })
  result!: AuditResult;

  @Field(() => [String], { description: 'names of the fields a change touched' })
  changes!: string[];

  @Field(() => GraphQLJSONObject)
  details!: Record<string, unknown>;

  @Field(() => String)
  prevHash!: string;

  @Field(() => String)
  hash!: string;
}

const AuditLogPage = PageOf(AuditLogObject, 'AuditLogPage');

@InputType('AuditLogFilter')
class AuditLogFilterGql {
  @Field(() => ID, { nullable: true })
  orgId?: string;

  @Field(() => ID, { nullable: true })
  actorId?: string;

  @Field(() => String, { nullable: true })
  actorType?: ActorType;

  @Field(() => String, { nullable: true, description: 'exact, or with `*` wildcards (`user.*`)' })
  action?: string;

  @Field(() => String, { nullable: true })
  resourceType?: string;

  @Field(() => String, { nullable: true })
  resourceId?: string;

  @Field(() => String, { nullable: true })
  result?: AuditResult;

  @Field(() => String, { nullable: true, description: 'ISO 8601' })
  from?: string;

  @Field(() => String, { nullable: true, description: 'ISO 8601' })
  to?: string;

  @Field(() => String, { nullable: true, description: 'text search over action, resource, actor email and details' })
  q?: string;
}

@ObjectType('AuditActionCount')
class ActionCount {
  @Field(() => String)
  action!: string;

  @Field(() => Int)
  count!: number;
}

@ObjectType('AuditResultCount')
class ResultCount {
  @Field(() => String)
  result!: string;

  @Field(() => Int)
  count!: number;
}

@ObjectType('AuditDayCount')
class DayCount {
  @Field(() => String, { description: 'YYYY-MM-DD (UTC)' })
  day!: string;

  @Field(() => Int)
  count!: number;
}

@ObjectType('AuditStats')
class AuditStatsObject implements AuditStats {
  @Field(() => String)
  from!: string;

  @Field(() => String)
  to!: string;

  @Field(() => Int)
  total!: number;

  @Field(() => [ActionCount])
  byAction!: ActionCount[];

  @Field(() => [ResultCount])
  byResult!: ResultCount[];

  @Field(() => [DayCount])
  byDay!: DayCount[];
}

@Resolver()
export class AuditResolver {
  @Query(() => AuditLogPage, { description: 'Audit entries of the tenants you can see, newest first.' })
  auditLogs(
    @Ctx() { ctx }: GraphqlContext,
    @Args(() => PageArgs) page: PageArgs,
    @Arg('filters', () => AuditLogFilterGql, { nullable: true }) filters?: AuditLogFilterGql,
  ) {
    return listAuditLogs(ctx, { ...filters, ...page });
  }

  @Query(() => AuditLogObject)
  auditLog(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string) {
    return getAuditLog(ctx, id);
  }

  @Query(() => AuditStatsObject, { description: 'Counts by action, result and day; the last 30 days unless from/to say otherwise.' })
  auditStats(
    @Ctx() { ctx }: GraphqlContext,
    @Arg('orgId', () => ID, { nullable: true }) orgId?: string,
    @Arg('from', () => String, { nullable: true }) from?: string,
    @Arg('to', () => String, { nullable: true }) to?: string,
  ) {
    return auditStats(ctx, { orgId, from, to });
  }
}
