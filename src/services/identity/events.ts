import type { AuditActionTable } from '../../events/types.js';

/** Identity audit actions, each with the event its mutation emits (null: recorded, not published). */
export const identityAuditActions = {
  'role.create': 'role.created',
  'role.clone': 'role.created',
  'role.update': 'role.updated',
  'role.delete': 'role.deleted',
  'user.invite': 'user.invited',
  'user.invite.accept': 'user.invite_accepted',
  'user.invite.resend': null,
  'user.create': null,
  'user.update': 'user.updated',
  'user.delete': 'user.deleted',
  'user.role.change': 'user.role_changed',
  'user.membership.accept': 'user.membership_accepted',
  'user.membership.decline': 'user.membership_declined',
  'user.access.revoke': null,
  'auth.login': 'user.login',
  'auth.logout': 'user.logout',
  'auth.password.change': 'user.password_changed',
  'auth.membership.switch': null,
  'auth.session.revoke': null,
  'auth.mfa.setup': null,
  'auth.mfa.enable': null,
  'auth.mfa.disable': null,
  'auth.mfa.recovery_code.use': null,
  'api_key.create': 'api_key.created',
  'api_key.update': 'api_key.updated',
  'api_key.revoke': 'api_key.revoked',
  'api_key.rotate': 'api_key.rotated',
  'access_review.create': 'access_review.created',
  'access_review.decide': 'access_review.item_decided',
  'access_review.complete': 'access_review.completed',
} as const satisfies AuditActionTable;
type IdentityAuditActions = typeof identityAuditActions;

declare module '../../events/types.js' {
  interface DomainEventMap {
    'user.login': { userId: string; email: string; method: 'password' | 'sso' | 'mfa' };
    'user.logout': { userId: string; email: string };
    'user.invited': { userId: string; email: string; roleId: string; partnerId: string | null; newAccount: boolean };
    'user.invite_accepted': { userId: string; email: string };
    'user.updated': { userId: string; changes: string[] };
    'user.deleted': { userId: string; email: string; accountDeleted: boolean };
    'user.role_changed': { userId: string; membershipId: string; previousRoleId: string; roleId: string };
    'user.password_changed': { userId: string; apiKeysRevoked: number };
    'user.membership_accepted': { userId: string; membershipId: string; partnerId: string | null };
    'user.membership_declined': { userId: string; membershipId: string; partnerId: string | null };
    'api_key.revoked': { apiKeyId: string; userId: string; reason: string };
    'api_key.created': { apiKeyId: string; userId: string; name: string; scopes: string[] };
    'api_key.updated': { apiKeyId: string; userId: string; changes: string[] };
    'api_key.rotated': { apiKeyId: string; userId: string };
    'access_review.created': { reviewId: string; name: string; partnerId: string | null; items: number };
    'access_review.item_decided': { reviewId: string; itemId: string; decision: string };
    'access_review.completed': { reviewId: string; revoked: number };
    'role.created': { roleId: string; name: string; scope: string; clonedFrom?: string };
    'role.updated': { roleId: string; name: string; scope: string; changes: string[] };
    'role.deleted': { roleId: string; name: string; scope: string };
  }
  interface AuditActionMap extends IdentityAuditActions {}
}
