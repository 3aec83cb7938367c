import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { defaultMigrationsDir } from '../src/db/migrate.js';
import { migrations } from '../src/migrations/index.js';
import { createTestApp, type TestApp } from './support/app.js';
import { createTestDatabase } from './support/database.js';
import { sql } from './support/db.js';

let app: TestApp;
beforeAll(async () => {
  app = await createTestApp();
});
afterAll(async () => {
  await app.stop();
});

test('the committed migrations produce exactly the schema the entities describe', async () => {
  const diff = await app.server.runtime.orm.schema.getUpdateSchemaSQL({ wrap: false, safe: false, dropTables: false });
  expect(diff.trim()).toBe('');
});

test('every applied migration has its SHA-256 recorded', async () => {
  const rows = await sql(app, 'select name, sha256 from service_migration_checksum order by name');
  expect(rows.map((r) => r.name)).toEqual(migrations.map((m) => m.name));
  for (const row of rows) expect(row.sha256).toMatch(/^[0-9a-f]{64}$/);
});

test('start-up refuses when an applied migration file has changed, naming it', async () => {
  const db = await createTestDatabase();
  const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'rmm-migrations-'));
  try {
    const first = await createTestApp({ databaseUrl: db.url });
    await first.stop();

    fs.cpSync(defaultMigrationsDir, copy, { recursive: true });
    const edited = migrations[0]!.name;
    fs.appendFileSync(path.join(copy, `${edited}.ts`), '\n// an innocent-looking edit\n');

    await expect(createTestApp({ databaseUrl: db.url, start: { migrationsDir: copy } })).rejects.toThrow(
      new RegExp(`Applied migration changed since it was applied: ${edited}`),
    );
    // The unmodified files still start fine: the refusal was about the edit, nothing else.
    const again = await createTestApp({ databaseUrl: db.url });
    await again.stop();
  } finally {
    fs.rmSync(copy, { recursive: true, force: true });
    await db.drop();
  }
});
