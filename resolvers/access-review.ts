import { ID } from 'type-graphql';
import { arg, id, input, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
import {
  AccessReviewDetailSchema,
  AccessReviewItemViewSchema,
  AccessReviewListQuery,
  AccessReviewPageSchema,
  CreateAccessReviewSchema,
  DecideAccessReviewItemSchema,
  completeAccessReview,
  createAccessReview,
  decideAccessReviewItem,
  getAccessReview,
  listAccessReviews,
} from '../src/services/access-reviews.js';
import { pageConnectionOf, paged } from './shared.js';

export const AccessReviewResolver = operations({
  accessReviews: query(pageConnectionOf(AccessReviewPageSchema), [pageArgs('AccessReviewListArgs', AccessReviewListQuery)], paged(listAccessReviews)),
  accessReview: query(AccessReviewDetailSchema, [id], getAccessReview),
  createAccessReview: mutation(AccessReviewDetailSchema, [input('CreateAccessReviewInput', CreateAccessReviewSchema)], createAccessReview, {
    description: 'Snapshots the current memberships as pending items.',
  }),
  decideAccessReviewItem: mutation(AccessReviewItemViewSchema, [arg('reviewId', ID), arg('itemId', ID), input('DecideAccessReviewItemInput', DecideAccessReviewItemSchema)], decideAccessReviewItem),
  completeAccessReview: mutation(AccessReviewDetailSchema, [id], completeAccessReview, {
    description: 'Applies every revocation; refused while items are pending. Needs MFA.',
  }),
});
