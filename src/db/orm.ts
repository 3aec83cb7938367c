import type { EntityClass } from '@mikro-orm/core';
import { MikroORM } from '@mikro-orm/postgresql';
import { ormConfig } from '../../mikro-orm.config.js';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import { startEmbeddedDatabase, type EmbeddedDatabase } from './embedded.js';
import { migrate } from './migrate.js';

export interface Database {
  orm: MikroORM;
  url: string;
  embedded: EmbeddedDatabase | null;
  close(): Promise<void>;
}

/** DATABASE_URL when given, else an embedded PostgreSQL kept in DATA_DIR. Migrations run here when AUTO_MIGRATE is on. */
export async function openDatabase(config: Config, log: Logger, options: { entities: EntityClass<object>[]; migrationsDir?: string }): Promise<Database> {
  let embedded: EmbeddedDatabase | null = null;
  if (!config.databaseUrl) {
    log.info({ dataDir: config.dataDir }, 'starting embedded PostgreSQL');
    embedded = await startEmbeddedDatabase({ dataDir: config.dataDir, persistent: true, log: (m) => log.debug({ postgres: m.trim() }) });
  }
  const url = config.databaseUrl ?? embedded!.url;
  let orm: MikroORM | null = null;
  try {
    orm = await MikroORM.init(ormConfig(url, { entities: options.entities }));
    const { applied } = await migrate(orm, { apply: config.autoMigrate, migrationsDir: options.migrationsDir });
    if (applied.length > 0) log.info({ applied }, 'migrations applied');
  } catch (error) {
    await orm?.close(true);
    await embedded?.stop();
    throw error;
  }
  const opened = orm;
  return {
    orm: opened,
    url,
    embedded,
    async close() {
      await opened.close(true);
      await embedded?.stop();
    },
  };
}
