import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as enrollmentKeys from '../src/services/devices/enrollment-keys.js';
import { call, pathId, RestRouter } from './router.js';

export function enrollmentKeysRouter(openapi: OpenApiRegistry): RestRouter {
  const key = { id: pathId('Enrollment key') };
  return new RestRouter(openapi, 'Enrollment keys')
    .get('/enrollment-keys', { summary: 'Enrollment keys of the organizations (and sites) you can see', query: enrollmentKeys.EnrollmentKeyListQuery, response: enrollmentKeys.EnrollmentKeyPageSchema }, call(enrollmentKeys.listEnrollmentKeys))
    .post('/enrollment-keys', { summary: 'Create an enrollment key; the answer carries the key, shown only this once', body: enrollmentKeys.CreateEnrollmentKeySchema, status: 201, response: enrollmentKeys.EnrollmentKeyWithSecretSchema }, call(enrollmentKeys.createEnrollmentKey))
    .get('/enrollment-keys/:id', { summary: 'One enrollment key (never the key itself)', params: key, response: enrollmentKeys.EnrollmentKeyViewSchema }, call(enrollmentKeys.getEnrollmentKey))
    .delete('/enrollment-keys/:id', { summary: 'Delete an enrollment key: it stops working at once', params: key, status: 204 }, call(enrollmentKeys.deleteEnrollmentKey))
    .post('/enrollment-keys/:id/rotate', { summary: 'Issue a new key value; the old one stops working at once', params: key, response: enrollmentKeys.EnrollmentKeyWithSecretSchema }, call(enrollmentKeys.rotateEnrollmentKey));
}
