/** `npm run migrate`: verifies checksums and applies pending migrations, then exits (for AUTO_MIGRATE=false deployments). */
import 'reflect-metadata';
import { loadConfig } from '../config.js';
import { openDatabase } from '../db/orm.js';
import { createLogger } from '../logger.js';
import { domainEntities } from '../domains.js';

const config = { ...loadConfig(), autoMigrate: true };
const log = createLogger(config.logLevel);
try {
  const db = await openDatabase(config, log, { entities: domainEntities });
  await db.close();
  log.info('migrations are up to date');
} catch (error) {
  log.fatal({ err: (error as Error).message }, 'migration failed');
  process.exitCode = 1;
}
