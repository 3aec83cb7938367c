import type { OpenApiRegistry } from '../src/http/openapi.js';
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
import { RestRouter, pathId } from './router.js';

export function accessReviewsRouter(openapi: OpenApiRegistry): RestRouter {
  const review = { id: pathId('Access review') };
  return new RestRouter(openapi, 'Access reviews')
    .get('/access-reviews', { summary: 'Access reviews, newest first', query: AccessReviewListQuery, response: AccessReviewPageSchema }, (ctx, { query }) => listAccessReviews(ctx, query))
    .post('/access-reviews', { summary: "Start a review of an organization's (or a partner's own) memberships", body: CreateAccessReviewSchema, status: 201, response: AccessReviewDetailSchema }, (ctx, { body }) =>
      createAccessReview(ctx, body),
    )
    .get('/access-reviews/:id', { summary: 'A review with its items', params: review, response: AccessReviewDetailSchema }, (ctx, { params }) => getAccessReview(ctx, params.id))
    .patch('/access-reviews/:id/items/:itemId', { summary: 'Approve or revoke one membership', params: { ...review, itemId: pathId('Access review item') }, body: DecideAccessReviewItemSchema, response: AccessReviewItemViewSchema }, (ctx, { params, body }) =>
      decideAccessReviewItem(ctx, params.id, params.itemId, body),
    )
    .post('/access-reviews/:id/complete', { summary: 'Apply the revocations and close the review (every item must be decided)', params: review, response: AccessReviewDetailSchema }, (ctx, { params }) =>
      completeAccessReview(ctx, params.id),
    );
}
