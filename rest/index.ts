import express from 'express';
import type { OpenApiRegistry } from '../src/http/openapi.js';
import { accessReviewsRouter } from './access-reviews.js';
import { agentVersionsRouter } from './agent-versions.js';
import { agentsRouter } from './agents.js';
import { alertTemplatesRouter } from './alert-templates.js';
import { alertsRouter } from './alerts.js';
import { alertChannelsRouter } from './alert-channels.js';
import { alertPoliciesRouter } from './alert-policies.js';
import { apiKeysRouter } from './api-keys.js';
import { auditRouter } from './audit.js';
import { automationsRouter } from './automations.js';
import { authRouter } from './auth.js';
import { devicesRouter } from './devices.js';
import { enrollmentKeysRouter } from './enrollment-keys.js';
import { graphqlRouter } from './graphql.js';
import { groupsRouter } from './groups.js';
import { notificationsRouter } from './notifications.js';
import { maintenanceRouter } from './maintenance.js';
import { orgsRouter } from './orgs.js';
import { rolesRouter } from './roles.js';
import { scriptLibraryRouter } from './script-library.js';
import { scriptsRouter } from './scripts.js';
import { mountRoutes, type HotRoute, type RestRouter } from './router.js';
import { ssoRouter } from './sso.js';
import { tagsRouter } from './tags.js';
import { usersRouter } from './users.js';
import { webhooksRouter } from './webhooks.js';

type RouterFactory = (openapi: OpenApiRegistry) => RestRouter;

/** Every domain's router, mounted under /api/v1 (the order does not matter: see mountRoutes). */
const routers: RouterFactory[] = [authRouter, orgsRouter, usersRouter, rolesRouter, webhooksRouter, ssoRouter, apiKeysRouter, accessReviewsRouter, auditRouter, enrollmentKeysRouter, agentsRouter, devicesRouter, agentVersionsRouter, groupsRouter, tagsRouter, maintenanceRouter, alertChannelsRouter, alertPoliciesRouter, notificationsRouter, alertsRouter, alertTemplatesRouter, graphqlRouter, automationsRouter, scriptsRouter, scriptLibraryRouter];

/** The REST API: the Express router for /api/v1, and the routes also served in front of Express. */
export function apiRouter(openapi: OpenApiRegistry, version: string): { api: express.Router; hot: HotRoute[] } {
  const api = express.Router();
  const built = routers.map((build) => build(openapi));
  api.use(mountRoutes(built));
  const document = openapi.document(version);
  api.get('/openapi.json', (_req, res) => {
    res.json(document);
  });
  return { api, hot: built.flatMap((router) => router.hot) };
}
