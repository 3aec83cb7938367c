import { ID } from 'type-graphql';
import { arg, args, field, id, input, mutation, operations, pageArgs, query, subscription } from '../src/graphql/contract.js';
import { pageSchema } from '../src/pagination.js';
import * as webhookDeliveries from '../src/services/webhooks/webhook-deliveries.js';
import * as deliveryPipeline from '../src/services/webhooks/delivery-pipeline.js';
import * as webhooks from '../src/services/webhooks/webhooks.js';
import { connectionOf, pageConnectionOf, paged } from './shared.js';

export const WebhookResolver = operations(webhooks.WebhookViewSchema, {
  webhooks: query(pageConnectionOf(pageSchema(webhooks.WebhookViewSchema, 'WebhookPage')), [pageArgs('WebhookListArgs', webhooks.ListWebhooksQuery)], paged(webhooks.listWebhooks), {
    description: "An organization's webhooks",
  }),
  webhook: query(webhooks.WebhookViewSchema, [id], webhooks.getWebhook, { description: 'One webhook.' }),
  webhookDeadLetters: query(
    pageConnectionOf(pageSchema(webhookDeliveries.WebhookDeliveryViewSchema, 'WebhookDeliveryPage'), 'WebhookDeadLetter'),
    // `redriven` takes "true"/"false" in a REST query string too; GraphQL has real booleans.
    [pageArgs('DeadLetterArgs', webhookDeliveries.ListDeadLettersQuery, { fields: { redriven: { type: () => Boolean } } })],
    paged(webhookDeliveries.listDeadLetters),
    { description: 'Failed deliveries (the dead-letter queue), newest first; re-drive with retryWebhookDelivery' },
  ),
  deliveryStats: field(webhooks.DeliveryStatsSchema, [], (ctx, webhook: webhooks.WebhookView) => webhooks.webhookDeliveryStats(ctx, webhook), { description: 'The webhook’s deliveries counted by state.' }),
  deliveries: field(
    connectionOf(webhookDeliveries.WebhookDeliveryViewSchema),
    [args('DeliveryConnectionArgs', webhookDeliveries.DeliveriesConnectionArgs)],
    (ctx, webhook: webhooks.WebhookView, page) => webhookDeliveries.deliveriesConnection(ctx, webhook.id, page),
    { description: 'Deliveries, newest first' },
  ),
  createWebhook: mutation(webhooks.WebhookViewSchema, [input('CreateWebhookInput', webhooks.CreateWebhookSchema)], webhooks.createWebhook, { description: 'Registers an HTTPS endpoint for an organization’s events.' }),
  updateWebhook: mutation(webhooks.WebhookViewSchema, [id, input('UpdateWebhookInput', webhooks.UpdateWebhookSchema)], webhooks.updateWebhook, { description: 'Changes a webhook, or pauses and resumes it.' }),
  deleteWebhook: mutation(Boolean, [id], webhooks.deleteWebhook, { description: 'Deletes the webhook and its deliveries' }),
  testWebhook: mutation(webhookDeliveries.WebhookTestResultSchema, [id, input('TestWebhookInput', webhookDeliveries.TestWebhookSchema, { nullable: true })], (ctx, webhook, test) => webhookDeliveries.testWebhook(ctx, webhook, test ?? {}), {
    description: 'Queues a test delivery to the webhook.',
  }),
  retryWebhookDelivery: mutation(webhookDeliveries.WebhookRetryResultSchema, [arg('webhookId', ID, { description: 'The webhook.' }), arg('deliveryId', ID, { description: 'Its failed delivery.' })], webhookDeliveries.retryDelivery, {
    description: 'Re-drives a failed delivery as a new one',
  }),
  webhookDeliveryUpdated: subscription(deliveryPipeline.DeliveryUpdateSchema, [arg('webhookId', ID, { nullable: true, description: 'Only deliveries of this webhook.' })], (ctx, webhookId) => webhookDeliveries.subscribeDeliveryUpdates(ctx, webhookId ?? null), {
    description: 'Delivery state changes of the webhooks the caller can see, from any server instance',
  }),
});
