import { Arg, Ctx, Field, Int, Mutation, ObjectType, Resolver } from 'type-graphql';
import type { GraphqlContext } from '../src/graphql/context.js';
import {
  changePassword,
  disableMfa,
  enableMfa,
  login,
  logout,
  refresh,
  setupMfa,
  verifyMfa,
  type LoginResult,
  type MfaSetup,
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
  async login(@Ctx() { ctx }: GraphqlContext, @Arg('email', () => String) email: string, @Arg('password', () => String) password: string) {
    return loginResult(await login(ctx, { email, password }));
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

  @Mutation(() => SessionTokensObject, { description: 'Ends every session of the user and returns a new one for the caller.' })
  changePassword(
    @Ctx() { ctx }: GraphqlContext,
    @Arg('currentPassword', () => String) currentPassword: string,
    @Arg('newPassword', () => String) newPassword: string,
  ) {
    return changePassword(ctx, { currentPassword, newPassword });
  }

  @Mutation(() => MfaSetupObject, { description: 'A new TOTP secret; MFA turns on with enableMfa.' })
  setupMfa(@Ctx() { ctx }: GraphqlContext) {
    return setupMfa(ctx);
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
