/**
 * `npm run persisted:import -- manifest.json`: loads a client build's persisted-query manifest (Apollo's
 * `apollo-persisted-query-manifest`, or a `{ "<sha256>": "<query>" }` map) into the database as
 * trusted documents, as `POST /api/v1/graphql/persisted-queries` does for a platform administrator.
 */
import 'reflect-metadata';
import fs from 'node:fs';
import { RequestContext } from '../auth/context.js';
import { loadConfig } from '../config.js';
import { openDatabase } from '../db/orm.js';
import { AppError } from '../errors.js';
import { createLogger } from '../logger.js';
import { systemClock, type Runtime } from '../runtime.js';
import { importTrustedDocuments } from '../services/platform/trusted-documents.js';
import { domainEntities } from '../domains.js';

const file = process.argv[2];
if (!file) {
  console.error('usage: npm run persisted:import -- <manifest.json>');
  process.exit(2);
}
const config = loadConfig();
const log = createLogger(config.logLevel);
const db = await openDatabase(config, log, { entities: domainEntities });
let failed = false;
// signal-exit (loaded by a dependency) rewrites process.exitCode on the way out: a failed import's code is
// set again in the last 'exit' listener, as in bench.ts.
process.on('exit', () => {
  if (failed) process.exitCode = 1;
});
try {
  // The import only writes rows (and its audit entry): no pubsub, jobs or agent channels to start.
  const runtime = { config, log, orm: db.orm, databaseUrl: db.url, clock: systemClock } as Partial<Runtime> as Runtime;
  const ctx = RequestContext.system(runtime, 'persisted:import');
  const result = await importTrustedDocuments(ctx, JSON.parse(fs.readFileSync(file, 'utf8')));
  console.log(`${result.documents} trusted documents in ${file}, ${result.added} new`);
} catch (error) {
  console.error(error instanceof AppError ? `${error.code}: ${error.message}${error.details ? `\n${JSON.stringify(error.details, null, 2)}` : ''}` : (error as Error).message);
  failed = true;
} finally {
  await db.close();
}
