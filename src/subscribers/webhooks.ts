import type { EventSubscriber } from '../events/types.js';
import { fanOutEvents } from '../services/webhooks/delivery-pipeline.js';
import { WEBHOOK_EVENT_TYPES } from '../events/types.js';

/**
 * Committed domain events of the catalog become one delivery per subscribed active webhook (`webhook.test` never comes
 * through the outbox); a dispatcher batch's events are fanned out together, in one insert.
 */
export const webhookFanOut: EventSubscriber = {
  name: 'webhooks.fan-out',
  on: WEBHOOK_EVENT_TYPES.filter((type) => type !== 'webhook.test'),
  handle: (tx, event) => fanOutEvents(tx, [event]),
  handleBatch: (tx, events) => fanOutEvents(tx, events),
};
