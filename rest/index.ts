import express from 'express';
import type { OpenApiRegistry } from '../src/http/openapi.js';
import { mountRoutes, type HotRoute, type RestRouter } from './router.js';

type RouterFactory = (openapi: OpenApiRegistry) => RestRouter;

/** The REST API: the domains' routers (src/domains.ts) mounted under /api/v1 (in any order: see mountRoutes), and the routes also served in front of Express. */
export function apiRouter(openapi: OpenApiRegistry, version: string, routers: readonly RouterFactory[]): { api: express.Router; hot: HotRoute[] } {
  const api = express.Router();
  const built = routers.map((build) => build(openapi));
  api.use(mountRoutes(built));
  const document = openapi.document(version);
  api.get('/openapi.json', (_req, res) => {
    res.json(document);
  });
  return { api, hot: built.flatMap((router) => router.hot) };
}
