import { z } from 'zod';
import { uuid } from '../../validation.js';
import { UserViewSchema } from './user-view.js';

// The sign-in and session contract (src/services/identity/auth.ts implements it), as zod: REST, OpenAPI and GraphQL derive from it.

const sessionTokenFields = {
  accessToken: z.string().describe('Bearer token for the Authorization header; short-lived (see expiresIn).'),
  refreshToken: z.string().describe('Single-use token that refreshToken exchanges for a new pair; a reused one ends the session.'),
  expiresIn: z.number().int().describe('access-token lifetime in seconds'),
};
export const SessionTokensSchema = z.object(sessionTokenFields).meta({ title: 'SessionTokens', description: 'A new access and refresh token pair of the same session.' });
export type SessionTokens = z.output<typeof SessionTokensSchema>;

export const AuthSessionSchema = SessionTokensSchema.extend({ user: UserViewSchema.describe('The signed-in user, seen through the session’s membership.') }).meta({
  title: 'AuthSession',
  description: 'Tokens of a session and the user as that session sees them.',
});
export type AuthSession = z.output<typeof AuthSessionSchema>;

export const MfaChallengeSchema = z
  .object({ mfaRequired: z.literal(true), mfaToken: z.string().describe('valid for 5 minutes, only for the second step (`POST /auth/mfa/verify`)') })
  .meta({ title: 'MfaChallenge' });
/** A password login either starts a session or, for users with MFA, hands out a token for the second step. */
export const LoginResponseSchema = z.union([AuthSessionSchema, MfaChallengeSchema]).meta({ title: 'LoginResponse' });
export type LoginResult = z.output<typeof LoginResponseSchema>;

/** Both answers of a login in one shape (GraphQL has no anonymous unions): the tokens, or `mfaRequired` with `mfaToken`. */
export const LoginResultSchema = z
  .object({
    accessToken: z.string().nullable().describe('Bearer token for the Authorization header; null when mfaRequired.'),
    refreshToken: z.string().nullable().describe('Single-use token for refreshToken; null when mfaRequired.'),
    expiresIn: z.number().int().nullable().describe('access-token lifetime in seconds'),
    user: UserViewSchema.nullable().describe('The signed-in user; null when mfaRequired.'),
    mfaRequired: z.boolean().describe('Whether a second step is needed: call verifyMfa with mfaToken and a code.'),
    mfaToken: z.string().nullable().describe('valid for 5 minutes, only for verifyMfa'),
  })
  .meta({ title: 'LoginResult', description: 'Either a session (tokens and user) or, when mfaRequired, an mfaToken for verifyMfa.' });

export function flatLoginResult(result: LoginResult): z.output<typeof LoginResultSchema> {
  if ('mfaRequired' in result) return { accessToken: null, refreshToken: null, expiresIn: null, user: null, mfaRequired: true, mfaToken: result.mfaToken };
  return { ...result, mfaRequired: false, mfaToken: null };
}

export const MfaSetupSchema = z.object({ secret: z.string().describe('base32 TOTP secret'), otpauthUrl: z.string().describe('The secret as an `otpauth://` URL, for a QR code.') }).meta({ title: 'MfaSetup', description: 'A new TOTP secret to enrol in an authenticator app; MFA turns on once enableMfa confirms a code.' });
export type MfaSetup = z.output<typeof MfaSetupSchema>;

export const MfaRecoveryCodesSchema = z
  .object({ recoveryCodes: z.array(z.string()).describe('shown once; each signs in once in place of a TOTP code') })
  .meta({ title: 'MfaRecoveryCodes', description: 'One-time recovery codes, shown only in this answer.' });

const mfaCode = z.string({ message: 'MFA code is required' }).trim().min(1, 'MFA code is required').max(64);
// Passwords are only compared at login: the cap bounds hashing work, not what a password may be.
const givenPassword = z.string().min(1).max(1024);

export const LoginInput = z
  .object({
    email: z.string().trim().min(1).max(255),
    password: givenPassword,
    /** which of the user's memberships the session acts in; default: the one used last, else the oldest */
    membershipId: uuid().optional(),
  })
  .strict();
export type LoginInput = z.input<typeof LoginInput>;

export const VerifyMfaInput = z.object({ mfaToken: z.string().min(1).max(4096), code: mfaCode }).strict();
export type VerifyMfaInput = z.input<typeof VerifyMfaInput>;

export const RefreshInput = z.object({ refreshToken: z.string().min(1).max(512) }).strict();
export type RefreshInput = z.input<typeof RefreshInput>;

export const LogoutInput = z.object({ refreshToken: z.string().min(1).max(512).optional() }).strict();
export type LogoutInput = z.input<typeof LogoutInput>;

export const ChangePasswordInput = z
  .object({
    currentPassword: givenPassword,
    newPassword: z.string().min(12, 'must be at least 12 characters').max(256, 'must be at most 256 characters'),
    /** the user's API keys: revoked with the old password (default), or kept by the user's choice */
    apiKeys: z.enum(['revoke', 'keep']).default('revoke'),
  })
  .strict();
export type ChangePasswordInput = z.input<typeof ChangePasswordInput>;

export const MfaCodeInput = z.object({ code: mfaCode }).strict();
export type MfaCodeInput = z.input<typeof MfaCodeInput>;

export const MfaSetupInput = z
  .object({
    /** required when the session signed in through SSO and the account has a password of its own */
    currentPassword: givenPassword.optional(),
  })
  .strict();
export type MfaSetupInput = z.input<typeof MfaSetupInput>;

export const SwitchMembershipInput = z.object({ membershipId: uuid() }).strict();
export type SwitchMembershipInput = z.input<typeof SwitchMembershipInput>;

export const PasswordChangedSchema = SessionTokensSchema.extend({
  apiKeysRevoked: z.number().int().describe('API keys revoked with the old password (0 when kept)'),
}).meta({ title: 'PasswordChanged', description: 'The new session, and how many API keys went with the old password.' }).describe('The caller’s new session after a password change (every other session has ended).');
export type PasswordChanged = z.output<typeof PasswordChangedSchema>;
