import { ID } from 'type-graphql';
import { arg, id, input, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
import * as accessReviews from '../src/services/identity/access-reviews.js';
import { pageConnectionOf, paged } from './shared.js';

export const AccessReviewResolver = operations({
  accessReviews: query(pageConnectionOf(accessReviews.AccessReviewPageSchema), [pageArgs('AccessReviewListArgs', accessReviews.AccessReviewListQuery)], paged(accessReviews.listAccessReviews), {
    description: 'Access reviews of the tenants the caller can see, newest first.',
  }),
  accessReview: query(accessReviews.AccessReviewDetailSchema, [id], accessReviews.getAccessReview, { description: 'One access review with its items.' }),
  createAccessReview: mutation(accessReviews.AccessReviewDetailSchema, [input('CreateAccessReviewInput', accessReviews.CreateAccessReviewSchema)], accessReviews.createAccessReview, {
    description: 'Snapshots the current memberships as pending items.',
  }),
  decideAccessReviewItem: mutation(
    accessReviews.AccessReviewItemViewSchema,
    [
      arg('reviewId', ID, { description: 'The open review.' }),
      arg('itemId', ID, { description: 'The item of that review to decide.' }),
      input('DecideAccessReviewItemInput', accessReviews.DecideAccessReviewItemSchema),
    ],
    accessReviews.decideAccessReviewItem,
    { description: 'Records a decision on one item; the review must be open. A decision may be changed until the review completes.' },
  ),
  completeAccessReview: mutation(accessReviews.AccessReviewDetailSchema, [id], accessReviews.completeAccessReview, {
    description: 'Applies every revocation; refused while items are pending. Needs MFA.',
  }),
});
