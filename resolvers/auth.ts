import { Arg, Ctx, ID, Mutation, Resolver } from 'type-graphql';
import { objectType } from '../src/graphql/contract.js';
import type { GraphqlContext } from '../src/graphql/context.js';
import {
  AuthSessionSchema,
  LoginResultSchema,
  MfaRecoveryCodesSchema,
  MfaSetupSchema,
  PasswordChangedSchema,
  SessionTokensSchema,
  changePassword,
  disableMfa,
  enableMfa,
  flatLoginResult,
  login,
  logout,
  refresh,
  setupMfa,
  switchMembership,
  verifyMfa,
} from '../src/services/auth.js';

const SessionTokensObject = objectType('SessionTokens', SessionTokensSchema);
const PasswordChangedObject = objectType('PasswordChanged', PasswordChangedSchema);
const AuthSessionObject = objectType('AuthSession', AuthSessionSchema);
const LoginResultObject = objectType('LoginResult', LoginResultSchema);
const MfaSetupObject = objectType('MfaSetup', MfaSetupSchema);
const MfaRecoveryCodesObject = objectType('MfaRecoveryCodes', MfaRecoveryCodesSchema);

@Resolver()
export class AuthResolver {
  @Mutation(() => LoginResultObject, { description: 'Password login; the same error for every refusal.' })
  async login(
    @Ctx() { ctx }: GraphqlContext,
    @Arg('email', () => String) email: string,
    @Arg('password', () => String) password: string,
    @Arg('membershipId', () => ID, { nullable: true, description: 'the membership to act in; default: the one used last' }) membershipId?: string | null,
  ) {
    return flatLoginResult(await login(ctx, { email, password, ...(membershipId ? { membershipId } : {}) }));
  }

  @Mutation(() => AuthSessionObject, { description: 'The same session acting through another of your memberships (REST `POST /auth/switch-membership`).' })
  switchMembership(@Ctx() { ctx }: GraphqlContext, @Arg('membershipId', () => ID) membershipId: string) {
    return switchMembership(ctx, { membershipId });
  }

  @Mutation(() => LoginResultObject, { description: 'Second login step with a TOTP or recovery code.' })
  async verifyMfa(@Ctx() { ctx }: GraphqlContext, @Arg('mfaToken', () => String) mfaToken: string, @Arg('code', () => String) code: string) {
    return flatLoginResult(await verifyMfa(ctx, { mfaToken, code }));
  }

  @Mutation(() => SessionTokensObject, { description: 'Rotates a refresh token; a reused one ends its session.' })
  refreshToken(@Ctx() { ctx }: GraphqlContext, @Arg('refreshToken', () => String) refreshToken: string) {
    return refresh(ctx, { refreshToken });
  }

  @Mutation(() => Boolean, { description: 'Ends the current session and, when given, the session of refreshToken.' })
  async logout(@Ctx() { ctx }: GraphqlContext, @Arg('refreshToken', () => String, { nullable: true }) refreshToken?: string | null) {
    await logout(ctx, refreshToken ? { refreshToken } : {});
    return true;
  }

  @Mutation(() => PasswordChangedObject, { description: 'Ends every session of the user and returns a new one for the caller; API keys are revoked unless apiKeys is keep.' })
  changePassword(
    @Ctx() { ctx }: GraphqlContext,
    @Arg('currentPassword', () => String) currentPassword: string,
    @Arg('newPassword', () => String) newPassword: string,
    @Arg('apiKeys', () => String, { nullable: true, description: 'revoke (default) or keep' }) apiKeys?: string | null,
  ) {
    return changePassword(ctx, { currentPassword, newPassword, ...(apiKeys ? { apiKeys: apiKeys as 'revoke' | 'keep' } : {}) });
  }

  @Mutation(() => MfaSetupObject, { description: 'A new TOTP secret; MFA turns on with enableMfa. An SSO session also gives currentPassword.' })
  setupMfa(@Ctx() { ctx }: GraphqlContext, @Arg('currentPassword', () => String, { nullable: true }) currentPassword?: string | null) {
    return setupMfa(ctx, currentPassword ? { currentPassword } : {});
  }

  @Mutation(() => MfaRecoveryCodesObject)
  enableMfa(@Ctx() { ctx }: GraphqlContext, @Arg('code', () => String) code: string) {
    return enableMfa(ctx, { code });
  }

  @Mutation(() => Boolean)
  async disableMfa(@Ctx() { ctx }: GraphqlContext, @Arg('code', () => String) code: string) {
    await disableMfa(ctx, { code });
    return true;
  }
}
