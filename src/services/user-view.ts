import type { Membership, User } from '../../entities/user.js';

/** How a user appears in every response (REST and GraphQL): never the password hash, MFA secret or invite token. */
export interface UserView {
  id: string;
  email: string;
  name: string;
  status: User['status'];
  mfaEnabled: boolean;
  lastLoginAt: string | null;
  createdAt: string;
  updatedAt: string;
  /** the membership the view is seen through (the caller's own for /users/me) */
  scope: Membership['scope'] | null;
  partnerId: string | null;
  orgId: string | null;
  roleId: string | null;
}

export function userView(user: User, membership: Membership | null): UserView {
  return {
    id: user.id,
    email: user.email,
    name: user.name,
    status: user.status,
    mfaEnabled: user.mfaEnabled,
    lastLoginAt: user.lastLoginAt ? user.lastLoginAt.toISOString() : null,
    createdAt: user.createdAt.toISOString(),
    updatedAt: user.updatedAt.toISOString(),
    scope: membership?.scope ?? null,
    partnerId: membership?.partnerId ?? null,
    orgId: membership?.orgId ?? null,
    roleId: membership?.roleId ?? null,
  };
}
