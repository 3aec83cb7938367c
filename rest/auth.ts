import type { OpenApiRegistry } from '../src/http/openapi.js';
import {
  AuthSessionSchema,
  ChangePasswordInput,
  LoginInput,
  LoginResponseSchema,
  LogoutInput,
  MfaCodeInput,
  MfaRecoveryCodesSchema,
  MfaSetupInput,
  MfaSetupSchema,
  PasswordChangedSchema,
  RefreshInput,
  SessionTokensSchema,
  SwitchMembershipInput,
  VerifyMfaInput,
  changePassword,
  disableMfa,
  enableMfa,
  login,
  logout,
  refresh,
  setupMfa,
  switchMembership,
  verifyMfa,
} from '../src/services/identity/auth.js';
import { RestRouter } from './router.js';

/** Password login, MFA, token refresh, logout and password change: the caller's own sessions. */
export function authRouter(openapi: OpenApiRegistry): RestRouter {
  const r = new RestRouter(openapi, 'Authentication');

  r.post('/auth/login', { summary: 'Sign in with email and password: tokens, or an MFA token for the second step', body: LoginInput, public: true, response: LoginResponseSchema }, (ctx, { body }) =>
    login(ctx, body),
  );
  r.post('/auth/mfa/verify', { summary: 'Second login step: a TOTP or recovery code with the MFA token', body: VerifyMfaInput, public: true, response: AuthSessionSchema }, (ctx, { body }) =>
    verifyMfa(ctx, body),
  );
  r.post('/auth/refresh', { summary: 'Rotate a refresh token for new tokens', body: RefreshInput, public: true, response: SessionTokensSchema }, (ctx, { body }) => refresh(ctx, body));
  r.post('/auth/logout', { summary: 'End the current session (and the one of the given refresh token)', body: LogoutInput, status: 204 }, (ctx, { body }) =>
    logout(ctx, body),
  );
  r.post('/auth/change-password', { summary: 'Change the password; ends every other session', body: ChangePasswordInput, response: PasswordChangedSchema }, (ctx, { body }) =>
    changePassword(ctx, body),
  );
  r.post('/auth/switch-membership', { summary: 'Act through another of your memberships in the same session: new tokens', body: SwitchMembershipInput, response: AuthSessionSchema }, (ctx, { body }) =>
    switchMembership(ctx, body),
  );
  r.post('/auth/mfa/setup', { summary: 'Start MFA setup: a new TOTP secret and otpauth URL (an SSO session also gives currentPassword)', body: MfaSetupInput, response: MfaSetupSchema }, (ctx, { body }) =>
    setupMfa(ctx, body),
  );
  r.post('/auth/mfa/enable', { summary: 'Confirm a TOTP code and turn MFA on; returns one-time recovery codes', body: MfaCodeInput, response: MfaRecoveryCodesSchema }, (ctx, { body }) =>
    enableMfa(ctx, body),
  );
  r.post('/auth/mfa/disable', { summary: 'Turn MFA off with a TOTP or recovery code', body: MfaCodeInput, status: 204 }, (ctx, { body }) => disableMfa(ctx, body));

  return r;
}
