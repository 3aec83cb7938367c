/**
 * Domain events. Services emit them inside their transaction (src/events/outbox.ts); the dispatcher
 * hands committed ones to subscribers. Each domain declares its events by augmenting this interface in
 * its own `src/services/<domain>/events.ts` (`declare module '../../events/types.js'`), so the map is
 * the union of the domains' declarations with no central list.
 */
export interface DomainEventMap {
  // The rest of the webhook catalog (spec, document 2): open objects until their domain lands and
  // declares them in its own events.ts (moving them out of here).
  'remote.session.started': PendingPayload;
  'remote.session.ended': PendingPayload;
  'remote.file.transferred': PendingPayload;
  'session.login': PendingPayload;
  'session.logout': PendingPayload;
}

/** A payload its domain has not narrowed yet. */
type PendingPayload = Record<string, unknown>;

export type DomainEventType = keyof DomainEventMap & string;

/** The events webhooks may subscribe to (spec, document 2): one vocabulary with the outbox's, checked by the compiler. */
export const WEBHOOK_EVENT_TYPES = [
  'device.enrolled',
  'device.online',
  'device.offline',
  'device.updated',
  'device.decommissioned',
  'alert.triggered',
  'alert.acknowledged',
  'alert.resolved',
  'alert.escalated',
  'script.started',
  'script.completed',
  'script.failed',
  'automation.started',
  'automation.completed',
  'automation.failed',
  'policy.evaluated',
  'policy.violation',
  'policy.compliant',
  'patch.available',
  'patch.approved',
  'patch.installed',
  'patch.failed',
  'patch.rollback',
  'security.score_changed',
  'remote.session.started',
  'remote.session.ended',
  'remote.file.transferred',
  'user.login',
  'user.logout',
  'session.login',
  'session.logout',
  'webhook.test',
] as const satisfies readonly DomainEventType[];

/**
 * The audit actions, each with the event its mutation emits (null: recorded, not published). Action
 * names follow the spec's audit vocabulary (`sso.provider.create`); event names the webhook catalog's
 * (`sso_provider.created`). Each domain declares its table in its events.ts (`…AuditActions`, named by
 * its manifest) and adds it to this interface, so `recordChange` is typed by the same table it reads at
 * run time: a mutation's audit row and its event cannot drift apart.
 */
export interface AuditActionMap {}
export type AuditActionTable = Record<string, DomainEventType | null>;

export type AuditAction = keyof AuditActionMap & string;
/** Actions whose mutation publishes an event, and that event's type. */
export type PublishingAction = { [A in AuditAction]: AuditActionMap[A] extends null ? never : A }[AuditAction];
export type EventOfAction<A extends PublishingAction> = Extract<AuditActionMap[A], DomainEventType>;

const auditActions = new Map<string, DomainEventType | null>();

/** Installs the domains' audit action tables (the wiring does, from the manifests). A duplicate action is a programming error. */
export function installAuditActions(tables: AuditActionTable[]): void {
  auditActions.clear();
  for (const table of tables) {
    for (const [action, event] of Object.entries(table)) {
      if (auditActions.has(action)) throw new Error(`Duplicate audit action: ${action}`);
      auditActions.set(action, event);
    }
  }
}

/** The event an action publishes, or null; an action no domain declared is a programming error. */
export function eventOfAction(action: AuditAction): DomainEventType | null {
  const event = auditActions.get(action);
  if (event === undefined) throw new Error(`Unknown audit action ${action}: is its domain in src/domains.ts?`);
  return event;
}

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
  /**
   * Optional: the same work for several events at once (the ones of a dispatcher batch it wants, in
   * commit order), e.g. one multi-row insert. When it throws, the dispatcher falls back to `handle`
   * one event at a time, so a failing event is retried alone.
   */
  handleBatch?(ctx: import('../auth/context.js').RequestContext, events: DomainEvent[]): Promise<void>;
}

export function subscriberWants(subscriber: EventSubscriber, type: string): boolean {
  return subscriber.on.some((pattern) => pattern === '*' || pattern === type || (pattern.endsWith('.*') && type.startsWith(pattern.slice(0, -1))));
}
