import { Arg, Args, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import { argsType, inputType, objectType } from '../src/graphql/contract.js';
import type { GraphqlContext } from '../src/graphql/context.js';
import { pageSchema } from '../src/pagination.js';
import {
  AccessReviewDetailSchema,
  AccessReviewItemViewSchema,
  AccessReviewListQuery,
  AccessReviewViewSchema,
  CreateAccessReviewSchema,
  DecideAccessReviewItemSchema,
  completeAccessReview,
  createAccessReview,
  decideAccessReviewItem,
  getAccessReview,
  listAccessReviews,
  type AccessReviewListInput,
  type CreateAccessReviewInput,
  type DecideAccessReviewItemInput,
} from '../src/services/access-reviews.js';

const AccessReviewItemObject = objectType('AccessReviewItem', AccessReviewItemViewSchema);
const AccessReviewDetailObject = objectType('AccessReviewDetail', AccessReviewDetailSchema);
const AccessReviewPage = objectType('AccessReviewPage', pageSchema(AccessReviewViewSchema, 'AccessReviewPage'));
const AccessReviewListArgs = argsType('AccessReviewListArgs', AccessReviewListQuery);
const CreateAccessReviewInput = inputType('CreateAccessReviewInput', CreateAccessReviewSchema);
const DecideAccessReviewItemInput = inputType('DecideAccessReviewItemInput', DecideAccessReviewItemSchema);

@Resolver()
export class AccessReviewResolver {
  @Query(() => AccessReviewPage)
  accessReviews(@Ctx() { ctx }: GraphqlContext, @Args(() => AccessReviewListArgs) args: AccessReviewListInput) {
    return listAccessReviews(ctx, args);
  }

  @Query(() => AccessReviewDetailObject)
  accessReview(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string) {
    return getAccessReview(ctx, id);
  }

  @Mutation(() => AccessReviewDetailObject, { description: 'Snapshots the current memberships as pending items.' })
  createAccessReview(@Ctx() { ctx }: GraphqlContext, @Arg('input', () => CreateAccessReviewInput) input: CreateAccessReviewInput) {
    return createAccessReview(ctx, input);
  }

  @Mutation(() => AccessReviewItemObject)
  decideAccessReviewItem(
    @Ctx() { ctx }: GraphqlContext,
    @Arg('reviewId', () => ID) reviewId: string,
    @Arg('itemId', () => ID) itemId: string,
    @Arg('input', () => DecideAccessReviewItemInput) input: DecideAccessReviewItemInput,
  ) {
    return decideAccessReviewItem(ctx, reviewId, itemId, input);
  }

  @Mutation(() => AccessReviewDetailObject, { description: 'Applies every revocation; refused while items are pending. Needs MFA.' })
  completeAccessReview(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string) {
    return completeAccessReview(ctx, id);
  }
}
