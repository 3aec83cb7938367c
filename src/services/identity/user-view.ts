import { z } from 'zod';
import type { Membership, User } from '../../../entities/user.js';
import { pageSchema } from '../../pagination.js';
import { enumValues, timestamp, uuid } from '../../validation.js';
import { ScopeSchema } from './roles.js';

export const UserStatusSchema = z
  .enum(['active', 'invited', 'disabled'])
  .meta({ title: 'UserStatus', description: 'Whether a user may sign in.' })
  .register(enumValues, { active: 'Signs in normally.', invited: 'Invited and not signed up yet: the invitation link sets the password.', disabled: 'May not sign in; sessions and API keys are refused.' });

/** How a user appears in every response (REST and GraphQL): never the password hash, MFA secret or invite token. */
export const UserViewSchema = z
  .object({
    id: uuid().describe('Unique ID.'),
    email: z.string().describe('Sign-in email address (lowercase).'),
    name: z.string().describe('Full name; for a pending invitation, the name the inviter typed.'),
    status: UserStatusSchema.describe('Whether the user may sign in.'),
    mfaEnabled: z.boolean().describe('Whether sign-in needs a second factor (TOTP).'),
    lastLoginAt: timestamp().nullable().describe('When the user last signed in; null if never (or seen through a pending invitation).'),
    createdAt: timestamp().describe('When the account was created.'),
    updatedAt: timestamp().describe('When the account last changed.'),
    scope: ScopeSchema.nullable().describe('the membership the user is seen through (the caller’s own for the caller)'),
    partnerId: uuid().nullable().describe('The partner of the membership the user is seen through; null for organization and system memberships.'),
    orgId: uuid().nullable().describe('The organization of that membership; null for partner and system memberships.'),
    roleId: uuid().nullable().describe('The role held through that membership; null when seen without one.'),
  })
  .meta({ title: 'User', description: 'A person with an account, as seen through one of their memberships.' });
export type UserView = z.output<typeof UserViewSchema>;
export const UserPageSchema = pageSchema(UserViewSchema, 'UserPage');

/** What a view reads of a user: an entity, or a row a lean read returned. */
export type UserFields = Pick<User, 'id' | 'email' | 'name' | 'status' | 'mfaEnabled' | 'lastLoginAt' | 'createdAt' | 'updatedAt'>;
/** What a view reads of the membership a user is seen through. */
export type MembershipFields = Pick<Membership, 'status' | 'invitedName' | 'createdAt' | 'updatedAt' | 'scope' | 'partnerId' | 'orgId' | 'roleId'>;

/**
 * Seen through a pending membership, a user is only what the inviter typed: the account belongs to
 * someone the inviting tenant does not reach (yet), so its name, MFA and sign-in history stay private.
 */
export function userView(user: UserFields, membership: MembershipFields | null): UserView {
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
