import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { MikroORM } from '@mikro-orm/postgresql';
import { projectRoot } from '../paths.js';

export const defaultMigrationsDir = path.join(projectRoot, 'src', 'migrations');

export class MigrationChecksumError extends Error {}

/**
 * Applies pending migrations and keeps a SHA-256 of each applied migration's source file. MikroORM
 * records names only; a migration edited after it ran would otherwise pass unnoticed (spec,
 * Versioning 3), so start-up refuses when a recorded checksum no longer matches the file.
 */
export async function migrate(orm: MikroORM, options: { apply: boolean; migrationsDir?: string }): Promise<{ applied: string[] }> {
  const dir = options.migrationsDir ?? defaultMigrationsDir;
  const connection = orm.em.getConnection();
  await connection.execute(
    `create table if not exists service_migration_checksum (name varchar(255) primary key, sha256 char(64) not null, applied_at timestamptz not null default now())`,
  );
  const migrator = orm.getMigrator();
  const executed = (await migrator.getExecutedMigrations()).map((m) => m.name);
  await verifyChecksums(orm, executed, dir);
  const applied = options.apply ? (await migrator.up()).map((m) => m.name) : [];
  for (const name of applied) {
    await connection.execute(`insert into service_migration_checksum (name, sha256) values (?, ?) on conflict (name) do update set sha256 = excluded.sha256`, [
      name,
      checksum(dir, name),
    ]);
  }
  return { applied };
}

async function verifyChecksums(orm: MikroORM, executed: string[], dir: string): Promise<void> {
  const connection = orm.em.getConnection();
  const rows = (await connection.execute(`select name, sha256 from service_migration_checksum`)) as { name: string; sha256: string }[];
  const recorded = new Map(rows.map((r) => [r.name, r.sha256]));
  const changed: string[] = [];
  for (const name of executed) {
    const actual = checksum(dir, name);
    const expected = recorded.get(name);
    if (expected === undefined) {
      await connection.execute(`insert into service_migration_checksum (name, sha256) values (?, ?)`, [name, actual]);
    } else if (expected !== actual) {
      changed.push(name);
    }
  }
  if (changed.length > 0) {
    throw new MigrationChecksumError(
      `Applied migration${changed.length > 1 ? 's' : ''} changed since ${changed.length > 1 ? 'they were' : 'it was'} applied: ${changed.join(', ')}. ` +
        'Restore the original file (or roll back to the SERVICE_VERSION that applied it) and add a new migration instead.',
    );
  }
}

function checksum(dir: string, name: string): string {
  const file = path.join(dir, `${name}.ts`);
  if (!fs.existsSync(file)) throw new MigrationChecksumError(`Applied migration ${name} has no file at ${file}`);
  const source = fs.readFileSync(file, 'utf8').replace(/\r\n/g, '\n');
  return crypto.createHash('sha256').update(source).digest('hex');
}
