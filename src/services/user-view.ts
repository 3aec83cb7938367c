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

/**
 * Seen through a pending membership, a user is only what the inviter typed: the account belongs to
 * someone the inviting tenant does not reach (yet), so its name, MFA and sign-in history stay private.
 */
export function userView(user: User, membership: Membership | null): UserView {
  if (membership?.status === 'pending') {
    return {
      id: user.id,
      email: user.email,
      name: membership.invitedName ?? user.email,
      status: 'invited',
      mfaEnabled: false,
      lastLoginAt: null,
      createdAt: membership.createdAt.toISOString(),
      updatedAt: membership.updatedAt.toISOString(),
      scope: membership.scope,
      partnerId: membership.partnerId,
      orgId: membership.orgId,
      roleId: membership.roleId,
    };
  }
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
