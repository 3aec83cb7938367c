import type { MikroORM } from '@mikro-orm/postgresql';
import type { Config } from './config.js';
import type { PgPubSub } from './events/pubsub.js';
import type { JobQueue } from './jobs/agenda.js';
import type { Logger } from './logger.js';
import type { SecretBox } from './secrets.js';

/** The long-lived parts of one server instance; every RequestContext points at it. */
export interface Runtime {
  config: Config;
  log: Logger;
  orm: MikroORM;
  databaseUrl: string;
  secrets: SecretBox;
  pubsub: PgPubSub;
  jobs: JobQueue;
}
