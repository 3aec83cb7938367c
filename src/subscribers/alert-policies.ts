import type { EventSubscriber } from '../events/types.js';
import { applyAlertPolicies } from '../services/alerts/alert-policies.js';

/**
 * Alert policies applied to committed alert events: a raised alert goes to its policies' channels and
 * users and starts their escalation steps; acknowledged or resolved, its waiting steps are settled
 * (and, resolved, the channels that were told hear it is over). Keyed writes make a repeated event
 * change nothing (at least once).
 */
export const alertPolicyNotifications: EventSubscriber = {
  name: 'alert-policies.notifications',
  on: ['alert.triggered', 'alert.acknowledged', 'alert.resolved'],
  handle: (tx, event) => applyAlertPolicies(tx, event),
};
