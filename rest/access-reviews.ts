import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as accessReviews from '../src/services/identity/access-reviews.js';
import { call, pathId, RestRouter } from './router.js';

export function accessReviewsRouter(openapi: OpenApiRegistry): RestRouter {
  const review = { id: pathId('Access review') };
  return new RestRouter(openapi, 'Access reviews')
    .get('/access-reviews', { summary: 'Access reviews, newest first', query: accessReviews.AccessReviewListQuery, response: accessReviews.AccessReviewPageSchema }, call(accessReviews.listAccessReviews))
    .post('/access-reviews', { summary: "Start a review of an organization's (or a partner's own) memberships", body: accessReviews.CreateAccessReviewSchema, status: 201, response: accessReviews.AccessReviewDetailSchema }, call(accessReviews.createAccessReview))
    .get('/access-reviews/:id', { summary: 'A review with its items', params: review, response: accessReviews.AccessReviewDetailSchema }, call(accessReviews.getAccessReview))
    .patch('/access-reviews/:id/items/:itemId', { summary: 'Approve or revoke one membership', params: { ...review, itemId: pathId('Access review item') }, body: accessReviews.DecideAccessReviewItemSchema, response: accessReviews.AccessReviewItemViewSchema }, call(accessReviews.decideAccessReviewItem))
    .post('/access-reviews/:id/complete', { summary: 'Apply the revocations and close the review (every item must be decided)', params: review, response: accessReviews.AccessReviewDetailSchema }, call(accessReviews.completeAccessReview));
}
