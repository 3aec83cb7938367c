// Jest loads global setup outside its ESM transform, so this file is plain JS and uses the build
// that `pretest` produced. One PostgreSQL server serves the run; each test file makes its own database.
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import { startEmbeddedDatabase } from '../../dist/src/db/embedded.js';

export default async function globalSetup() {
  if (process.env.DATABASE_URL) {
    process.env.TEST_DATABASE_ADMIN_URL = process.env.DATABASE_URL;
    return;
  }
  const dataDir = path.join(os.tmpdir(), `rmm-test-${process.pid}-${crypto.randomBytes(4).toString('hex')}`);
  const db = await startEmbeddedDatabase({ dataDir, persistent: false });
  process.env.TEST_DATABASE_ADMIN_URL = db.url;
  globalThis.__testDatabase = db;
}
