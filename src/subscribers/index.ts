import type { EventSubscriber } from '../events/types.js';
import { alertPolicyNotifications } from './alert-policies.js';
import { automationEventTriggers, automationScriptOutcomes } from './automations.js';
import { deviceGroupMembership } from './device-groups.js';
import { webhookFanOut } from './webhooks.js';

/** Every consumer of committed domain events; a domain adds its subscribers here. */
export const eventSubscribers: EventSubscriber[] = [webhookFanOut, deviceGroupMembership, alertPolicyNotifications, automationEventTriggers, automationScriptOutcomes];
