import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config.js';
import { startServer, type RunningServer, type StartOptions } from '../../src/server.js';
import { createTestDatabase } from './database.js';

export const ADMIN_EMAIL = 'admin@example.test';
export const ADMIN_PASSWORD = 'correct horse battery staple';

export interface TestApp {
  url: string;
  server: RunningServer;
  databaseUrl: string;
  /**
   * How many GraphQL subscriptions to `topic` have reached this instance's pubsub: a subscription
   * counted here receives everything published from then on (graphql-ws acknowledges no subscribe).
   */
  subscriptions(topic: string): number;
  /** stops the server and drops the database (unless it was borrowed from another app) */
  stop(): Promise<void>;
}

/**
 * A real server on a random loopback port over a fresh database of its own. Pass `databaseUrl`
 * to start a second instance on another app's database.
 */
export async function createTestApp(options: { env?: Record<string, string>; databaseUrl?: string; start?: StartOptions } = {}): Promise<TestApp> {
  const db = options.databaseUrl ? { url: options.databaseUrl, drop: async () => {} } : await createTestDatabase();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rmm-app-'));
  const config = loadConfig({
    NODE_ENV: 'test',
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: db.url,
    DATA_DIR: dataDir,
    SECRET_ENCRYPTION_KEY: 'test-encryption-key-0123456789abcdef',
    JWT_SECRET: 'test-jwt-secret-0123456789abcdefghij',
    ADMIN_EMAIL,
    ADMIN_PASSWORD,
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...options.env,
  });
  const server = await startServer(config, { outboxPollMs: 500, jobsProcessEveryMs: 500, ...options.start });
  const subscribed = new Map<string, number>();
  const { pubsub } = server.runtime;
  const subscribe = pubsub.subscribe.bind(pubsub);
  pubsub.subscribe = (topic) => {
    subscribed.set(topic, (subscribed.get(topic) ?? 0) + 1);
    return subscribe(topic);
  };
  return {
    url: server.url,
    server,
    databaseUrl: db.url,
    subscriptions: (topic) => subscribed.get(topic) ?? 0,
    async stop() {
      await server.stop();
      await db.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/**
 * Two instances on one database for a file's tests, as a fleet behind a load balancer runs: started
 * before them and stopped after (Jest hooks registered here). Call at the top level of the file.
 */
export function useInstancePair(): { a: TestApp; b: TestApp } {
  const pair = {} as { a: TestApp; b: TestApp };
  beforeAll(async () => {
    pair.a = await createTestApp();
    pair.b = await createTestApp({ databaseUrl: pair.a.databaseUrl });
  });
  afterAll(async () => {
    await pair.b?.server.stop();
    await pair.a?.stop();
  });
  return pair;
}
