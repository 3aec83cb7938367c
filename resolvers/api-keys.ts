import { id, input, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
import * as apiKeys from '../src/services/identity/api-keys.js';
import { pageConnectionOf, paged } from './shared.js';

export const ApiKeyResolver = operations({
  apiKeys: query(pageConnectionOf(apiKeys.ApiKeyPageSchema), [pageArgs('ApiKeyListArgs', apiKeys.ApiKeyListQuery)], paged(apiKeys.listApiKeys), {
    description: 'Your API keys; with api_keys:read also those of the tenants you can see.',
  }),
  apiKey: query(apiKeys.ApiKeyViewSchema, [id], apiKeys.getApiKey, { description: 'One API key (never the key itself).' }),
  createApiKey: mutation(apiKeys.ApiKeyWithSecretSchema, [input('CreateApiKeyInput', apiKeys.CreateApiKeySchema)], apiKeys.createApiKey, { description: 'Needs api_keys:write and MFA.' }),
  updateApiKey: mutation(apiKeys.ApiKeyViewSchema, [id, input('UpdateApiKeyInput', apiKeys.UpdateApiKeySchema)], apiKeys.updateApiKey, { description: 'Renames a key, or changes its scopes or expiry.' }),
  revokeApiKey: mutation(apiKeys.ApiKeyViewSchema, [id], apiKeys.revokeApiKey, { description: 'The key stops working at once; revoking twice changes nothing.' }),
  rotateApiKey: mutation(apiKeys.ApiKeyWithSecretSchema, [id], apiKeys.rotateApiKey, { description: 'New key material for the same key; the old material stops working at once.' }),
});
