import express from 'express';
import type { OpenApiRegistry } from '../src/http/openapi.js';
import type { RestRouter } from './router.js';

type RouterFactory = (openapi: OpenApiRegistry) => RestRouter;

/** Every domain's router, mounted under /api/v1 in this order. */
const routers: RouterFactory[] = [];

export function apiRouter(openapi: OpenApiRegistry, version: string): express.Router {
  const api = express.Router();
  for (const build of routers) api.use(build(openapi).router);
  const document = openapi.document(version);
  api.get('/openapi.json', (_req, res) => {
    res.json(document);
  });
  return api;
}
