import type { AuditActionTable } from '../../events/types.js';

/** Webhook audit actions, each with the event its mutation emits (null: recorded, not published). */
export const webhooksAuditActions = {
  'webhook.create': null,
  'webhook.update': null,
  'webhook.delete': null,
  'webhook.test': null,
  'webhook.retry': null,
  'webhook.auto_failed': null,
} as const satisfies AuditActionTable;
type WebhooksAuditActions = typeof webhooksAuditActions;

declare module '../../events/types.js' {
  interface DomainEventMap {
    'webhook.test': Record<string, unknown>;
  }
  interface AuditActionMap extends WebhooksAuditActions {}
}
