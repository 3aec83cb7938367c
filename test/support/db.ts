import { AsyncLocalStorage } from 'node:async_hooks';
import type { TestApp } from './app.js';
import { createTestDatabase } from './database.js';
import { eventually } from './eventually.js';

/** Raw SQL on the app's database, on a fresh connection of its pool. */
export async function sql<T = any>(app: TestApp, query: string, params: unknown[] = []): Promise<T[]> {
  return (await app.server.runtime.orm.em.fork().getConnection().execute(query, params)) as T[];
}

/**
 * The audit rows written about one resource, oldest first, with the columns a test compares
 * (`successOnly` leaves out refusals such as `access.denied`).
 */
export async function auditOf(app: TestApp, resourceId: string, columns: readonly string[], { successOnly = false } = {}): Promise<any[]> {
  return sql(app, `select ${columns.join(', ')} from audit_log where resource_id = ?${successOnly ? ` and result = 'success'` : ''} order by seq`, [resourceId]);
}

/**
 * Waits until the outbox has handed the event to every subscriber: they run in the transaction that
 * sets `dispatched_at`, so whatever they write (webhook deliveries, …) is committed by then.
 */
export async function dispatched(app: TestApp, eventId: string, timeoutMs = 15_000): Promise<void> {
  await eventually(async () => (await sql(app, 'select dispatched_at from outbox_event where id = ?', [eventId]))[0]?.dispatched_at != null, timeoutMs, `dispatch of event ${eventId}`);
}

/** Waits until no job called `name` is due, queued or running: everything scheduled so far has finished. */
export async function jobsFinished(app: TestApp, name: string, timeoutMs = 15_000): Promise<void> {
  await eventually(
    async () => (await sql(app, 'select count(*)::int as n from agenda_jobs where name = ? and (next_run_at is not null or locked_at is not null or last_finished_at is null)', [name]))[0].n === 0,
    timeoutMs,
    `every ${name} job to finish`,
  );
}

/** Waits for a due-work tick (the one recurring job behind every domain's due work) that started after now to finish. */
export const dueWorkTicked = (app: TestApp) => aRunHasFinished(app, 'due-work.tick');

/**
 * Waits for a run of the recurring job `name` that started after this call and has finished: whatever
 * the test changed before calling was there for that run to see.
 */
export async function aRunHasFinished(app: TestApp, name: string, timeoutMs = 15_000): Promise<void> {
  const since = new Date();
  await eventually(
    async () => (await sql(app, 'select 1 from agenda_jobs where name = ? and last_run_at > ? and last_finished_at >= last_run_at', [name, since])).length === 1,
    timeoutMs,
    `a run of ${name} that started after ${since.toISOString()}`,
  );
}

/**
 * A database for the test file's instances to share (`createTestApp({ databaseUrl: db.url })`):
 * created before its tests and dropped after them (Jest hooks registered here). Call at the top level
 * of the file; `url` is set once `beforeAll` has run.
 */
export function useTestDatabase(): { url: string } {
  const db = { url: '', drop: async () => {} };
  beforeAll(async () => {
    Object.assign(db, await createTestDatabase());
  });
  afterAll(async () => {
    await db.drop();
  });
  return db;
}

/**
 * What `work` answers, and how many SQL statements naming `table` the HTTP requests it made sent
 * (through the ORM's connection, where the services' reads go): for checking that a list's relation
 * fields cost a fixed number of statements, not some per row. Only the requests' own statements count:
 * each request arriving meanwhile is handled inside a scope of this call (AsyncLocalStorage, entered
 * where the HTTP server hands it on), and a statement counts when it is sent from within that scope, so
 * the instance's background work (job ticks, the outbox dispatcher, the webhook worker) never does.
 */
export async function statementsOn<T>(app: TestApp, table: string, work: () => Promise<T>): Promise<{ result: T; statements: number }> {
  const connection = app.server.runtime.orm.em.getDriver().getConnection() as unknown as { execute: (query: unknown, ...rest: unknown[]) => Promise<unknown> };
  const execute = connection.execute;
  const { httpServer } = app.server;
  const handlers = httpServer.listeners('request') as ((...args: unknown[]) => void)[];
  const scope = new AsyncLocalStorage<object>();
  const mine = {};
  const scoped = handlers.map((handler) => (...args: unknown[]) => scope.run(mine, () => handler(...args)));
  const names = new RegExp(`\\b${table}\\b`);
  let statements = 0;
  connection.execute = function (this: unknown, query: unknown, ...rest: unknown[]) {
    if (scope.getStore() === mine && names.test(String(typeof query === 'object' && query && 'sql' in query ? (query as { sql: string }).sql : query))) statements++;
    return execute.call(this, query, ...rest);
  };
  httpServer.removeAllListeners('request');
  for (const handler of scoped) httpServer.on('request', handler);
  try {
    return { result: await work(), statements };
  } finally {
    connection.execute = execute;
    httpServer.removeAllListeners('request');
    for (const handler of handlers) httpServer.on('request', handler);
  }
}
