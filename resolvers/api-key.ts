import { Arg, Args, ArgsType, Ctx, Field, ID, InputType, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import type { GraphqlContext } from '../src/graphql/context.js';
import {
  createApiKey,
  getApiKey,
  listApiKeys,
  revokeApiKey,
  rotateApiKey,
  updateApiKey,
  type ApiKeyStatus,
  type ApiKeyView,
  type ApiKeyWithSecret,
} from '../src/services/api-keys.js';
import { PageArgs, PageOf } from './shared.js';

@ObjectType('ApiKey', { description: 'An API key as stored: its prefix, never the key or its hash.' })
class ApiKeyObject implements ApiKeyView {
  @Field(() => ID)
  id!: string;

  @Field(() => String)
  name!: string;

  @Field(() => String, { description: 'the visible start of the key, `rmm_<prefix>_…`' })
  prefix!: string;

  @Field(() => [String])
  scopes!: string[];

  @Field(() => ID)
  userId!: string;

  @Field(() => ID, { nullable: true })
  orgId!: string | null;

  @Field(() => ID, { nullable: true })
  partnerId!: string | null;

  @Field(() => String, { nullable: true })
  expiresAt!: string | null;

  @Field(() => String, { nullable: true })
  lastUsedAt!: string | null;

  @Field(() => String, { nullable: true })
  revokedAt!: string | null;

  @Field(() => String)
  createdAt!: string;

  @Field(() => String, { description: 'active, revoked or expired' })
  status!: ApiKeyStatus;
}

@ObjectType('ApiKeyWithSecret', { description: 'Returned by createApiKey and rotateApiKey only: `key` is never shown again.' })
class ApiKeyWithSecretObject extends ApiKeyObject implements ApiKeyWithSecret {
  @Field(() => String, { description: 'the full key; send it as the X-API-Key header' })
  key!: string;
}

const ApiKeyPage = PageOf(ApiKeyObject, 'ApiKeyPage');

@ArgsType()
class ApiKeyListArgs extends PageArgs {
  @Field(() => String, { nullable: true, description: 'active, revoked or expired' })
  status?: 'active' | 'revoked' | 'expired';

  @Field(() => ID, { nullable: true })
  userId?: string;
}

@InputType()
class CreateApiKeyInputGql {
  @Field(() => String)
  name!: string;

  @Field(() => [String], { description: 'permissions (`resource:action`, wildcards allowed), within your own' })
  scopes!: string[];

  @Field(() => String, { nullable: true, description: 'ISO 8601, in the future' })
  expiresAt?: string;
}

@InputType()
class UpdateApiKeyInputGql {
  @Field(() => String, { nullable: true })
  name?: string;

  @Field(() => [String], { nullable: true })
  scopes?: string[];

  @Field(() => String, { nullable: true, description: 'ISO 8601 in the future; null removes the expiry' })
  expiresAt?: string | null;
}

@Resolver()
export class ApiKeyResolver {
  @Query(() => ApiKeyPage, { description: 'Your API keys; with api_keys:read also those of the tenants you can see.' })
  apiKeys(@Ctx() { ctx }: GraphqlContext, @Args(() => ApiKeyListArgs) args: ApiKeyListArgs) {
    return listApiKeys(ctx, { ...args });
  }

  @Query(() => ApiKeyObject)
  apiKey(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string) {
    return getApiKey(ctx, id);
  }

  @Mutation(() => ApiKeyWithSecretObject, { description: 'Needs api_keys:write and MFA.' })
  createApiKey(@Ctx() { ctx }: GraphqlContext, @Arg('input', () => CreateApiKeyInputGql) input: CreateApiKeyInputGql) {
    return createApiKey(ctx, { ...input });
  }

  @Mutation(() => ApiKeyObject)
  updateApiKey(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string, @Arg('input', () => UpdateApiKeyInputGql) input: UpdateApiKeyInputGql) {
    return updateApiKey(ctx, id, { ...input });
  }

  @Mutation(() => ApiKeyObject, { description: 'The key stops working at once; revoking twice changes nothing.' })
  revokeApiKey(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string) {
    return revokeApiKey(ctx, id);
  }

  @Mutation(() => ApiKeyWithSecretObject, { description: 'New key material for the same key; the old material stops working at once.' })
  rotateApiKey(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string) {
    return rotateApiKey(ctx, id);
  }
}
