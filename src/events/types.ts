/**
 * Domain events. Services emit them inside their transaction (src/events/outbox.ts); the dispatcher
 * hands committed ones to subscribers. A domain adds its event types to `DomainEventMap`.
 */
export interface DomainEventMap {
  'user.login': { userId: string; email: string; method: 'password' | 'sso' | 'mfa' };
  'user.logout': { userId: string; email: string };
  'webhook.test': Record<string, unknown>;
  'partner.created': { partnerId: string; name: string; changes: string[] };
  'partner.updated': { partnerId: string; name: string; changes: string[] };
  'partner.deleted': { partnerId: string; name: string };
  'organization.created': { orgId: string; partnerId: string; name: string; changes: string[] };
  'organization.updated': { orgId: string; partnerId: string; name: string; changes: string[] };
  'organization.deleted': { orgId: string; partnerId: string; name: string };
  'site.created': { siteId: string; orgId: string; name: string; changes: string[] };
  'site.updated': { siteId: string; orgId: string; name: string; changes: string[] };
  'site.deleted': { siteId: string; orgId: string; name: string };
  'user.invited': { userId: string; email: string; roleId: string; partnerId: string | null; newAccount: boolean };
  'user.invite_accepted': { userId: string; email: string };
  'user.updated': { userId: string; changes: string[] };
  'user.deleted': { userId: string; email: string; accountDeleted: boolean };
  'user.role_changed': { userId: string; membershipId: string; previousRoleId: string; roleId: string };
  'user.password_changed': { userId: string; apiKeysRevoked: number };
  'user.membership_accepted': { userId: string; membershipId: string; partnerId: string | null };
  'user.membership_declined': { userId: string; membershipId: string; partnerId: string | null };
  'api_key.revoked': { apiKeyId: string; userId: string; reason: string };
  'role.created': { roleId: string; name: string; scope: string; clonedFrom?: string };
  'role.updated': { roleId: string; name: string; scope: string; changes: string[] };
  'role.deleted': { roleId: string; name: string; scope: string };
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
