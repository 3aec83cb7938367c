import 'reflect-metadata';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { GraphQLSchema } from 'graphql';
import { installDenialLog } from './auth/policy.js';
import type { Config } from './config.js';
import { openDatabase } from './db/orm.js';
import { notFound } from './errors.js';
import { OutboxDispatcher } from './events/dispatcher.js';
import { PgPubSub } from './events/pubsub.js';
import type { EventSubscriber } from './events/types.js';
import { buildGraphqlSchema } from './graphql/schema.js';
import { startGraphql } from './graphql/server.js';
import { agentChannelRoute, refuseUpgrade } from './http/agent-channel.js';
import { domainEntities, domainJobs, domainSubscribers, installDomains } from './domains.js';
import { createHttpApp } from './http/app.js';
import { JobQueue } from './jobs/agenda.js';
import type { JobDefinition } from './jobs/types.js';
import { createLogger, type Logger } from './logger.js';
import { resolveTunables, systemClock, type Clock, type Runtime, type TunableOverrides } from './runtime.js';
import { SecretBox } from './secrets.js';
import { AgentChannelHub } from './services/devices/agent-channel.js';
import { recordDenied } from './services/audit/record.js';
import { bootstrapIdentity } from './services/identity/bootstrap.js';
import { WebhookDeliveryWorker } from './services/webhooks/webhook-worker.js';

export interface StartOptions {
  log?: Logger;
  /** where migration sources are read for checksums (tests point this at a copy) */
  migrationsDir?: string;
  /** extra consumers and jobs, for tests */
  subscribers?: EventSubscriber[];
  jobs?: JobDefinition<never>[];
  outboxPollMs?: number;
  jobsProcessEveryMs?: number;
  /** default: the system clock */
  clock?: Clock;
  /** default: DEFAULT_TUNABLES */
  tunables?: TunableOverrides;
}

export interface RunningServer {
  url: string;
  runtime: Runtime;
  httpServer: http.Server;
  /** the GraphQL schema it serves (the bench executes it without the HTTP layers, as a ceiling) */
  schema: GraphQLSchema;
  stop(): Promise<void>;
}

const DRAIN_TIMEOUT_MS = 10_000;

/** Boots one server instance: database (embedded or DATABASE_URL), migrations, jobs, events, HTTP + GraphQL + WebSocket on one port. */
export async function startServer(config: Config, options: StartOptions = {}): Promise<RunningServer> {
  const log = options.log ?? createLogger(config.logLevel);
  installDomains();
  installDenialLog(recordDenied);
  const database = await openDatabase(config, log, { entities: domainEntities, migrationsDir: options.migrationsDir });
  const closers: (() => Promise<void>)[] = [() => database.close()];
  const closeAll = async () => {
    for (const close of closers.reverse()) await close().catch((error: Error) => log.error({ err: error.message }, 'shutdown step failed'));
  };
  try {
    const pubsub = new PgPubSub(database.orm, database.url, log);
    await pubsub.start();
    closers.push(() => pubsub.close());

    let runtime: Runtime | null = null;
    const jobs = await JobQueue.create({
      databaseUrl: database.url,
      mongodbUrl: config.mongodbUrl,
      definitions: [...domainJobs, ...(options.jobs ?? [])],
      runtime: () => runtime!,
      log,
      processEveryMs: options.jobsProcessEveryMs,
    });
    const agentChannels = new AgentChannelHub(() => runtime!);
    const webhookDeliveries = new WebhookDeliveryWorker(() => runtime!);
    runtime = {
      config,
      log,
      orm: database.orm,
      databaseUrl: database.url,
      secrets: new SecretBox(config.encryptionKey),
      pubsub,
      jobs,
      agentChannels,
      webhookDeliveries,
      clock: options.clock ?? systemClock,
      tunables: resolveTunables(options.tunables),
    };

    await bootstrapIdentity(runtime);

    await jobs.start();
    closers.push(() => jobs.stop());
    await webhookDeliveries.start();
    // After the dispatcher (which wakes it) and before the job store closes (it schedules retries): the job
    // queue stops taking jobs first, so the retries the worker hands back on stop are left for another instance.
    closers.push(async () => {
      await jobs.stopProcessing();
      await webhookDeliveries.stop();
    });

    const dispatcher = new OutboxDispatcher(runtime, [...domainSubscribers, ...(options.subscribers ?? [])], options.outboxPollMs ?? 2000);
    await dispatcher.start(database.url);
    closers.push(() => dispatcher.stop());

    const httpServer = http.createServer();
    const schema = await buildGraphqlSchema(pubsub);
    const graphql = await startGraphql(runtime, httpServer, schema);
    httpServer.on('request', createHttpApp(runtime, graphql.middleware));
    closers.push(() => graphql.stop());
    // WebSocket upgrades by path: GraphQL subscriptions (graphql-ws) and the agents' channels.
    const agentChannel = agentChannelRoute(runtime, agentChannels);
    httpServer.on('upgrade', (req, socket, head) => {
      const pathname = (req.url ?? '/').split('?')[0]!;
      if (pathname === '/graphql') graphql.upgrade(req, socket, head);
      else if (agentChannel.matches(pathname)) agentChannel.handle(req, socket, head);
      else refuseUpgrade(socket, notFound(`Route ${req.method} ${pathname}`));
    });

    await new Promise<void>((resolve, reject) => {
      httpServer.once('error', reject);
      httpServer.listen(config.port, config.host, () => resolve());
    });
    closers.push(() => closeHttp(httpServer));
    // First of all (closers run last-in first-out): agents are told to reconnect elsewhere, and the
    // HTTP server then has no channel left to wait for.
    agentChannels.start();
    closers.push(async () => {
      await agentChannels.stop();
      agentChannel.close();
    });
    const { port } = httpServer.address() as AddressInfo;
    const url = `http://${config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host}:${port}`;
    log.info({ url, version: config.serviceVersion, database: config.databaseUrl ? 'DATABASE_URL' : 'embedded', jobs: config.mongodbUrl ? 'mongodb' : 'postgresql' }, 'server listening');

    let stopping: Promise<void> | null = null;
    return {
      url,
      runtime,
      httpServer,
      schema,
      // Stop accepting, drain HTTP and WebSocket, stop jobs and the dispatcher, close the ORM, stop the embedded database.
      stop: () => (stopping ??= closeAll()),
    };
  } catch (error) {
    await closeAll();
    throw error;
  }
}

async function closeHttp(server: http.Server): Promise<void> {
  const timer = setTimeout(() => server.closeAllConnections(), DRAIN_TIMEOUT_MS);
  server.closeIdleConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  clearTimeout(timer);
}
