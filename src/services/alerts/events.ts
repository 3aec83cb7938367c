import type { AuditActionTable } from '../../events/types.js';

/** Every alert event carries the alert as it now is. */
export type AlertEventData = {
  alertId: string;
  orgId: string;
  siteId: string | null;
  /** null for an alert about no one device */
  deviceId: string | null;
  ruleId: string | null;
  /** what raised it (`alert_rule`, `monitor`, …) and which of its rows */
  source: string;
  sourceId: string | null;
  severity: string;
  status: string;
  title: string;
};

/** Alert audit actions, each with the event its mutation emits (null: recorded, not published). */
export const alertsAuditActions = {
  // Alert channels and policies: organization configuration, audited only (alerts themselves emit alert.*).
  'alert_channel.create': null,
  'alert_channel.update': null,
  'alert_channel.delete': null,
  'alert_channel.test': null,
  'alert_policy.create': null,
  'alert_policy.update': null,
  'alert_policy.delete': null,
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
} as const satisfies AuditActionTable;
type AlertsAuditActions = typeof alertsAuditActions;

declare module '../../events/types.js' {
  interface DomainEventMap {
    'alert.triggered': AlertEventData;
    'alert.acknowledged': AlertEventData;
    'alert.resolved': AlertEventData;
    'alert.escalated': AlertEventData;
  }
  interface AuditActionMap extends AlertsAuditActions {}
}
