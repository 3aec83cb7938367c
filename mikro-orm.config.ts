import path from 'node:path';
import { defineConfig, PostgreSqlDriver } from '@mikro-orm/postgresql';
import { ReflectMetadataProvider } from '@mikro-orm/core';
import { Migrator } from '@mikro-orm/migrations';
import type { EntityClass } from '@mikro-orm/core';
import { migrations } from './src/migrations/index.js';
import { projectRoot } from './src/paths.js';

/** Tables that are ours but not entities: the ORM's schema diff must leave them alone. */
export const unmanagedTables = ['mikro_orm_migrations', 'service_migration_checksum', 'agenda_jobs', 'agenda_logs', 'rate_limit'];

/** The one ORM configuration, used by the server, the migration scripts and the tests; the entities come from the domains' manifests (src/domains.ts). */
export function ormConfig(databaseUrl: string, options: { entities: EntityClass<object>[]; debug?: boolean; poolMax?: number }) {
  return defineConfig({
    driver: PostgreSqlDriver,
    clientUrl: databaseUrl,
    entities: options.entities,
    metadataProvider: ReflectMetadataProvider,
    extensions: [Migrator],
    // Requests and jobs fork their own EntityManager; the global one must never be used by accident.
    allowGlobalContext: false,
    forceUtcTimezone: true,
    debug: options.debug ?? false,
    pool: { min: 0, max: options.poolMax ?? 20 },
    schemaGenerator: { skipTables: unmanagedTables },
    migrations: {
      migrationsList: migrations,
      tableName: 'mikro_orm_migrations',
      transactional: true,
      silent: true,
      // migration:create diffs against a scratch database with every migration applied, not a snapshot file.
      snapshot: false,
      allOrNothing: true,
      emit: 'ts',
      path: path.join(projectRoot, 'src', 'migrations'),
    },
  });
}
