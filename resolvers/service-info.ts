import { arg, operations, query, subscription } from '../src/graphql/contract.js';
import * as serviceInfoService from '../src/services/platform/service-info.js';

export const SystemResolver = operations({
  serviceInfo: query(serviceInfoService.ServiceInfoSchema, [], serviceInfoService.serviceInfo, { description: 'Liveness and version of the service.' }),
  domainEvents: subscription(serviceInfoService.DomainEventSchema, [arg('types', [String], { nullable: true, description: 'Only events of these names (device.online, …); every event when left out.' })], (ctx, types) => serviceInfoService.subscribeDomainEvents(ctx, types ?? null), {
    description: 'Committed domain events of the organizations the caller can see, from any server instance.',
  }),
});
