import type { OpenApiRegistry } from '../src/http/openapi.js';
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
import { RestRouter, pathId } from './router.js';

export function apiKeysRouter(openapi: OpenApiRegistry): RestRouter {
  const key = { id: pathId('API key') };
  return new RestRouter(openapi, 'API keys')
    .get('/api-keys', { summary: 'Your API keys, and with api_keys:read those of the tenants you can see', query: ApiKeyListQuery, response: ApiKeyPageSchema }, (ctx, { query }) =>
      listApiKeys(ctx, query),
    )
    .post('/api-keys', { summary: 'Create an API key; the response carries the full key, shown only this once', body: CreateApiKeySchema, status: 201, response: ApiKeyWithSecretSchema }, (ctx, { body }) =>
      createApiKey(ctx, body),
    )
    .get('/api-keys/:id', { summary: 'One API key (never the key itself)', params: key, response: ApiKeyViewSchema }, (ctx, { params }) => getApiKey(ctx, params.id))
    .patch('/api-keys/:id', { summary: 'Rename, rescope or change the expiry of an API key', params: key, body: UpdateApiKeySchema, response: ApiKeyViewSchema }, (ctx, { params, body }) =>
      updateApiKey(ctx, params.id, body),
    )
    .delete('/api-keys/:id', { summary: 'Revoke an API key: it stops working at once', params: key, status: 204 }, async (ctx, { params }) => {
      await revokeApiKey(ctx, params.id);
    })
    .post('/api-keys/:id/rotate', { summary: 'Replace the key material; the old key stops working at once, the new one is shown once', params: key, status: 201, response: ApiKeyWithSecretSchema }, (ctx, { params }) =>
      rotateApiKey(ctx, params.id),
    );
}
