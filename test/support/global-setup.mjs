// Jest loads global setup outside its ESM transform, so this file is plain JS and uses the build
// that `pretest` produced. One PostgreSQL server serves the run; the migrations run once, into a
// template database that each test file clones (CREATE DATABASE … TEMPLATE), so adding migrations
// and test files does not add a migration run per file.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { loadConfig } from '../../dist/src/config.js';
import { startEmbeddedDatabase } from '../../dist/src/db/embedded.js';
import { openDatabase } from '../../dist/src/db/orm.js';
import { createLogger } from '../../dist/src/logger.js';
import { domainEntities } from '../../dist/src/domains.js';

export default async function globalSetup() {
  let adminUrl = process.env.DATABASE_URL;
  if (!adminUrl) {
    const dataDir = path.join(os.tmpdir(), `rmm-test-${process.pid}-${crypto.randomBytes(4).toString('hex')}`);
    const db = await startEmbeddedDatabase({ dataDir, persistent: false });
    adminUrl = db.url;
    globalThis.__testDatabase = db;
  }
  process.env.TEST_DATABASE_ADMIN_URL = adminUrl;
  process.env.TEST_DATABASE_TEMPLATE = await migratedTemplate(adminUrl);
}

async function migratedTemplate(adminUrl) {
  const name = `rmm_template_${crypto.randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rmm-template-'));
  try {
    const config = loadConfig({
      NODE_ENV: 'test',
      DATABASE_URL: url.toString(),
      DATA_DIR: dataDir,
      SECRET_ENCRYPTION_KEY: 'test-encryption-key-0123456789abcdef',
      JWT_SECRET: 'test-jwt-secret-0123456789abcdefghij',
      LOG_LEVEL: 'silent',
    });
    const db = await openDatabase({ ...config, autoMigrate: true }, createLogger('silent'), { entities: domainEntities });
    await db.close();
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
  globalThis.__testTemplate = { adminUrl, name };
  return name;
}
