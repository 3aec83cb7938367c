import { Arg, Ctx, Query, Resolver, Root, Subscription } from 'type-graphql';
import { objectType } from '../src/graphql/contract.js';
import type { GraphqlContext } from '../src/graphql/context.js';
import type { DomainEvent } from '../src/events/types.js';
import { DomainEventSchema, ServiceInfoSchema, serviceInfo, subscribeDomainEvents } from '../src/services/events.js';

const ServiceInfoObject = objectType('ServiceInfo', ServiceInfoSchema);
const DomainEventObject = objectType('DomainEvent', DomainEventSchema);

@Resolver()
export class SystemResolver {
  @Query(() => ServiceInfoObject, { description: 'Liveness and version of the service.' })
  serviceInfo(@Ctx() { ctx }: GraphqlContext) {
    return serviceInfo(ctx);
  }

  @Subscription(() => DomainEventObject, {
    description: 'Committed domain events of the organizations the caller can see, from any server instance.',
    subscribe: ({ args, context }) => subscribeDomainEvents((context as GraphqlContext).ctx, (args.types as string[] | undefined) ?? null),
  })
  domainEvents(@Root() event: DomainEvent, @Arg('types', () => [String], { nullable: true }) _types?: string[]): DomainEvent {
    return event;
  }
}
