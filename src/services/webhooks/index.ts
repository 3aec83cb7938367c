import { Webhook, WebhookDelivery } from '../../../entities/webhook.js';
import { webhooksRouter } from '../../../rest/webhooks.js';
import { WebhookResolver } from '../../../resolvers/webhooks.js';
import { defineDomain } from '../../domain-module.js';
import { webhookJobs } from '../../jobs/webhooks.js';
import { webhookFanOut } from '../../subscribers/webhooks.js';
import { webhooksAuditActions } from './events.js';

/** Webhooks: subscriptions to domain events and their delivery pipeline. */
export const webhooksDomain = defineDomain({
  name: 'webhooks',
  entities: [Webhook, WebhookDelivery],
  rest: [webhooksRouter],
  resolvers: [WebhookResolver],
  jobs: [...webhookJobs],
  subscribers: [webhookFanOut],
  auditActions: webhooksAuditActions,
});
