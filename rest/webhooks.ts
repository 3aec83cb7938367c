import type { OpenApiRegistry } from '../src/http/openapi.js';
import { pageSchema } from '../src/pagination.js';
import {
  ListDeadLettersQuery,
  ListDeliveriesQuery,
  TestWebhookSchema,
  WebhookDeliveryViewSchema,
  WebhookRetryResultSchema,
  WebhookTestResultSchema,
  listDeadLetters,
  listDeliveries,
  retryDelivery,
  testWebhook,
} from '../src/services/webhooks/webhook-deliveries.js';
import {
  CreateWebhookSchema,
  ListWebhooksQuery,
  UpdateWebhookSchema,
  WebhookViewSchema,
  createWebhook,
  deleteWebhook,
  getWebhook,
  listWebhooks,
  updateWebhook,
} from '../src/services/webhooks/webhooks.js';
import { RestRouter, pathId } from './router.js';

/** Outbound webhooks: configuration, delivery history, test sends, dead letters and their re-drive. */
export function webhooksRouter(openapi: OpenApiRegistry): RestRouter {
  const r = new RestRouter(openapi, 'Webhooks');
  const webhook = { id: pathId('Webhook') };
  const WebhookPage = pageSchema(WebhookViewSchema, 'WebhookPage');
  const WebhookDeliveryPage = pageSchema(WebhookDeliveryViewSchema, 'WebhookDeliveryPage');

  r.get('/webhooks', { summary: "List an organization's webhooks", query: ListWebhooksQuery, response: WebhookPage }, (ctx, { query }) => listWebhooks(ctx, query));
  r.post('/webhooks', { summary: 'Create a webhook', body: CreateWebhookSchema, status: 201, response: WebhookViewSchema }, (ctx, { body }) => createWebhook(ctx, body));
  r.get('/webhooks/:id', { summary: 'Get a webhook with its delivery statistics', params: webhook }, (ctx, { params }) => getWebhook(ctx, params.id));
  r.patch('/webhooks/:id', { summary: 'Update a webhook', params: webhook, body: UpdateWebhookSchema, response: WebhookViewSchema }, (ctx, { params, body }) => updateWebhook(ctx, params.id, body));
  r.delete('/webhooks/:id', { summary: 'Delete a webhook and its deliveries', params: webhook, status: 204 }, (ctx, { params }) => deleteWebhook(ctx, params.id));
  r.get('/webhooks/:id/deliveries', { summary: "A webhook's deliveries, newest first", params: webhook, query: ListDeliveriesQuery, response: WebhookDeliveryPage }, (ctx, { params, query }) =>
    listDeliveries(ctx, params.id, query),
  );
  r.post('/webhooks/:id/test', { summary: 'Queue a test delivery', params: webhook, body: TestWebhookSchema, status: 202, response: WebhookTestResultSchema }, (ctx, { params, body }) => testWebhook(ctx, params.id, body));
  r.get('/webhooks/dead-letters', { summary: 'List failed deliveries (the dead-letter queue); re-drive one with the retry route', query: ListDeadLettersQuery, response: WebhookDeliveryPage }, (ctx, { query }) =>
    listDeadLetters(ctx, query),
  );
  r.post('/webhooks/:id/retry/:deliveryId', { summary: 'Re-drive a failed delivery as a new one', params: { ...webhook, deliveryId: pathId('Delivery') }, status: 202, response: WebhookRetryResultSchema }, (ctx, { params }) =>
    retryDelivery(ctx, params.id, params.deliveryId),
  );

  return r;
}
