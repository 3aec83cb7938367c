import { GraphQLJSONObject } from 'graphql-scalars';
import { Arg, Args, ArgsType, Ctx, Field, FieldResolver, Float, ID, InputType, Int, Mutation, ObjectType, Query, Resolver, Root, Subscription } from 'type-graphql';
import type { GraphqlContext } from '../src/graphql/context.js';
import {
  deliveriesConnection,
  listDeadLetters,
  retryDelivery,
  subscribeDeliveryUpdates,
  testWebhook,
  type DeliveryUpdate,
  type WebhookDeliveryView,
} from '../src/services/webhook-deliveries.js';
import {
  createWebhook,
  deleteWebhook,
  getWebhook,
  listWebhooks,
  updateWebhook,
  webhookDeliveryStats,
  type DeliveryStats,
  type WebhookView,
} from '../src/services/webhooks.js';
import { ConnectionOf, PageArgs, PageOf } from './shared.js';

@ObjectType('WebhookHeader', { description: 'A custom header; its value is write-only' })
class WebhookHeaderObject {
  @Field(() => String)
  key!: string;
}

@ObjectType('WebhookRetryPolicy')
class WebhookRetryPolicyObject {
  @Field(() => Int)
  maxRetries!: number;

  @Field(() => Int)
  initialDelayMs!: number;

  @Field(() => Float)
  backoffMultiplier!: number;

  @Field(() => Int)
  maxDelayMs!: number;
}

@ObjectType('WebhookDeliveryStats')
class WebhookDeliveryStatsObject implements DeliveryStats {
  @Field(() => Int)
  total!: number;

  @Field(() => Int)
  pending!: number;

  @Field(() => Int)
  delivered!: number;

  @Field(() => Int)
  failed!: number;

  @Field(() => Int)
  retrying!: number;

  @Field(() => String, { nullable: true })
  lastDeliveredAt!: string | null;
}

@ObjectType('WebhookDelivery')
class WebhookDeliveryObject implements WebhookDeliveryView {
  @Field(() => ID)
  id!: string;

  @Field(() => ID)
  webhookId!: string;

  @Field(() => ID)
  orgId!: string;

  @Field(() => String, { description: 'pending, delivered, failed or retrying' })
  status!: WebhookDeliveryView['status'];

  @Field(() => String)
  event!: string;

  @Field(() => String)
  eventId!: string;

  @Field(() => GraphQLJSONObject)
  payload!: Record<string, unknown>;

  @Field(() => Int, { nullable: true })
  responseStatus!: number | null;

  @Field(() => String, { nullable: true, description: 'first 1,000 characters' })
  responseBody!: string | null;

  @Field(() => Int, { description: 'attempts made' })
  attempt!: number;

  @Field(() => String, { nullable: true })
  nextAttemptAt!: string | null;

  @Field(() => Int, { nullable: true })
  responseTimeMs!: number | null;

  @Field(() => String, { nullable: true })
  errorMessage!: string | null;

  @Field(() => String)
  createdAt!: string;

  @Field(() => String, { nullable: true })
  deliveredAt!: string | null;

  @Field(() => String, { nullable: true, description: 'when it entered the dead-letter queue' })
  deadLetteredAt!: string | null;

  @Field(() => String, { nullable: true })
  redrivenAt!: string | null;

  @Field(() => ID, { nullable: true, description: 'the failed delivery this one re-drives' })
  retryOf!: string | null;
}

const WebhookDeliveryConnection = ConnectionOf(WebhookDeliveryObject, 'WebhookDelivery');
const WebhookDeliveryPage = PageOf(WebhookDeliveryObject, 'WebhookDeliveryPage');

@ObjectType('Webhook')
class WebhookObject implements WebhookView {
  @Field(() => ID)
  id!: string;

  @Field(() => ID)
  orgId!: string;

  @Field(() => String)
  name!: string;

  @Field(() => String, { description: 'editors (organizations:write): without embedded credentials or signed query parameters; other readers: the origin only' })
  url!: string;

  @Field(() => Boolean)
  hasSecret!: boolean;

  @Field(() => [String])
  events!: string[];

  @Field(() => [WebhookHeaderObject])
  headers!: { key: string }[];

  @Field(() => String, { description: 'active, paused or failed' })
  status!: WebhookView['status'];

  @Field(() => WebhookRetryPolicyObject)
  retryPolicy!: WebhookView['retryPolicy'];

  @Field(() => Int)
  successCount!: number;

  @Field(() => Int)
  failureCount!: number;

  @Field(() => String, { nullable: true })
  lastDeliveryAt!: string | null;

  @Field(() => String, { nullable: true })
  lastSuccessAt!: string | null;

  @Field(() => ID, { nullable: true })
  createdBy!: string | null;

  @Field(() => String)
  createdAt!: string;

  @Field(() => String)
  updatedAt!: string;
}

const WebhookPage = PageOf(WebhookObject, 'WebhookPage');

@ObjectType('WebhookDeliveryUpdate', { description: 'A delivery changed state' })
class WebhookDeliveryUpdateObject implements DeliveryUpdate {
  @Field(() => ID)
  id!: string;

  @Field(() => ID)
  webhookId!: string;

  @Field(() => ID)
  orgId!: string;

  @Field(() => String)
  status!: DeliveryUpdate['status'];

  @Field(() => Int)
  attempt!: number;

  @Field(() => String)
  event!: string;
}

@ObjectType('WebhookTestDelivery')
class WebhookTestDeliveryObject {
  @Field(() => ID)
  id!: string;

  @Field(() => ID)
  webhookId!: string;

  @Field(() => String)
  status!: string;

  @Field(() => String)
  event!: string;

  @Field(() => Int)
  attempt!: number;
}

@ObjectType('WebhookTestResult')
class WebhookTestResultObject {
  @Field(() => String)
  message!: string;

  @Field(() => WebhookTestDeliveryObject)
  delivery!: WebhookTestDeliveryObject;
}

@ObjectType('WebhookRetriedDelivery')
class WebhookRetriedDeliveryObject {
  @Field(() => ID)
  id!: string;

  @Field(() => String)
  status!: string;

  @Field(() => Int)
  attempt!: number;
}

@ObjectType('WebhookRetryResult')
class WebhookRetryResultObject {
  @Field(() => String)
  message!: string;

  @Field(() => WebhookRetriedDeliveryObject)
  delivery!: WebhookRetriedDeliveryObject;
}

@InputType('WebhookHeaderInput')
class WebhookHeaderInput {
  @Field(() => String)
  key!: string;

  @Field(() => String)
  value!: string;
}

@InputType('WebhookRetryPolicyInput', { description: 'any subset; missing fields take the defaults' })
class WebhookRetryPolicyInput {
  @Field(() => Int, { nullable: true, description: '0 to 20 (default 5)' })
  maxRetries?: number;

  @Field(() => Int, { nullable: true, description: '100 to 3,600,000 (default 1,000)' })
  initialDelayMs?: number;

  @Field(() => Float, { nullable: true, description: '1 to 10 (default 2)' })
  backoffMultiplier?: number;

  @Field(() => Int, { nullable: true, description: 'initialDelayMs to 86,400,000 (default 300,000)' })
  maxDelayMs?: number;
}

@InputType()
class CreateWebhookInput {
  @Field(() => ID, { nullable: true, description: 'required for partner and system callers' })
  orgId?: string;

  @Field(() => String)
  name!: string;

  @Field(() => String, { description: 'https only' })
  url!: string;

  @Field(() => String, { nullable: true, description: 'signing secret (write-only)' })
  secret?: string;

  @Field(() => [String])
  events!: string[];

  @Field(() => [WebhookHeaderInput], { nullable: true })
  headers?: WebhookHeaderInput[];

  @Field(() => WebhookRetryPolicyInput, { nullable: true })
  retryPolicy?: WebhookRetryPolicyInput;
}

@InputType()
class UpdateWebhookInput {
  @Field(() => String, { nullable: true })
  name?: string;

  @Field(() => String, { nullable: true })
  url?: string;

  @Field(() => String, { nullable: true, description: 'null removes the secret' })
  secret?: string | null;

  @Field(() => [String], { nullable: true })
  events?: string[];

  @Field(() => [WebhookHeaderInput], { nullable: true, description: 'replaces the whole list' })
  headers?: WebhookHeaderInput[];

  @Field(() => String, { nullable: true, description: 'active, paused or failed' })
  status?: string;

  @Field(() => WebhookRetryPolicyInput, { nullable: true, description: 'null restores the defaults' })
  retryPolicy?: WebhookRetryPolicyInput | null;
}

@InputType()
class TestWebhookInput {
  @Field(() => String, { nullable: true, description: 'default webhook.test' })
  event?: string;

  @Field(() => GraphQLJSONObject, { nullable: true })
  payload?: Record<string, unknown>;
}

@ArgsType()
class WebhookListArgs extends PageArgs {
  @Field(() => ID, { nullable: true, description: 'required for partner and system callers' })
  orgId?: string;

  @Field(() => String, { nullable: true, description: 'active, paused or failed' })
  status?: string;
}

@ArgsType()
class DeadLetterArgs extends PageArgs {
  @Field(() => ID, { nullable: true, description: 'required for partner and system callers' })
  orgId?: string;

  @Field(() => ID, { nullable: true })
  webhookId?: string;

  @Field(() => Boolean, { nullable: true })
  redriven?: boolean;
}

@ArgsType()
class DeliveryConnectionArgs {
  @Field(() => Int, { defaultValue: 50, description: '1 to 100' })
  first!: number;

  @Field(() => String, { nullable: true })
  after?: string;

  @Field(() => String, { nullable: true, description: 'pending, delivered, failed or retrying' })
  status?: string;
}

@Resolver(() => WebhookObject)
export class WebhookResolver {
  @Query(() => WebhookPage, { description: "An organization's webhooks" })
  webhooks(@Ctx() { ctx }: GraphqlContext, @Args(() => WebhookListArgs) args: WebhookListArgs) {
    return listWebhooks(ctx, args);
  }

  @Query(() => WebhookObject)
  webhook(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string) {
    return getWebhook(ctx, id);
  }

  @Query(() => WebhookDeliveryPage, { description: 'Failed deliveries (the dead-letter queue), newest first; re-drive with retryWebhookDelivery' })
  webhookDeadLetters(@Ctx() { ctx }: GraphqlContext, @Args(() => DeadLetterArgs) args: DeadLetterArgs) {
    return listDeadLetters(ctx, args);
  }

  @FieldResolver(() => WebhookDeliveryStatsObject)
  deliveryStats(@Ctx() { ctx }: GraphqlContext, @Root() webhook: WebhookView) {
    return webhookDeliveryStats(ctx, webhook.id);
  }

  @FieldResolver(() => WebhookDeliveryConnection, { description: 'Deliveries, newest first' })
  deliveries(@Ctx() { ctx }: GraphqlContext, @Root() webhook: WebhookView, @Args(() => DeliveryConnectionArgs) args: DeliveryConnectionArgs) {
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
