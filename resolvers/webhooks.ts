import { ID } from 'type-graphql';
import { arg, args, field, id, input, mutation, operations, pageArgs, query, subscription } from '../src/graphql/contract.js';
import { pageSchema } from '../src/pagination.js';
import {
  DeliveriesConnectionArgs,
  ListDeadLettersQuery,
  TestWebhookSchema,
  WebhookDeliveryViewSchema,
  WebhookRetryResultSchema,
  WebhookTestResultSchema,
  deliveriesConnection,
  listDeadLetters,
  retryDelivery,
  subscribeDeliveryUpdates,
  testWebhook,
} from '../src/services/webhooks/webhook-deliveries.js';
import { DeliveryUpdateSchema } from '../src/services/webhooks/delivery-pipeline.js';
import {
  CreateWebhookSchema,
  DeliveryStatsSchema,
  ListWebhooksQuery,
  UpdateWebhookSchema,
  WebhookViewSchema,
  createWebhook,
  deleteWebhook,
  getWebhook,
  listWebhooks,
  updateWebhook,
  webhookDeliveryStats,
  type WebhookView,
} from '../src/services/webhooks/webhooks.js';
import { connectionOf, pageConnectionOf, paged } from './shared.js';

export const WebhookResolver = operations(WebhookViewSchema, {
  webhooks: query(pageConnectionOf(pageSchema(WebhookViewSchema, 'WebhookPage')), [pageArgs('WebhookListArgs', ListWebhooksQuery)], paged(listWebhooks), {
    description: "An organization's webhooks",
  }),
  webhook: query(WebhookViewSchema, [id], getWebhook, { description: 'One webhook.' }),
  webhookDeadLetters: query(
    pageConnectionOf(pageSchema(WebhookDeliveryViewSchema, 'WebhookDeliveryPage'), 'WebhookDeadLetter'),
    // `redriven` takes "true"/"false" in a REST query string too; GraphQL has real booleans.
    [pageArgs('DeadLetterArgs', ListDeadLettersQuery, { fields: { redriven: { type: () => Boolean } } })],
    paged(listDeadLetters),
    { description: 'Failed deliveries (the dead-letter queue), newest first; re-drive with retryWebhookDelivery' },
  ),
  deliveryStats: field(DeliveryStatsSchema, [], (ctx, webhook: WebhookView) => webhookDeliveryStats(ctx, webhook), { description: 'The webhook’s deliveries counted by state.' }),
  deliveries: field(
    connectionOf(WebhookDeliveryViewSchema),
    [args('DeliveryConnectionArgs', DeliveriesConnectionArgs)],
    (ctx, webhook: WebhookView, page) => deliveriesConnection(ctx, webhook.id, page),
    { description: 'Deliveries, newest first' },
  ),
  createWebhook: mutation(WebhookViewSchema, [input('CreateWebhookInput', CreateWebhookSchema)], createWebhook, { description: 'Registers an HTTPS endpoint for an organization’s events.' }),
  updateWebhook: mutation(WebhookViewSchema, [id, input('UpdateWebhookInput', UpdateWebhookSchema)], updateWebhook, { description: 'Changes a webhook, or pauses and resumes it.' }),
  deleteWebhook: mutation(Boolean, [id], deleteWebhook, { description: 'Deletes the webhook and its deliveries' }),
  testWebhook: mutation(WebhookTestResultSchema, [id, input('TestWebhookInput', TestWebhookSchema, { nullable: true })], (ctx, webhook, test) => testWebhook(ctx, webhook, test ?? {}), {
    description: 'Queues a test delivery to the webhook.',
  }),
  retryWebhookDelivery: mutation(WebhookRetryResultSchema, [arg('webhookId', ID, { description: 'The webhook.' }), arg('deliveryId', ID, { description: 'Its failed delivery.' })], retryDelivery, {
    description: 'Re-drives a failed delivery as a new one',
  }),
  webhookDeliveryUpdated: subscription(DeliveryUpdateSchema, [arg('webhookId', ID, { nullable: true, description: 'Only deliveries of this webhook.' })], (ctx, webhookId) => subscribeDeliveryUpdates(ctx, webhookId ?? null), {
    description: 'Delivery state changes of the webhooks the caller can see, from any server instance',
  }),
});
