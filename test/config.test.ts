import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config.js';

const dataDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'rmm-config-'));
/** As `npm run dev` runs: no secrets needed. */
const dev = (env: Record<string, string>) => loadConfig({ NODE_ENV: 'development', ...env });

test('production is the default: no explorer unless asked, and secrets generated once and kept in DATA_DIR (npm start needs nothing)', () => {
  const dir = dataDir();
  const config = loadConfig({ DATA_DIR: dir });
  expect([config.nodeEnv, config.isProduction, config.graphql.explorer]).toEqual(['production', true, false]);
  expect(loadConfig({ DATA_DIR: dir }).jwtSecret).toBe(config.jwtSecret);
  expect(loadConfig({ DATA_DIR: dir, GRAPHQL_EXPLORER: 'true' }).graphql.explorer).toBe(true);
});

test('in development (npm run dev) nothing else is needed: secrets are generated once and kept in DATA_DIR', () => {
  const dir = dataDir();
  const first = dev({ DATA_DIR: dir });
  expect(first.port).toBe(3000);
  expect(first.publicUrl).toBe('http://localhost:3000');
  expect(first.databaseUrl).toBeNull();
  expect(first.autoMigrate).toBe(true);
  expect(first.jwtSecret).not.toBe(first.encryptionKey);
  const second = dev({ DATA_DIR: dir });
  expect(second.jwtSecret).toBe(first.jwtSecret);
  expect(second.encryptionKey).toBe(first.encryptionKey);
});

test('a deployment that says NODE_ENV=production must give its secrets: a missing one stops start-up, naming the variable', () => {
  expect(() => loadConfig({ NODE_ENV: 'production', DATA_DIR: dataDir(), JWT_SECRET: 'x'.repeat(40) })).toThrow(
    /SECRET_ENCRYPTION_KEY or APP_ENCRYPTION_KEY: required when NODE_ENV=production/,
  );
});

test('an invalid value is refused with the variable named', () => {
  expect(() => loadConfig({ DATA_DIR: dataDir(), PORT: 'eighty' })).toThrow(/PORT:/);
  expect(() => loadConfig({ DATA_DIR: dataDir(), AUTO_MIGRATE: 'maybe' })).toThrow(/AUTO_MIGRATE: must be true or false/);
  expect(() => loadConfig({ DATA_DIR: dataDir(), DATABASE_URL: 'mysql://x' })).toThrow(/DATABASE_URL: must be a postgres:\/\/ URL/);
  expect(() => loadConfig({ DATA_DIR: dataDir(), GRAPHQL_EXPLORER: 'maybe' })).toThrow(/GRAPHQL_EXPLORER: must be true or false/);
});

test('the public URL follows the spec order PUBLIC_URL, PUBLIC_APP_URL, DASHBOARD_URL', () => {
  const dir = dataDir();
  expect(dev({ DATA_DIR: dir, DASHBOARD_URL: 'https://c.test', PUBLIC_APP_URL: 'https://b.test/' }).publicUrl).toBe('https://b.test');
  expect(dev({ DATA_DIR: dir, DASHBOARD_URL: 'https://c.test', PUBLIC_URL: 'https://a.test' }).publicUrl).toBe('https://a.test');
  expect(dev({ DATA_DIR: dir, APP_ENCRYPTION_KEY: 'k'.repeat(32) }).encryptionKey).toBe('k'.repeat(32));
});
