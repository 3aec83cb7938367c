import type { OpenApiRegistry } from '../src/http/openapi.js';
import {
  AccessReviewListQuery,
  CreateAccessReviewInput,
  DecideAccessReviewItemInput,
  completeAccessReview,
  createAccessReview,
  decideAccessReviewItem,
  getAccessReview,
  listAccessReviews,
} from '../src/services/access-reviews.js';
import { RestRouter } from './router.js';

export function accessReviewsRouter(openapi: OpenApiRegistry): RestRouter {
  return new RestRouter(openapi, 'Access reviews')
    .get('/access-reviews', { summary: 'Access reviews, newest first', query: AccessReviewListQuery }, (ctx, { query }) => listAccessReviews(ctx, query))
    .post('/access-reviews', { summary: "Start a review of an organization's (or a partner's own) memberships", body: CreateAccessReviewInput, status: 201 }, (ctx, { body }) =>
      createAccessReview(ctx, body),
    )
    .get('/access-reviews/:id', { summary: 'A review with its items' }, (ctx, { params }) => getAccessReview(ctx, params.id!))
    .patch('/access-reviews/:id/items/:itemId', { summary: 'Approve or revoke one membership', body: DecideAccessReviewItemInput }, (ctx, { params, body }) =>
      decideAccessReviewItem(ctx, params.id!, params.itemId!, body),
    )
    .post('/access-reviews/:id/complete', { summary: 'Apply the revocations and close the review (every item must be decided)' }, (ctx, { params }) =>
      completeAccessReview(ctx, params.id!),
    );
}
