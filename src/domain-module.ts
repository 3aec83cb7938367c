import type { EntityClass } from '@mikro-orm/core';
import type { RestRouter } from '../rest/router.js';
import type { PermissionTable } from './auth/permissions.js';
import type { EventSight } from './events/sight.js';
import type { AuditActionTable, EventSubscriber } from './events/types.js';
import type { OpenApiRegistry } from './http/openapi.js';
import type { DueWork, JobDefinition } from './jobs/types.js';
import type { CommandTypeHooks, DeviceReportListeners } from './services/devices/api.js';

/**
 * A domain's manifest (`src/services/<domain>/index.ts`): everything the wiring registers for it.
 * `src/domains.ts` lists the manifests; every registry (entities, REST routes, resolvers, jobs, event
 * subscribers, audit actions, permissions) is derived from that one list.
 */
export interface DomainModule {
  name: string;
  /** MikroORM entity classes of the domain's tables (`entities/<noun>.ts`) */
  entities?: EntityClass<object>[];
  /** REST router factories (`rest/<nouns>.ts`), mounted under /api/v1 */
  rest?: ((openapi: OpenApiRegistry) => RestRouter)[];
  /** type-graphql resolver classes (`resolvers/<noun>.ts`) */
  resolvers?: Function[];
  /** Agenda job definitions (`src/jobs/<nouns>.ts`) */
  jobs?: JobDefinition<never>[];
  /** work the one `due-work.tick` job runs on the service clock (`src/jobs/<nouns>.ts`) */
  dueWork?: DueWork[];
  /** consumers of committed domain events (`src/subscribers/<nouns>.ts`) */
  subscribers?: EventSubscriber[];
  /** listeners for what agents report: heartbeats and presence, inventory parts by name (src/services/devices/device-reports.ts) */
  deviceReports?: DeviceReportListeners;
  /** the device command types the domain owns, by name, with their hooks (a command's result reaches its type's `started`/`answered`) */
  commandTypes?: Record<string, CommandTypeHooks>;
  /** who hears the domain's events over `domainEvents`, by the first part of their names (src/events/sight.ts) */
  eventSight?: Record<string, EventSight>;
  /** audit actions and the event each publishes (the domain's `events.ts`) */
  auditActions?: AuditActionTable;
  /** permission resources and their actions; the manifest also adds them to `PermissionCatalog` */
  permissions?: PermissionTable;
  /** resources the seeded technician and admin roles work on (`resource:*`) */
  orgWork?: readonly string[];
}

/** Checks a manifest's shape while keeping its literal types. */
export function defineDomain<M extends DomainModule>(manifest: M): M {
  return manifest;
}
