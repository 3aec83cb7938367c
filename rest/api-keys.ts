import type { OpenApiRegistry } from '../src/http/openapi.js';
import * as apiKeys from '../src/services/identity/api-keys.js';
import { call, pathId, RestRouter } from './router.js';

export function apiKeysRouter(openapi: OpenApiRegistry): RestRouter {
  const key = { id: pathId('API key') };
  return new RestRouter(openapi, 'API keys')
    .get('/api-keys', { summary: 'Your API keys, and with api_keys:read those of the tenants you can see', query: apiKeys.ApiKeyListQuery, response: apiKeys.ApiKeyPageSchema }, call(apiKeys.listApiKeys))
    .post('/api-keys', { summary: 'Create an API key; the response carries the full key, shown only this once', body: apiKeys.CreateApiKeySchema, status: 201, response: apiKeys.ApiKeyWithSecretSchema }, call(apiKeys.createApiKey))
    .get('/api-keys/:id', { summary: 'One API key (never the key itself)', params: key, response: apiKeys.ApiKeyViewSchema }, call(apiKeys.getApiKey))
    .patch('/api-keys/:id', { summary: 'Rename, rescope or change the expiry of an API key', params: key, body: apiKeys.UpdateApiKeySchema, response: apiKeys.ApiKeyViewSchema }, call(apiKeys.updateApiKey))
    .delete('/api-keys/:id', { summary: 'Revoke an API key: it stops working at once', params: key, status: 204 }, async (ctx, { params }) => {
      await apiKeys.revokeApiKey(ctx, params.id);
    })
    .post('/api-keys/:id/rotate', { summary: 'Replace the key material; the old key stops working at once, the new one is shown once', params: key, status: 201, response: apiKeys.ApiKeyWithSecretSchema }, call(apiKeys.rotateApiKey));
}
