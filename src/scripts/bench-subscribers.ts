/**
 * The bench's graphql-ws subscriber fleet: `count` clients, each on its own WebSocket with its own
 * subscription, in a child process so their event loop, CPU and memory are not the server's (the same
 * way bench-load.ts keeps the HTTP load generator apart). Imported, the module exports
 * `subscriberFleet`; forked by it, it holds the fleet and reports arrivals over IPC.
 *
 * A message is keyed `<deviceId>:<status>` (of the subscription field's value); its arrival times are
 * epoch milliseconds (`performance.timeOrigin + performance.now()`), comparable with the parent's.
 */
import { fork } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';

interface FleetOptions {
  /** the graphql-ws endpoint */
  url: string;
  count: number;
  /** subscriber i connects with connectionParams[i % length] */
  connectionParams: Record<string, string>[];
  query: string;
  variables?: Record<string, unknown>;
  /** connections opened at a time */
  concurrency: number;
}

export interface FleetReport {
  /** subscribers whose connection was acknowledged and whose subscribe was sent */
  connected: number;
  connectMs: number;
  /** error results, error messages and closes, so far */
  errors: number;
  firstError: string | null;
}

type Arrivals = { times: number[] } | { missing: number };
type FromChild = { report: FleetReport } | { key: string; arrivals: Arrivals };
type ToChild = { open: FleetOptions } | { wait: string; timeoutMs: number } | { close: true };

export interface Fleet {
  report: FleetReport;
  /** every subscriber's arrival time of `key`, or how many never had it within `timeoutMs` */
  arrivals(key: string, timeoutMs: number): Promise<Arrivals>;
  /** disposes every client; answers the final report */
  close(): Promise<FleetReport>;
}

const CHILD_FLAG = 'BENCH_SUBSCRIBERS_CHILD';

/** Forks the fleet and resolves once every subscriber has connected and subscribed (or failed to). */
export function subscriberFleet(options: FleetOptions): Promise<Fleet> {
  const child = fork(fileURLToPath(import.meta.url), [], { env: { ...process.env, [CHILD_FLAG]: '1' }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const waiting = new Map<string, (arrivals: Arrivals) => void>();
  let onReport: ((report: FleetReport) => void) | null = null;
  let exited: Error | null = null;
  const send = (message: ToChild) => child.send(message);
  return new Promise((resolve, reject) => {
    child.on('message', (message: FromChild) => {
      if ('report' in message) return onReport?.(message.report);
      waiting.get(message.key)?.(message.arrivals);
      waiting.delete(message.key);
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      exited = new Error(`subscriber fleet exited with ${code}`);
      reject(exited);
    });
    onReport = (report) =>
      resolve({
        report,
        arrivals: (key, timeoutMs) => {
          if (exited) return Promise.reject(exited);
          return new Promise((done) => {
            waiting.set(key, done);
            send({ wait: key, timeoutMs });
          });
        },
        close: () =>
          new Promise((done) => {
            onReport = (final) => {
              child.disconnect();
              done(final);
            };
            send({ close: true });
          }),
      });
    send({ open: options });
  });
}

if (process.env[CHILD_FLAG] === '1') holdFleet();

function holdFleet(): void {
  const now = () => performance.timeOrigin + performance.now();
  const clients: Client[] = [];
  let count = 0;
  const report: FleetReport = { connected: 0, connectMs: 0, errors: 0, firstError: null };
  const failed = (what: unknown) => {
    report.errors++;
    report.firstError ??= typeof what === 'string' ? what : JSON.stringify(what);
  };
  const arrived = new Map<string, number[]>();
  const waiters = new Map<string, () => void>();
  const send = (message: FromChild) => process.send!(message);

  process.on('message', async (message: ToChild) => {
    if ('open' in message) {
      const options = message.open;
      count = options.count;
      const started = now();
      let next = 0;
      const one = async (i: number) => {
        const client = createClient({ url: options.url, webSocketImpl: WebSocket, connectionParams: options.connectionParams[i % options.connectionParams.length], retryAttempts: 0 });
        clients.push(client);
        await new Promise<void>((resolve) => {
          const offConnected = client.on('connected', () => {
            report.connected++;
            resolve();
          });
          client.on('closed', (event) => {
            offConnected();
            const { code, reason } = event as { code?: number; reason?: string };
            if (code !== 1000) failed(`closed ${code} ${reason ?? ''}`);
            resolve();
          });
          client.subscribe(
            { query: options.query, variables: options.variables },
            {
              next: ({ data, errors }) => {
                if (errors?.length) return failed(errors);
                const value = Object.values(data ?? {})[0] as { deviceId?: string; status?: string } | undefined;
                const key = `${value?.deviceId}:${value?.status}`;
                const times = arrived.get(key) ?? [];
                times.push(now());
                arrived.set(key, times);
                if (times.length === count) waiters.get(key)?.();
              },
              error: failed,
              complete: () => {},
            },
          );
        });
      };
      await Promise.all(
        Array.from({ length: options.concurrency }, async () => {
          while (next < options.count) await one(next++);
        }),
      );
      report.connectMs = Math.round(now() - started);
      send({ report });
    } else if ('wait' in message) {
      const key = message.wait;
      const answer = () => {
        clearTimeout(timer);
        waiters.delete(key);
        const times = arrived.get(key) ?? [];
        arrived.delete(key);
        send({ key, arrivals: times.length >= count ? { times } : { missing: count - times.length } });
      };
      const timer = setTimeout(answer, message.timeoutMs);
      if ((arrived.get(key)?.length ?? 0) >= count) answer();
      else waiters.set(key, answer);
    } else {
      await Promise.all(clients.map((client) => client.dispose()));
      send({ report });
    }
  });
}
