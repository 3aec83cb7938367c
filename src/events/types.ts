/**
 * Domain events. Services emit them inside their transaction (src/events/outbox.ts); the dispatcher
 * hands committed ones to subscribers. A domain adds its event types to `DomainEventMap`.
 */
export interface DomainEventMap {
  'user.login': { userId: string; email: string; method: 'password' | 'sso' | 'mfa' };
  'user.logout': { userId: string; email: string };
  'webhook.test': Record<string, unknown>;
  [type: string]: Record<string, unknown>;
}

export type DomainEventType = keyof DomainEventMap & string;

export interface DomainEvent<T extends DomainEventType = DomainEventType> {
  id: string;
  type: T;
  orgId: string | null;
  timestamp: string;
  data: DomainEventMap[T];
}

/** A consumer of committed events. `on` takes exact types or `prefix.*` patterns. Handlers must be idempotent: delivery is at least once. */
export interface EventSubscriber {
  name: string;
  on: string[];
  handle(ctx: import('../auth/context.js').RequestContext, event: DomainEvent): Promise<void>;
}

export function subscriberWants(subscriber: EventSubscriber, type: string): boolean {
  return subscriber.on.some((pattern) => pattern === '*' || pattern === type || (pattern.endsWith('.*') && type.startsWith(pattern.slice(0, -1))));
}
