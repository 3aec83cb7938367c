import { id, input, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
import {
  ApiKeyListQuery,
  ApiKeyPageSchema,
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
} from '../src/services/identity/api-keys.js';
import { pageConnectionOf, paged } from './shared.js';

export const ApiKeyResolver = operations({
  apiKeys: query(pageConnectionOf(ApiKeyPageSchema), [pageArgs('ApiKeyListArgs', ApiKeyListQuery)], paged(listApiKeys), {
    description: 'Your API keys; with api_keys:read also those of the tenants you can see.',
  }),
  apiKey: query(ApiKeyViewSchema, [id], getApiKey, { description: 'One API key (never the key itself).' }),
  createApiKey: mutation(ApiKeyWithSecretSchema, [input('CreateApiKeyInput', CreateApiKeySchema)], createApiKey, { description: 'Needs api_keys:write and MFA.' }),
  updateApiKey: mutation(ApiKeyViewSchema, [id, input('UpdateApiKeyInput', UpdateApiKeySchema)], updateApiKey, { description: 'Renames a key, or changes its scopes or expiry.' }),
  revokeApiKey: mutation(ApiKeyViewSchema, [id], revokeApiKey, { description: 'The key stops working at once; revoking twice changes nothing.' }),
  rotateApiKey: mutation(ApiKeyWithSecretSchema, [id], rotateApiKey, { description: 'New key material for the same key; the old material stops working at once.' }),
});
