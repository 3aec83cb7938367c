import { id, input, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
import * as enrollmentKeys from '../src/services/devices/enrollment-keys.js';
import { pageConnectionOf, paged } from './shared.js';

export const EnrollmentKeyResolver = operations({
  enrollmentKeys: query(pageConnectionOf(enrollmentKeys.EnrollmentKeyPageSchema), [pageArgs('EnrollmentKeyListArgs', enrollmentKeys.EnrollmentKeyListQuery)], paged(enrollmentKeys.listEnrollmentKeys), {
    description: 'Enrollment keys of the organizations (and sites) the caller can see, newest first',
  }),
  enrollmentKey: query(enrollmentKeys.EnrollmentKeyViewSchema, [id], enrollmentKeys.getEnrollmentKey, { description: 'One enrollment key (never the key itself)' }),
  createEnrollmentKey: mutation(enrollmentKeys.EnrollmentKeyWithSecretSchema, [input('CreateEnrollmentKeyInput', enrollmentKeys.CreateEnrollmentKeySchema)], enrollmentKeys.createEnrollmentKey, {
    description: 'The answer carries the key, shown only this once',
  }),
  rotateEnrollmentKey: mutation(enrollmentKeys.EnrollmentKeyWithSecretSchema, [id], enrollmentKeys.rotateEnrollmentKey, { description: 'A new key value; the old one stops working at once' }),
  deleteEnrollmentKey: mutation(Boolean, [id], enrollmentKeys.deleteEnrollmentKey, { description: 'The key stops working at once' }),
});
