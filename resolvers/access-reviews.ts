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
} from '../src/services/identity/access-reviews.js';
import { pageConnectionOf, paged } from './shared.js';

export const AccessReviewResolver = operations({
  accessReviews: query(pageConnectionOf(AccessReviewPageSchema), [pageArgs('AccessReviewListArgs', AccessReviewListQuery)], paged(listAccessReviews), {
    description: 'Access reviews of the tenants the caller can see, newest first.',
  }),
  accessReview: query(AccessReviewDetailSchema, [id], getAccessReview, { description: 'One access review with its items.' }),
  createAccessReview: mutation(AccessReviewDetailSchema, [input('CreateAccessReviewInput', CreateAccessReviewSchema)], createAccessReview, {
    description: 'Snapshots the current memberships as pending items.',
  }),
  decideAccessReviewItem: mutation(
    AccessReviewItemViewSchema,
    [
      arg('reviewId', ID, { description: 'The open review.' }),
      arg('itemId', ID, { description: 'The item of that review to decide.' }),
      input('DecideAccessReviewItemInput', DecideAccessReviewItemSchema),
    ],
    decideAccessReviewItem,
    { description: 'Records a decision on one item; the review must be open. A decision may be changed until the review completes.' },
  ),
  completeAccessReview: mutation(AccessReviewDetailSchema, [id], completeAccessReview, {
    description: 'Applies every revocation; refused while items are pending. Needs MFA.',
  }),
});
