import { Agenda, type Job } from 'agenda';
import { PostgresBackend } from '@agendajs/postgres-backend';
import { MongoBackend } from '@agendajs/mongo-backend';
import { MongoClient } from 'mongodb';
import pg from 'pg';
import type { Logger } from '../logger.js';
import type { JobScheduler, Runtime } from '../runtime.js';
import type { JobDefinition } from './types.js';

export class JobStoreError extends Error {}

const DEFAULT_LOCK_LIFETIME_MS = 60_000;

/**
 * The only place that knows Agenda and its backend: PostgreSQL on the service's own database by
 * default (LISTEN/NOTIFY wakes workers at once), MongoDB when MONGODB_URL is set. The Mongo
 * backend has no notifications, so it polls every second instead.
 */
export class JobQueue implements JobScheduler {
  private constructor(
    private readonly agenda: Agenda,
    private readonly log: Logger,
    private readonly pingStore: () => Promise<void>,
    private readonly closeStore: () => Promise<void>,
    private readonly recurring: JobDefinition<never>[],
    private readonly runtime: () => Runtime,
    /** runs the store's start-up (its schema creation) so that two instances starting together do not race */
    private readonly oneAtATime: (start: () => Promise<void>) => Promise<void>,
  ) {}

  static async create(options: {
    databaseUrl: string;
    mongodbUrl: string | null;
    definitions: JobDefinition<never>[];
    runtime: () => Runtime;
    log: Logger;
    processEveryMs?: number;
  }): Promise<JobQueue> {
    const { log } = options;
    // Agenda keeps the last definition of a name: two domains claiming one name is a programming error.
    const names = new Set<string>();
    for (const def of options.definitions) {
      if (names.has(def.name)) throw new Error(`Duplicate job definition: ${def.name}`);
      names.add(def.name);
    }
    let backend: PostgresBackend | MongoBackend;
    let pingStore: () => Promise<void>;
    let closeStore = async () => {};
    let oneAtATime = (start: () => Promise<void>) => start();
    let processEvery = options.processEveryMs ?? 5000;
    if (options.mongodbUrl) {
      // Agenda's own Mongo connect never settles when the server is down: connect first, briefly.
      const client = new MongoClient(options.mongodbUrl, { serverSelectionTimeoutMS: 5000 });
      try {
        await client.connect();
        await client.db().command({ ping: 1 });
      } catch (error) {
        await client.close().catch(() => {});
        throw new JobStoreError(`Cannot connect to MongoDB at MONGODB_URL (${(error as Error).message}). Unset MONGODB_URL to keep jobs in PostgreSQL.`);
      }
      backend = new MongoBackend({ mongo: client.db(), collection: 'agenda_jobs' });
      pingStore = async () => {
        await client.db().command({ ping: 1 });
      };
      closeStore = () => client.close();
      processEvery = Math.min(processEvery, 1000);
    } else {
      const pool = new pg.Pool({ connectionString: options.databaseUrl, max: 10 });
      // A dropped connection must be logged and retried, never crash the process as an unhandled 'error'.
      pool.on('error', (error) => log.warn({ err: error.message }, 'job store connection error'));
      const pgBackend = new PostgresBackend({ pool, tableName: 'agenda_jobs', channelName: 'agenda_jobs' });
      (pgBackend.notificationChannel as unknown as NodeJS.EventEmitter | undefined)?.on('error', (error: Error) =>
        log.warn({ err: error.message }, 'job notification channel error; reconnecting'),
      );
      backend = pgBackend;
      pingStore = async () => {
        await pool.query('select 1');
      };
      closeStore = () => pool.end();
      // The backend creates its table, trigger and function on start: two instances doing so at once
      // fail with "tuple concurrently updated", so a session advisory lock takes them in turn.
      oneAtATime = async (start) => {
        const holder = await pool.connect();
        try {
          await holder.query(`select pg_advisory_lock(hashtext('agenda_jobs schema'))`);
          await start();
        } finally {
          await holder.query(`select pg_advisory_unlock(hashtext('agenda_jobs schema'))`).finally(() => holder.release());
        }
      };
    }
    const agenda = new Agenda({ backend, processEvery, defaultLockLifetime: DEFAULT_LOCK_LIFETIME_MS, maxConcurrency: 50 });
    agenda.on('error', (error: Error) => log.error({ err: error.message }, 'job store error'));
    agenda.on('fail', (error: Error | string, job: { attrs: { name: string; _id?: unknown; id?: unknown } }) =>
      log.error({ job: job.attrs.name, err: typeof error === 'string' ? error : error.message }, 'job failed'),
    );
    for (const def of options.definitions) {
      agenda.define(
        def.name,
        async (job: Job<unknown>) => {
          await def.handler(options.runtime(), job.attrs.data as never);
        },
        { lockLifetime: def.lockLifetimeMs ?? DEFAULT_LOCK_LIFETIME_MS, concurrency: def.concurrency ?? 5 },
      );
    }
    return new JobQueue(agenda, log, pingStore, closeStore, options.definitions.filter((def) => def.every), options.runtime, oneAtATime);
  }

  async start(): Promise<void> {
    await this.oneAtATime(() => this.agenda.start());
    // One stored record per name, so every instance registering it still runs it once per interval.
    for (const def of this.recurring) await this.agenda.every(typeof def.every === 'function' ? def.every(this.runtime().config) : def.every!, def.name);
  }

  /** Runs `name` at `when` (now when omitted) on whichever instance picks it up first. */
  async schedule(name: string, data: Record<string, unknown>, when: Date = new Date()): Promise<void> {
    await this.agenda.schedule(when, name, data);
  }

  async ping(): Promise<void> {
    await this.pingStore();
  }

  /**
   * Stops taking jobs and unlocks those taken but not started, so another instance runs them; the jobs
   * under way finish, and jobs can still be scheduled (for another instance, or this one once restarted).
   */
  async stopProcessing(): Promise<void> {
    await this.agenda.stop(false);
  }

  /** Stops taking jobs (when still taking them) and closes the store. */
  async stop(): Promise<void> {
    await this.agenda.stop(false);
    await this.closeStore();
    this.log.debug('job queue stopped');
  }
}
