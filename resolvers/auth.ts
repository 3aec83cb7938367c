import { ID } from 'type-graphql';
import { arg, mutation, operations } from '../src/graphql/contract.js';
import * as auth from '../src/services/identity/auth.js';

export const AuthResolver = operations({
  login: mutation(
    auth.LoginResultSchema,
    [
      arg('email', String, { description: 'The account’s email address.' }),
      arg('password', String, { description: 'The account’s password.' }),
      arg('membershipId', ID, { nullable: true, description: 'the membership to act in; default: the one used last' }),
    ],
    async (ctx, email, password, membershipId) => auth.flatLoginResult(await auth.login(ctx, { email, password, ...(membershipId ? { membershipId } : {}) })),
    { description: 'Password login; the same error for every refusal.' },
  ),
  switchMembership: mutation(auth.AuthSessionSchema, [arg('membershipId', ID, { description: 'An active membership of the signed-in user (see me.memberships).' })], (ctx, membershipId) => auth.switchMembership(ctx, { membershipId }), {
    description: 'The same session acting through another of your memberships (REST `POST /auth/switch-membership`).',
  }),
  verifyMfa: mutation(
    auth.LoginResultSchema,
    [arg('mfaToken', String, { description: 'The mfaToken login answered.' }), arg('code', String, { description: 'A 6-digit TOTP code, or an unused recovery code.' })],
    async (ctx, mfaToken, code) => auth.flatLoginResult(await auth.verifyMfa(ctx, { mfaToken, code })),
    { description: 'Second login step with a TOTP or recovery code.' },
  ),
  refreshToken: mutation(auth.SessionTokensSchema, [arg('refreshToken', String, { description: 'The refresh token of the pair to replace (single use).' })], (ctx, refreshToken) => auth.refresh(ctx, { refreshToken }), {
    description: 'Rotates a refresh token; a reused one ends its session.',
  }),
  logout: mutation(Boolean, [arg('refreshToken', String, { nullable: true, description: 'Another session to end: its refresh token.' })], (ctx, refreshToken) => auth.logout(ctx, refreshToken ? { refreshToken } : {}), {
    description: 'Ends the current session and, when given, the session of refreshToken.',
  }),
  changePassword: mutation(
    auth.PasswordChangedSchema,
    [
      arg('currentPassword', String, { description: 'The account’s current password.' }),
      arg('newPassword', String, { description: 'The new password, 12 to 256 characters.' }),
      arg('apiKeys', String, { nullable: true, description: 'revoke (default) or keep' }),
    ],
    (ctx, currentPassword, newPassword, apiKeys) => auth.changePassword(ctx, { currentPassword, newPassword, ...(apiKeys ? { apiKeys: apiKeys as 'revoke' | 'keep' } : {}) }),
    { description: 'Ends every session of the user and returns a new one for the caller; API keys are revoked unless apiKeys is keep.' },
  ),
  setupMfa: mutation(auth.MfaSetupSchema, [arg('currentPassword', String, { nullable: true, description: 'The account’s password, when the session signed in through SSO.' })], (ctx, currentPassword) => auth.setupMfa(ctx, currentPassword ? { currentPassword } : {}), {
    description: 'A new TOTP secret; MFA turns on with enableMfa. An SSO session also gives currentPassword.',
  }),
  enableMfa: mutation(auth.MfaRecoveryCodesSchema, [arg('code', String, { description: 'A current TOTP code from the secret setupMfa gave.' })], (ctx, code) => auth.enableMfa(ctx, { code }), {
    description: 'Turns MFA on once a code proves the authenticator works; answers the recovery codes, shown once.',
  }),
  disableMfa: mutation(Boolean, [arg('code', String, { description: 'A current TOTP code or an unused recovery code.' })], (ctx, code) => auth.disableMfa(ctx, { code }), {
    description: 'Turns MFA off for the caller’s account.',
  }),
});
