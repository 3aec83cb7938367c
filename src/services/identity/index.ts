import { AccessReview, AccessReviewItem } from '../../../entities/access-review.js';
import { ApiKey } from '../../../entities/api-key.js';
import { Role } from '../../../entities/role.js';
import { LoginAttempt, RefreshToken } from '../../../entities/session.js';
import { Membership, User } from '../../../entities/user.js';
import { authRouter } from '../../../rest/auth.js';
import { usersRouter } from '../../../rest/users.js';
import { rolesRouter } from '../../../rest/roles.js';
import { apiKeysRouter } from '../../../rest/api-keys.js';
import { accessReviewsRouter } from '../../../rest/access-reviews.js';
import { AuthResolver } from '../../../resolvers/auth.js';
import { UserResolver } from '../../../resolvers/users.js';
import { RoleResolver } from '../../../resolvers/roles.js';
import { ApiKeyResolver } from '../../../resolvers/api-keys.js';
import { AccessReviewResolver } from '../../../resolvers/access-reviews.js';
import { defineDomain } from '../../domain-module.js';
import { sessionJobs } from '../../jobs/sessions.js';
import { identityAuditActions } from './events.js';

const permissions = {
  users: ['read', 'write', 'delete'],
  roles: ['read', 'write', 'delete'],
  api_keys: ['read', 'write', 'delete'],
  access_reviews: ['read', 'write'],
} as const;
type IdentityPermissions = typeof permissions;
declare module '../../auth/permissions.js' {
  interface PermissionCatalog extends IdentityPermissions {}
}

/** Users, memberships, roles, sign-in and sessions, API keys, access reviews. */
export const identityDomain = defineDomain({
  name: 'identity',
  entities: [Role, User, Membership, ApiKey, RefreshToken, LoginAttempt, AccessReview, AccessReviewItem],
  rest: [authRouter, usersRouter, rolesRouter, apiKeysRouter, accessReviewsRouter],
  resolvers: [AuthResolver, UserResolver, RoleResolver, ApiKeyResolver, AccessReviewResolver],
  jobs: [...sessionJobs],
  auditActions: identityAuditActions,
  permissions,
});
