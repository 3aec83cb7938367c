import { id, input, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
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
import { pageConnectionOf, paged } from './shared.js';

export const EnrollmentKeyResolver = operations({
  enrollmentKeys: query(pageConnectionOf(EnrollmentKeyPageSchema), [pageArgs('EnrollmentKeyListArgs', EnrollmentKeyListQuery)], paged(listEnrollmentKeys), {
    description: 'Enrollment keys of the organizations (and sites) the caller can see, newest first',
  }),
  enrollmentKey: query(EnrollmentKeyViewSchema, [id], getEnrollmentKey, { description: 'One enrollment key (never the key itself)' }),
  createEnrollmentKey: mutation(EnrollmentKeyWithSecretSchema, [input('CreateEnrollmentKeyInput', CreateEnrollmentKeySchema)], createEnrollmentKey, {
    description: 'The answer carries the key, shown only this once',
  }),
  rotateEnrollmentKey: mutation(EnrollmentKeyWithSecretSchema, [id], rotateEnrollmentKey, { description: 'A new key value; the old one stops working at once' }),
  deleteEnrollmentKey: mutation(Boolean, [id], deleteEnrollmentKey, { description: 'The key stops working at once' }),
});
