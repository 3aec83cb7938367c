import { OutboxEvent } from '../../../entities/outbox.js';
import { graphqlRouter } from '../../../rest/graphql.js';
import { SystemResolver } from '../../../resolvers/service-info.js';
import { defineDomain } from '../../domain-module.js';
import { platformAuditActions } from './events.js';

/** Platform: service info, live domain events, GraphQL trusted documents. */
export const platformDomain = defineDomain({
  name: 'platform',
  entities: [OutboxEvent],
  rest: [graphqlRouter],
  resolvers: [SystemResolver],
  auditActions: platformAuditActions,
});
