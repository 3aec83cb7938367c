import { Arg, Args, ArgsType, Ctx, Field, ID, InputType, Int, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import type { AccessReviewDecision, AccessReviewStatus } from '../entities/access-review.js';
import type { GraphqlContext } from '../src/graphql/context.js';
import {
  completeAccessReview,
  createAccessReview,
  decideAccessReviewItem,
  getAccessReview,
  listAccessReviews,
  type AccessReviewDetail,
  type AccessReviewItemView,
  type AccessReviewSummary,
  type AccessReviewView,
} from '../src/services/access-reviews.js';
import { PageArgs, PageOf } from './shared.js';

@ObjectType('AccessReviewItem', { description: 'One membership as it stood when the review began, and the decision on it.' })
class AccessReviewItemObject implements AccessReviewItemView {
  @Field(() => ID)
  id!: string;

  @Field(() => ID)
  userId!: string;

  @Field(() => String)
  userEmail!: string;

  @Field(() => String)
  userName!: string;

  @Field(() => ID)
  membershipId!: string;

  @Field(() => ID)
  roleId!: string;

  @Field(() => String)
  roleName!: string;

  @Field(() => String, { description: 'pending, approved or revoked' })
  decision!: AccessReviewDecision;

  @Field(() => String, { nullable: true })
  notes!: string | null;

  @Field(() => ID, { nullable: true })
  decidedBy!: string | null;

  @Field(() => String, { nullable: true })
  decidedAt!: string | null;
}

@ObjectType('AccessReviewSummary')
class AccessReviewSummaryObject implements AccessReviewSummary {
  @Field(() => Int)
  total!: number;

  @Field(() => Int)
  pending!: number;

  @Field(() => Int)
  approved!: number;

  @Field(() => Int)
  revoked!: number;
}

@ObjectType('AccessReview')
class AccessReviewObject implements AccessReviewView {
  @Field(() => ID)
  id!: string;

  @Field(() => String)
  name!: string;

  @Field(() => ID, { nullable: true })
  orgId!: string | null;

  @Field(() => ID, { nullable: true })
  partnerId!: string | null;

  @Field(() => String, { description: 'open or completed' })
  status!: AccessReviewStatus;

  @Field(() => String, { nullable: true })
  dueAt!: string | null;

  @Field(() => ID, { nullable: true })
  createdBy!: string | null;

  @Field(() => String)
  createdAt!: string;

  @Field(() => String, { nullable: true })
  completedAt!: string | null;

  @Field(() => ID, { nullable: true })
  completedBy!: string | null;

  @Field(() => AccessReviewSummaryObject)
  summary!: AccessReviewSummary;
}

@ObjectType('AccessReviewDetail', { description: 'A review with its items.' })
class AccessReviewDetailObject extends AccessReviewObject implements AccessReviewDetail {
  @Field(() => [AccessReviewItemObject])
  items!: AccessReviewItemView[];
}

const AccessReviewPage = PageOf(AccessReviewObject, 'AccessReviewPage');

@ArgsType()
class AccessReviewListArgs extends PageArgs {
  @Field(() => String, { nullable: true, description: 'open or completed' })
  status?: 'open' | 'completed';

  @Field(() => ID, { nullable: true })
  orgId?: string;
}

@InputType()
class CreateAccessReviewInputGql {
  @Field(() => String)
  name!: string;

  @Field(() => ID, { nullable: true, description: 'the organization to review (organization callers: their own)' })
  orgId?: string;

  @Field(() => ID, { nullable: true, description: "review a partner's own staff instead" })
  partnerId?: string;

  @Field(() => String, { nullable: true, description: 'ISO 8601' })
  dueAt?: string;
}

@InputType()
class DecideAccessReviewItemInputGql {
  @Field(() => String, { description: 'approved or revoked' })
  decision!: 'approved' | 'revoked';

  @Field(() => String, { nullable: true })
  notes?: string | null;
}

@Resolver()
export class AccessReviewResolver {
  @Query(() => AccessReviewPage)
  accessReviews(@Ctx() { ctx }: GraphqlContext, @Args(() => AccessReviewListArgs) args: AccessReviewListArgs) {
    return listAccessReviews(ctx, { ...args });
  }

  @Query(() => AccessReviewDetailObject)
  accessReview(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string) {
    return getAccessReview(ctx, id);
  }

  @Mutation(() => AccessReviewDetailObject, { description: 'Snapshots the current memberships as pending items.' })
  createAccessReview(@Ctx() { ctx }: GraphqlContext, @Arg('input', () => CreateAccessReviewInputGql) input: CreateAccessReviewInputGql) {
    return createAccessReview(ctx, { ...input });
  }

  @Mutation(() => AccessReviewItemObject)
  decideAccessReviewItem(
    @Ctx() { ctx }: GraphqlContext,
    @Arg('reviewId', () => ID) reviewId: string,
    @Arg('itemId', () => ID) itemId: string,
    @Arg('input', () => DecideAccessReviewItemInputGql) input: DecideAccessReviewItemInputGql,
  ) {
    return decideAccessReviewItem(ctx, reviewId, itemId, { ...input });
  }

  @Mutation(() => AccessReviewDetailObject, { description: 'Applies every revocation; refused while items are pending. Needs MFA.' })
  completeAccessReview(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string) {
    return completeAccessReview(ctx, id);
  }
}
