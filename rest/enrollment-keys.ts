import type { OpenApiRegistry } from '../src/http/openapi.js';
import {
  CreateEnrollmentKeySchema,
  EnrollmentKeyListQuery,
  EnrollmentKeyPageSchema,
  EnrollmentKeyViewSchema,
  EnrollmentKeyWithSecretSchema,
  createEnrollmentKey,
  deleteEnrollmentKey,
  getEnrollmentKey,
  listEnrollmentKeys,
  rotateEnrollmentKey,
} from '../src/services/devices/enrollment-keys.js';
import { RestRouter, pathId } from './router.js';

export function enrollmentKeysRouter(openapi: OpenApiRegistry): RestRouter {
  const key = { id: pathId('Enrollment key') };
  return new RestRouter(openapi, 'Enrollment keys')
    .get('/enrollment-keys', { summary: 'Enrollment keys of the organizations (and sites) you can see', query: EnrollmentKeyListQuery, response: EnrollmentKeyPageSchema }, (ctx, { query }) =>
      listEnrollmentKeys(ctx, query),
    )
    .post('/enrollment-keys', { summary: 'Create an enrollment key; the answer carries the key, shown only this once', body: CreateEnrollmentKeySchema, status: 201, response: EnrollmentKeyWithSecretSchema }, (ctx, { body }) =>
      createEnrollmentKey(ctx, body),
    )
    .get('/enrollment-keys/:id', { summary: 'One enrollment key (never the key itself)', params: key, response: EnrollmentKeyViewSchema }, (ctx, { params }) => getEnrollmentKey(ctx, params.id))
    .delete('/enrollment-keys/:id', { summary: 'Delete an enrollment key: it stops working at once', params: key, status: 204 }, (ctx, { params }) => deleteEnrollmentKey(ctx, params.id))
    .post('/enrollment-keys/:id/rotate', { summary: 'Issue a new key value; the old one stops working at once', params: key, response: EnrollmentKeyWithSecretSchema }, (ctx, { params }) =>
      rotateEnrollmentKey(ctx, params.id),
    );
}
