import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../src/config.js';

const dataDir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'rmm-config-'));

test('defaults need no environment: secrets are generated once and kept in DATA_DIR', () => {
  const dir = dataDir();
  const first = loadConfig({ DATA_DIR: dir });
  expect(first.port).toBe(3000);
  expect(first.publicUrl).toBe('http://localhost:3000');
  expect(first.databaseUrl).toBeNull();
  expect(first.autoMigrate).toBe(true);
  expect(first.jwtSecret).not.toBe(first.encryptionKey);
  const second = loadConfig({ DATA_DIR: dir });
  expect(second.jwtSecret).toBe(first.jwtSecret);
  expect(second.encryptionKey).toBe(first.encryptionKey);
});

test('in production a missing secret stops start-up, naming the variable', () => {
  expect(() => loadConfig({ NODE_ENV: 'production', DATA_DIR: dataDir(), JWT_SECRET: 'x'.repeat(40) })).toThrow(
    /SECRET_ENCRYPTION_KEY or APP_ENCRYPTION_KEY: required when NODE_ENV=production/,
  );
});

test('an invalid value is refused with the variable named', () => {
  expect(() => loadConfig({ DATA_DIR: dataDir(), PORT: 'eighty' })).toThrow(/PORT:/);
  expect(() => loadConfig({ DATA_DIR: dataDir(), AUTO_MIGRATE: 'maybe' })).toThrow(/AUTO_MIGRATE: must be true or false/);
  expect(() => loadConfig({ DATA_DIR: dataDir(), DATABASE_URL: 'mysql://x' })).toThrow(/DATABASE_URL: must be a postgres:\/\/ URL/);
});

test('the public URL follows the spec order PUBLIC_URL, PUBLIC_APP_URL, DASHBOARD_URL', () => {
  const dir = dataDir();
  expect(loadConfig({ DATA_DIR: dir, DASHBOARD_URL: 'https://c.test', PUBLIC_APP_URL: 'https://b.test/' }).publicUrl).toBe('https://b.test');
  expect(loadConfig({ DATA_DIR: dir, DASHBOARD_URL: 'https://c.test', PUBLIC_URL: 'https://a.test' }).publicUrl).toBe('https://a.test');
  expect(loadConfig({ DATA_DIR: dir, APP_ENCRYPTION_KEY: 'k'.repeat(32) }).encryptionKey).toBe('k'.repeat(32));
});
