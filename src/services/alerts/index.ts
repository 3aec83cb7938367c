import { Alert, AlertConditionState, AlertCorrelationGroup, AlertRule, AlertTemplate } from '../../../entities/alert.js';
import { AlertChannel, AlertChannelDelivery } from '../../../entities/alert-channel.js';
import { AlertEscalation, AlertPolicy } from '../../../entities/alert-policy.js';
import { alertChannelsRouter } from '../../../rest/alert-channels.js';
import { alertPoliciesRouter } from '../../../rest/alert-policies.js';
import { alertsRouter } from '../../../rest/alerts.js';
import { alertTemplatesRouter } from '../../../rest/alert-templates.js';
import { AlertChannelResolver } from '../../../resolvers/alert-channels.js';
import { AlertPolicyResolver } from '../../../resolvers/alert-policies.js';
import { AlertResolver } from '../../../resolvers/alerts.js';
import { defineDomain } from '../../domain-module.js';
import { alertChannelJobs } from '../../jobs/alert-channels.js';
import { alertJobs } from '../../jobs/alerts.js';
import { alertPolicyNotifications } from '../../subscribers/alert-policies.js';
import { evaluateDevice } from './alert-evaluation.js';
import { alertsAuditActions } from './events.js';
import { alertEventSight } from './alerts.js';

const permissions = {
  alerts: ['read', 'write'],
} as const;
type AlertsPermissions = typeof permissions;
declare module '../../auth/permissions.js' {
  interface PermissionCatalog extends AlertsPermissions {}
}

/** Alert rules, templates and correlation, alerts, channels, policies and escalation. */
export const alertsDomain = defineDomain({
  name: 'alerts',
  eventSight: { alert: alertEventSight },
  entities: [AlertRule, AlertTemplate, AlertCorrelationGroup, Alert, AlertConditionState, AlertChannel, AlertChannelDelivery, AlertPolicy, AlertEscalation],
  rest: [alertChannelsRouter, alertPoliciesRouter, alertsRouter, alertTemplatesRouter],
  resolvers: [AlertChannelResolver, AlertPolicyResolver, AlertResolver],
  jobs: [...alertChannelJobs, ...alertJobs],
  subscribers: [alertPolicyNotifications],
  // Rules are evaluated on arrival of what changes a device's facts; a steady heartbeat reads and writes nothing here.
  deviceReports: { heartbeat: evaluateDevice },
  auditActions: alertsAuditActions,
  permissions,
  orgWork: ['alerts'],
});
