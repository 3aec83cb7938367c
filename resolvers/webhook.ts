import { Arg, Args, Ctx, FieldResolver, ID, Mutation, Query, Resolver, Root, Subscription } from 'type-graphql';
import { argsType, inputType, objectType } from '../src/graphql/contract.js';
import type { GraphqlContext } from '../src/graphql/context.js';
import { pageSchema } from '../src/pagination.js';
import {
  DeliveriesConnectionArgs,
  DeliveryUpdateSchema,
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
  type DeliveriesConnectionInput,
  type DeliveryUpdate,
  type ListDeadLettersInput,
  type TestWebhookInput,
} from '../src/services/webhook-deliveries.js';
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
  type CreateWebhookInput,
  type ListWebhooksInput,
  type UpdateWebhookInput,
  type WebhookView,
} from '../src/services/webhooks.js';
import { ConnectionOf } from './shared.js';

const WebhookObject = objectType('Webhook', WebhookViewSchema);
const WebhookPage = objectType('WebhookPage', pageSchema(WebhookViewSchema, 'WebhookPage'));
const WebhookDeliveryStatsObject = objectType('WebhookDeliveryStats', DeliveryStatsSchema);
const WebhookDeliveryObject = objectType('WebhookDelivery', WebhookDeliveryViewSchema);
const WebhookDeliveryConnection = ConnectionOf(WebhookDeliveryObject, 'WebhookDelivery');
const WebhookDeliveryPage = objectType('WebhookDeliveryPage', pageSchema(WebhookDeliveryViewSchema, 'WebhookDeliveryPage'));
const WebhookDeliveryUpdateObject = objectType('WebhookDeliveryUpdate', DeliveryUpdateSchema);
const WebhookTestResultObject = objectType('WebhookTestResult', WebhookTestResultSchema);
const WebhookRetryResultObject = objectType('WebhookRetryResult', WebhookRetryResultSchema);
const WebhookListArgs = argsType('WebhookListArgs', ListWebhooksQuery);
// `redriven` takes "true"/"false" in a REST query string too; GraphQL has real booleans.
const DeadLetterArgs = argsType('DeadLetterArgs', ListDeadLettersQuery, { fields: { redriven: { type: () => Boolean } } });
const DeliveryConnectionArgs = argsType('DeliveryConnectionArgs', DeliveriesConnectionArgs);
const CreateWebhookInput = inputType('CreateWebhookInput', CreateWebhookSchema);
const UpdateWebhookInput = inputType('UpdateWebhookInput', UpdateWebhookSchema);
const TestWebhookInput = inputType('TestWebhookInput', TestWebhookSchema);

@Resolver(() => WebhookObject)
export class WebhookResolver {
  @Query(() => WebhookPage, { description: "An organization's webhooks" })
  webhooks(@Ctx() { ctx }: GraphqlContext, @Args(() => WebhookListArgs) args: ListWebhooksInput) {
    return listWebhooks(ctx, args);
  }

  @Query(() => WebhookObject)
  webhook(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string) {
    return getWebhook(ctx, id);
  }

  @Query(() => WebhookDeliveryPage, { description: 'Failed deliveries (the dead-letter queue), newest first; re-drive with retryWebhookDelivery' })
  webhookDeadLetters(@Ctx() { ctx }: GraphqlContext, @Args(() => DeadLetterArgs) args: ListDeadLettersInput) {
    return listDeadLetters(ctx, args);
  }

  @FieldResolver(() => WebhookDeliveryStatsObject)
  deliveryStats(@Ctx() { ctx }: GraphqlContext, @Root() webhook: WebhookView) {
    return webhookDeliveryStats(ctx, webhook.id);
  }

  @FieldResolver(() => WebhookDeliveryConnection, { description: 'Deliveries, newest first' })
  deliveries(@Ctx() { ctx }: GraphqlContext, @Root() webhook: WebhookView, @Args(() => DeliveryConnectionArgs) args: DeliveriesConnectionInput) {
    return deliveriesConnection(ctx, webhook.id, args);
  }

  @Mutation(() => WebhookObject)
  createWebhook(@Ctx() { ctx }: GraphqlContext, @Arg('input', () => CreateWebhookInput) input: CreateWebhookInput) {
    return createWebhook(ctx, input);
  }

  @Mutation(() => WebhookObject)
  updateWebhook(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string, @Arg('input', () => UpdateWebhookInput) input: UpdateWebhookInput) {
    return updateWebhook(ctx, id, input);
  }

  @Mutation(() => Boolean, { description: 'Deletes the webhook and its deliveries' })
  async deleteWebhook(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string) {
    await deleteWebhook(ctx, id);
    return true;
  }

  @Mutation(() => WebhookTestResultObject)
  testWebhook(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string, @Arg('input', () => TestWebhookInput, { nullable: true }) input?: TestWebhookInput) {
    return testWebhook(ctx, id, input ?? {});
  }

  @Mutation(() => WebhookRetryResultObject, { description: 'Re-drives a failed delivery as a new one' })
  retryWebhookDelivery(@Ctx() { ctx }: GraphqlContext, @Arg('webhookId', () => ID) webhookId: string, @Arg('deliveryId', () => ID) deliveryId: string) {
    return retryDelivery(ctx, webhookId, deliveryId);
  }

  @Subscription(() => WebhookDeliveryUpdateObject, {
    description: 'Delivery state changes of the webhooks the caller can see, from any server instance',
    subscribe: ({ args, context }) => subscribeDeliveryUpdates((context as GraphqlContext).ctx, (args.webhookId as string | undefined) ?? null),
  })
  webhookDeliveryUpdated(@Root() update: DeliveryUpdate, @Arg('webhookId', () => ID, { nullable: true }) _webhookId?: string): DeliveryUpdate {
    return update;
  }
}
