import type { OpenApiRegistry } from '../src/http/openapi.js';
import { pageSchema } from '../src/pagination.js';
import * as webhookDeliveries from '../src/services/webhooks/webhook-deliveries.js';
import * as webhooks from '../src/services/webhooks/webhooks.js';
import { call, pathId, RestRouter } from './router.js';

/** Outbound webhooks: configuration, delivery history, test sends, dead letters and their re-drive. */
export function webhooksRouter(openapi: OpenApiRegistry): RestRouter {
  const r = new RestRouter(openapi, 'Webhooks');
  const webhook = { id: pathId('Webhook') };
  const WebhookPage = pageSchema(webhooks.WebhookViewSchema, 'WebhookPage');
  const WebhookDeliveryPage = pageSchema(webhookDeliveries.WebhookDeliveryViewSchema, 'WebhookDeliveryPage');

  r.get('/webhooks', { summary: "List an organization's webhooks", query: webhooks.ListWebhooksQuery, response: WebhookPage }, call(webhooks.listWebhooks));
  r.post('/webhooks', { summary: 'Create a webhook', body: webhooks.CreateWebhookSchema, status: 201, response: webhooks.WebhookViewSchema }, call(webhooks.createWebhook));
  r.get('/webhooks/:id', { summary: 'Get a webhook with its delivery statistics', params: webhook }, call(webhooks.getWebhook));
  r.patch('/webhooks/:id', { summary: 'Update a webhook', params: webhook, body: webhooks.UpdateWebhookSchema, response: webhooks.WebhookViewSchema }, call(webhooks.updateWebhook));
  r.delete('/webhooks/:id', { summary: 'Delete a webhook and its deliveries', params: webhook, status: 204 }, call(webhooks.deleteWebhook));
  r.get('/webhooks/:id/deliveries', { summary: "A webhook's deliveries, newest first", params: webhook, query: webhookDeliveries.ListDeliveriesQuery, response: WebhookDeliveryPage }, call(webhookDeliveries.listDeliveries));
  r.post('/webhooks/:id/test', { summary: 'Queue a test delivery', params: webhook, body: webhookDeliveries.TestWebhookSchema, status: 202, response: webhookDeliveries.WebhookTestResultSchema }, call(webhookDeliveries.testWebhook));
  r.get('/webhooks/dead-letters', { summary: 'List failed deliveries (the dead-letter queue); re-drive one with the retry route', query: webhookDeliveries.ListDeadLettersQuery, response: WebhookDeliveryPage }, call(webhookDeliveries.listDeadLetters));
  r.post('/webhooks/:id/retry/:deliveryId', { summary: 'Re-drive a failed delivery as a new one', params: { ...webhook, deliveryId: pathId('Delivery') }, status: 202, response: webhookDeliveries.WebhookRetryResultSchema }, call(webhookDeliveries.retryDelivery));

  return r;
}
