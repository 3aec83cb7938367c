import { Arg, Ctx, Field, ID, Int, Mutation, ObjectType, Resolver } from 'type-graphql';
import type { GraphqlContext } from '../src/graphql/context.js';
import {
  changePassword,
  disableMfa,
  enableMfa,
  login,
  logout,
  refresh,
  setupMfa,
  switchMembership,
  verifyMfa,
  type AuthSession,
  type LoginResult,
  type MfaSetup,
  type PasswordChanged,
  type SessionTokens,
} from '../src/services/auth.js';
import { UserObject } from './user-types.js';

@ObjectType('SessionTokens')
class SessionTokensObject implements SessionTokens {
  @Field(() => String)
  accessToken!: string;

  @Field(() => String)
  refreshToken!: string;

  @Field(() => Int, { description: 'access-token lifetime in seconds' })
  expiresIn!: number;
}

@ObjectType('PasswordChanged', { description: 'The new session, and how many API keys went with the old password.' })
class PasswordChangedObject extends SessionTokensObject implements PasswordChanged {
  @Field(() => Int, { description: 'API keys revoked with the old password (0 when kept)' })
  apiKeysRevoked!: number;
}

@ObjectType('AuthSession', { description: 'Tokens of a session and the user as that session sees them.' })
class AuthSessionObject extends SessionTokensObject implements AuthSession {
  @Field(() => UserObject)
  user!: UserObject;
}

@ObjectType('LoginResult', { description: 'Either a session (tokens and user) or, when mfaRequired, an mfaToken for verifyMfa.' })
class LoginResultObject {
  @Field(() => String, { nullable: true })
  accessToken!: string | null;

  @Field(() => String, { nullable: true })
  refreshToken!: string | null;

  @Field(() => Int, { nullable: true, description: 'access-token lifetime in seconds' })
  expiresIn!: number | null;

  @Field(() => UserObject, { nullable: true })
  user!: UserObject | null;

  @Field(() => Boolean)
  mfaRequired!: boolean;

  @Field(() => String, { nullable: true, description: 'valid for 5 minutes, only for verifyMfa' })
  mfaToken!: string | null;
}

@ObjectType('MfaSetup')
class MfaSetupObject implements MfaSetup {
  @Field(() => String, { description: 'base32 TOTP secret' })
  secret!: string;

  @Field(() => String)
  otpauthUrl!: string;
}

@ObjectType('MfaRecoveryCodes')
class MfaRecoveryCodesObject {
  @Field(() => [String], { description: 'shown once; each signs in once in place of a TOTP code' })
  recoveryCodes!: string[];
}

function loginResult(result: LoginResult): LoginResultObject {
  if ('mfaRequired' in result) return { accessToken: null, refreshToken: null, expiresIn: null, user: null, mfaRequired: true, mfaToken: result.mfaToken };
  return { ...result, mfaRequired: false, mfaToken: null };
}

@Resolver()
export class AuthResolver {
  @Mutation(() => LoginResultObject, { description: 'Password login; the same error for every refusal.' })
  async login(
    @Ctx() { ctx }: GraphqlContext,
    @Arg('email', () => String) email: string,
    @Arg('password', () => String) password: string,
    @Arg('membershipId', () => ID, { nullable: true, description: 'the membership to act in; default: the one used last' }) membershipId?: string | null,
  ) {
    return loginResult(await login(ctx, { email, password, ...(membershipId ? { membershipId } : {}) }));
  }

  @Mutation(() => AuthSessionObject, { description: 'The same session acting through another of your memberships (REST `POST /auth/switch-membership`).' })
  switchMembership(@Ctx() { ctx }: GraphqlContext, @Arg('membershipId', () => ID) membershipId: string) {
    return switchMembership(ctx, { membershipId });
  }

  @Mutation(() => LoginResultObject, { description: 'Second login step with a TOTP or recovery code.' })
  async verifyMfa(@Ctx() { ctx }: GraphqlContext, @Arg('mfaToken', () => String) mfaToken: string, @Arg('code', () => String) code: string) {
    return loginResult(await verifyMfa(ctx, { mfaToken, code }));
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
