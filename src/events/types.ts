/**
 * Domain events. Services emit them inside their transaction (src/events/outbox.ts); the dispatcher
 * hands committed ones to subscribers. A domain adds its event types to `DomainEventMap`.
 */
export interface DomainEventMap {
  'user.login': { userId: string; email: string; method: 'password' | 'sso' | 'mfa' };
  'user.logout': { userId: string; email: string };
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
  'api_key.created': { apiKeyId: string; userId: string; name: string; scopes: string[] };
  'api_key.updated': { apiKeyId: string; userId: string; changes: string[] };
  'api_key.rotated': { apiKeyId: string; userId: string };
  'sso_provider.created': { providerId: string; name: string; type: string };
  'sso_provider.updated': { providerId: string; name: string; changes: string[] };
  'sso_provider.deleted': { providerId: string; name: string };
  'sso_provider.status_changed': { providerId: string; from: string; to: string };
  'access_review.created': { reviewId: string; name: string; partnerId: string | null; items: number };
  'access_review.item_decided': { reviewId: string; itemId: string; decision: string };
  'access_review.completed': { reviewId: string; revoked: number };
  'webhook.test': Record<string, unknown>;
  // The webhook catalog (spec, document 2). A domain narrows its payloads when it lands; until then
  // they are open objects, except device.offline, whose data the spec shows.
  'device.enrolled': DeviceEventData;
  'device.online': DeviceEventData;
  'device.offline': DeviceEventData;
  'device.updated': DeviceEventData & { changes?: string[] };
  'device.decommissioned': DeviceEventData;
  'device.command_updated': { commandId: string; deviceId: string; orgId: string; type: string; status: string };
  'enrollment_key.created': EnrollmentKeyEventData;
  'enrollment_key.rotated': EnrollmentKeyEventData;
  'enrollment_key.deleted': EnrollmentKeyEventData;
  'alert.triggered': AlertEventData;
  'alert.acknowledged': AlertEventData;
  'alert.resolved': AlertEventData;
  'alert.escalated': AlertEventData;
  'script.started': ScriptExecutionEventData;
  'script.completed': ScriptExecutionEventData;
  'script.failed': ScriptExecutionEventData;
  /** every status change of an execution (live updates; not a webhook event) */
  'script.execution_updated': ScriptExecutionEventData;
  'automation.started': AutomationRunEventData;
  'automation.completed': AutomationRunEventData;
  'automation.failed': AutomationRunEventData;
  'policy.evaluated': PendingPayload;
  'policy.violation': PendingPayload;
  'policy.compliant': PendingPayload;
  'patch.available': PendingPayload;
  'patch.approved': PendingPayload;
  'patch.installed': PendingPayload;
  'patch.failed': PendingPayload;
  'patch.rollback': PendingPayload;
  'security.score_changed': PendingPayload;
  'remote.session.started': PendingPayload;
  'remote.session.ended': PendingPayload;
  'remote.file.transferred': PendingPayload;
  'session.login': PendingPayload;
  'session.logout': PendingPayload;
  'role.created': { roleId: string; name: string; scope: string; clonedFrom?: string };
  'role.updated': { roleId: string; name: string; scope: string; changes: string[] };
  'role.deleted': { roleId: string; name: string; scope: string };
  // Agent releases are the platform's (no organization): only system callers see these events.
  'agent_version.synced': { version: string; prerelease: boolean; changed: string[]; promoted: string[] };
  'agent_version.promoted': { version: string; component: string | null; promoted: string[] };

}

/** Every device event carries the device as it now is; `lastSeen` is the spec's name (document 2) for `lastSeenAt`. */
export type DeviceEventData = {
  deviceId: string;
  orgId: string;
  siteId: string | null;
  hostname: string;
  status: string;
  previousStatus: string | null;
  lastSeenAt: string | null;
  lastSeen: string | null;
};

/** Every alert event carries the alert as it now is. */
export type AlertEventData = {
  alertId: string;
  orgId: string;
  siteId: string | null;
  deviceId: string;
  ruleId: string | null;
  severity: string;
  status: string;
  title: string;
};

/** A run of an automation: started (status running), or ended (completed; failed and partial end as automation.failed). */
export type AutomationRunEventData = {
  automationId: string;
  runId: string;
  orgId: string;
  name: string;
  /** what started the run: schedule, event, webhook or manual */
  source: string;
  status: string;
  deviceCount: number;
  /** devices that failed a step (ended runs) */
  failedDeviceIds?: string[];
  startedAt: string;
  completedAt: string | null;
};

type EnrollmentKeyEventData = {
  enrollmentKeyId: string;
  orgId: string;
  name: string;
};

/** A script execution as its status changed; `exitCode` once the agent reported one. */
export type ScriptExecutionEventData = {
  executionId: string;
  scriptId: string;
  deviceId: string;
  orgId: string;
  status: string;
  exitCode: number | null;
};

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
 * (`sso_provider.created`). `recordChange` reads this table, so a mutation's audit row and its event
 * cannot drift apart.
 */
export const AUDIT_ACTIONS = {
  'partner.create': 'partner.created',
  'partner.update': 'partner.updated',
  'partner.delete': 'partner.deleted',
  'organization.create': 'organization.created',
  'organization.update': 'organization.updated',
  'organization.delete': 'organization.deleted',
  'site.create': 'site.created',
  'site.update': 'site.updated',
  'site.delete': 'site.deleted',
  'role.create': 'role.created',
  'role.clone': 'role.created',
  'role.update': 'role.updated',
  'role.delete': 'role.deleted',
  'user.invite': 'user.invited',
  'user.invite.accept': 'user.invite_accepted',
  'user.invite.resend': null,
  'user.create': null,
  'user.update': 'user.updated',
  'user.delete': 'user.deleted',
  'user.role.change': 'user.role_changed',
  'user.membership.accept': 'user.membership_accepted',
  'user.membership.decline': 'user.membership_declined',
  'user.access.revoke': null,
  'auth.login': 'user.login',
  'auth.logout': 'user.logout',
  'auth.password.change': 'user.password_changed',
  'auth.membership.switch': null,
  'auth.session.revoke': null,
  'auth.mfa.setup': null,
  'auth.mfa.enable': null,
  'auth.mfa.disable': null,
  'auth.mfa.recovery_code.use': null,
  'api_key.create': 'api_key.created',
  'api_key.update': 'api_key.updated',
  'api_key.revoke': 'api_key.revoked',
  'api_key.rotate': 'api_key.rotated',
  'sso.provider.create': 'sso_provider.created',
  'sso.provider.update': 'sso_provider.updated',
  'sso.provider.delete': 'sso_provider.deleted',
  'sso.provider.status.update': 'sso_provider.status_changed',
  'sso.provider.test': null,
  'sso.identity.link': null,
  'sso.identity.link.start': null,
  'access_review.create': 'access_review.created',
  'access_review.decide': 'access_review.item_decided',
  'access_review.complete': 'access_review.completed',
  'webhook.create': null,
  'webhook.update': null,
  'webhook.delete': null,
  'webhook.test': null,
  'webhook.retry': null,
  'webhook.auto_failed': null,
  'device.enroll': 'device.enrolled',
  'device.provision': null,
  'device.update': 'device.updated',
  'device.move': 'device.updated',
  'device.decommission': null,
  'device.command.create': 'device.command_updated',
  'device.command.cancel': 'device.command_updated',
  'enrollment_key.create': 'enrollment_key.created',
  'enrollment_key.rotate': 'enrollment_key.rotated',
  'enrollment_key.delete': 'enrollment_key.deleted',
  // Device groups: no webhook catalog event (spec, document 2), so audited only.
  'device_group.create': null,
  'device_group.update': null,
  'device_group.delete': null,
  'device_group.member.add': null,
  'device_group.member.remove': null,
  'device_group.pin': null,
  'device_group.unpin': null,
  // Alert channels and policies: organization configuration, audited only (alerts themselves emit alert.*).
  'alert_channel.create': null,
  'alert_channel.update': null,
  'alert_channel.delete': null,
  'alert_channel.test': null,
  'alert_policy.create': null,
  'alert_policy.update': null,
  'alert_policy.delete': null,
  // Maintenance windows: no webhook catalog event (spec, document 2), so audited only; devices entering or leaving maintenance emit their status events.
  'maintenance_window.create': null,
  'maintenance_window.update': null,
  'maintenance_window.delete': null,
  'maintenance_window.cancel': null,
  'maintenance_occurrence.start': null,
  'maintenance_occurrence.end': null,
  // Automations: the runs' own events (automation.started/completed/failed) come from the run engine.
  'automation.create': null,
  'automation.update': null,
  'automation.delete': null,
  'automation.run': null,
  'automation.notify': null,
  // Scripts: executions publish their script.* events from the agent's reports, not from these actions.
  'script.create': null,
  'script.update': null,
  'script.delete': null,
  'script.import': null,
  'script.execute': null,
  'script.execution.cancel': null,
  'script.version.create': null,
  'script.version.rollback': null,
  'script_category.create': null,
  'script_category.update': null,
  'script_category.delete': null,
  'script_tag.create': null,
  'script_tag.delete': null,
  'agent_version.sync': 'agent_version.synced',
  'agent_version.promote': 'agent_version.promoted',
  'graphql.trusted_documents.import': null,
  // Alert rules, templates and suppression are configuration: audited, no catalog event.
  'alert_rule.create': null,
  'alert_rule.update': null,
  'alert_rule.delete': null,
  'alert_template.create': null,
  'alert_template.update': null,
  'alert_template.delete': null,
  'alert.acknowledge': 'alert.acknowledged',
  'alert.resolve': 'alert.resolved',
  'alert.suppress': null,
  'access.denied': null,
  'audit.read': null,
  'audit.export': null,
  'bench.write': null,
} as const satisfies Record<string, DomainEventType | null>;

export type AuditAction = keyof typeof AUDIT_ACTIONS;
/** Actions whose mutation publishes an event, and that event's type. */
export type PublishingAction = { [A in AuditAction]: (typeof AUDIT_ACTIONS)[A] extends null ? never : A }[AuditAction];
export type EventOfAction<A extends PublishingAction> = Extract<(typeof AUDIT_ACTIONS)[A], DomainEventType>;

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
