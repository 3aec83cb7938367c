import { Arg, Args, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import { argsType, inputType, objectType } from '../src/graphql/contract.js';
import type { GraphqlContext } from '../src/graphql/context.js';
import { pageSchema } from '../src/pagination.js';
import {
  ApiKeyListQuery,
  ApiKeyViewSchema,
  ApiKeyWithSecretSchema,
  CreateApiKeySchema,
  UpdateApiKeySchema,
  createApiKey,
  getApiKey,
  listApiKeys,
  revokeApiKey,
  rotateApiKey,
  updateApiKey,
  type ApiKeyListInput,
  type CreateApiKeyInput,
  type UpdateApiKeyInput,
} from '../src/services/api-keys.js';

const ApiKeyObject = objectType('ApiKey', ApiKeyViewSchema);
const ApiKeyWithSecretObject = objectType('ApiKeyWithSecret', ApiKeyWithSecretSchema);
const ApiKeyPage = objectType('ApiKeyPage', pageSchema(ApiKeyViewSchema, 'ApiKeyPage'));
const ApiKeyListArgs = argsType('ApiKeyListArgs', ApiKeyListQuery);
const CreateApiKeyInput = inputType('CreateApiKeyInput', CreateApiKeySchema);
const UpdateApiKeyInput = inputType('UpdateApiKeyInput', UpdateApiKeySchema);

@Resolver()
export class ApiKeyResolver {
  @Query(() => ApiKeyPage, { description: 'Your API keys; with api_keys:read also those of the tenants you can see.' })
  apiKeys(@Ctx() { ctx }: GraphqlContext, @Args(() => ApiKeyListArgs) args: ApiKeyListInput) {
    return listApiKeys(ctx, args);
  }

  @Query(() => ApiKeyObject)
  apiKey(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string) {
    return getApiKey(ctx, id);
  }

  @Mutation(() => ApiKeyWithSecretObject, { description: 'Needs api_keys:write and MFA.' })
  createApiKey(@Ctx() { ctx }: GraphqlContext, @Arg('input', () => CreateApiKeyInput) input: CreateApiKeyInput) {
    return createApiKey(ctx, input);
  }

  @Mutation(() => ApiKeyObject)
  updateApiKey(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string, @Arg('input', () => UpdateApiKeyInput) input: UpdateApiKeyInput) {
    return updateApiKey(ctx, id, input);
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
