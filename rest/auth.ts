import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as auth from '../src/services/identity/auth.js';
import { call, RestRouter } from './router.js';

/** Password login, MFA, token refresh, logout and password change: the caller's own sessions. */
export function authRouter(openapi: OpenApiRegistry): RestRouter {
  const r = new RestRouter(openapi, 'Authentication');

  r.post('/auth/login', { summary: 'Sign in with email and password: tokens, or an MFA token for the second step', body: auth.LoginInput, public: true, response: auth.LoginResponseSchema }, call(auth.login));
  r.post('/auth/mfa/verify', { summary: 'Second login step: a TOTP or recovery code with the MFA token', body: auth.VerifyMfaInput, public: true, response: auth.AuthSessionSchema }, call(auth.verifyMfa));
  r.post('/auth/refresh', { summary: 'Rotate a refresh token for new tokens', body: auth.RefreshInput, public: true, response: auth.SessionTokensSchema }, call(auth.refresh));
  r.post('/auth/logout', { summary: 'End the current session (and the one of the given refresh token)', body: auth.LogoutInput, status: 204 }, call(auth.logout));
  r.post('/auth/change-password', { summary: 'Change the password; ends every other session', body: auth.ChangePasswordInput, response: auth.PasswordChangedSchema }, call(auth.changePassword));
  r.post('/auth/switch-membership', { summary: 'Act through another of your memberships in the same session: new tokens', body: auth.SwitchMembershipInput, response: auth.AuthSessionSchema }, call(auth.switchMembership));
  r.post('/auth/mfa/setup', { summary: 'Start MFA setup: a new TOTP secret and otpauth URL (an SSO session also gives currentPassword)', body: auth.MfaSetupInput, response: auth.MfaSetupSchema }, call(auth.setupMfa));
  r.post('/auth/mfa/enable', { summary: 'Confirm a TOTP code and turn MFA on; returns one-time recovery codes', body: auth.MfaCodeInput, response: auth.MfaRecoveryCodesSchema }, call(auth.enableMfa));
  r.post('/auth/mfa/disable', { summary: 'Turn MFA off with a TOTP or recovery code', body: auth.MfaCodeInput, status: 204 }, call(auth.disableMfa));

  return r;
}
