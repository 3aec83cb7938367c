import { Arg, Ctx, Field, ObjectType, Query, Resolver, Root, Subscription } from 'type-graphql';
import { GraphQLJSONObject } from 'graphql-scalars';
import type { GraphqlContext } from '../src/graphql/context.js';
import { skipAuthorization } from '../src/auth/policy.js';
import type { DomainEvent } from '../src/events/types.js';
import { subscribeDomainEvents } from '../src/services/events.js';

@ObjectType()
class ServiceInfo {
  @Field(() => String)
  status!: string;

  @Field(() => String)
  version!: string;
}

@ObjectType('DomainEvent')
class DomainEventObject {
  @Field(() => String)
  id!: string;

  @Field(() => String)
  type!: string;

  @Field(() => String, { nullable: true })
  orgId!: string | null;

  @Field(() => String)
  timestamp!: string;

  @Field(() => GraphQLJSONObject)
  data!: Record<string, unknown>;
}

@Resolver()
export class SystemResolver {
  @Query(() => ServiceInfo, { description: 'Liveness and version of the service.' })
  serviceInfo(@Ctx() { ctx }: GraphqlContext): ServiceInfo {
    skipAuthorization(ctx, 'public service information');
    return { status: 'ok', version: ctx.runtime.config.serviceVersion };
  }

  @Subscription(() => DomainEventObject, {
    description: 'Committed domain events of the organizations the caller can see, from any server instance.',
    subscribe: ({ args, context }) => subscribeDomainEvents((context as GraphqlContext).ctx, (args.types as string[] | undefined) ?? null),
  })
  domainEvents(@Root() event: DomainEvent, @Arg('types', () => [String], { nullable: true }) _types?: string[]): DomainEventObject {
    return event;
  }
}
