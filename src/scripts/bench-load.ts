/**
 * The bench's HTTP load generator: `connections` keep-alive connections, each sending its next
 * request as soon as the previous answer has been read (a closed loop), in a child process so the
 * client shares neither the event loop nor the CPU accounting of the server it measures. The same
 * generator drives the plain `node:http` ceiling and the real routes, so the two figures differ
 * only in the server. Imported, the module exports `runLoad` (and `percentiles`); forked by
 * `runLoad`, it runs one load.
 */
import { fork } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';

export interface LoadRequest {
  method: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  body?: string;
}

interface LoadOptions {
  port: number;
  /** connection `c` sends requests c, c + connections, c + 2·connections, … (wrapping around), spreading the load over them */
  requests: LoadRequest[];
  connections: number;
  /** requests started before this much time has passed are sent but not counted */
  warmupMs: number;
  /** the measured window: stop after this long … */
  durationMs: number;
  /** … or after this many counted requests, whichever comes first */
  maxCount?: number;
}

export interface Percentiles {
  p50: number;
  p99: number;
  max: number;
  samples: number;
}

export interface LoadResult {
  /** counted requests per second of the measured window */
  perSecond: number;
  /** the generator's own CPU (user + system) per counted request, ms */
  clientCpuMs: number;
  latencyMs: Percentiles;
  /** counted answers by HTTP status (anything but 2xx is a failure of the run) */
  statuses: Record<string, number>;
  /** a non-2xx answer's body, to say what went wrong */
  firstFailure: string | null;
}

/** p50/p99/max of `values` (ms, rounded to 0.01 ms); NaN when there are none. */
export function percentiles(values: ArrayLike<number>): Percentiles {
  const sorted = Float64Array.from(values).sort();
  const at = (p: number) => (sorted.length === 0 ? NaN : round(sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!));
  return { p50: at(50), p99: at(99), max: sorted.length === 0 ? NaN : round(sorted[sorted.length - 1]!), samples: sorted.length };
}

const round = (ms: number) => Math.round(ms * 100) / 100;

const CHILD_FLAG = 'BENCH_LOAD_CHILD';

/**
 * Runs one load in a fresh child process and resolves to what it measured; `onWindow` is called
 * when the measured window opens and when it closes (to read CPU counters over the same span).
 */
export function runLoad(options: LoadOptions, onWindow?: (edge: 'open' | 'close') => void): Promise<LoadResult> {
  const child = fork(fileURLToPath(import.meta.url), [], { env: { ...process.env, [CHILD_FLAG]: '1' }, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    child.on('message', (message: { edge: 'open' | 'close' } | { result: LoadResult }) => {
      if ('edge' in message) return onWindow?.(message.edge);
      resolve(message.result);
      child.disconnect();
    });
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`load generator exited with ${code}`)));
    child.send(options);
  });
}

async function generate(options: LoadOptions): Promise<LoadResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: options.connections });
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  let firstFailure: string | null = null;
  const started = performance.now();
  const countFrom = started + options.warmupMs;
  const stopAt = countFrom + options.durationMs;
  const enough = () => options.maxCount !== undefined && latencies.length >= options.maxCount;
  let lastCounted = countFrom;
  let cpuAtOpen: NodeJS.CpuUsage | null = null;
  let cpu: NodeJS.CpuUsage | null = null;
  const opened = setTimeout(() => {
    cpuAtOpen = process.cpuUsage();
    process.send!({ edge: 'open' });
  }, options.warmupMs);
  const closed = setTimeout(() => {
    cpu = process.cpuUsage(cpuAtOpen ?? undefined);
    process.send!({ edge: 'close' });
  }, options.warmupMs + options.durationMs);

  const send = (request: LoadRequest) =>
    new Promise<{ status: number; body: string }>((resolve, reject) => {
      const headers: Record<string, string | number> = { ...request.headers };
      if (request.body !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(request.body) });
      const req = http.request({ agent, host: '127.0.0.1', port: options.port, method: request.method, path: request.path, headers }, (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (body += chunk));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(request.body);
    });

  await Promise.all(
    Array.from({ length: options.connections }, async (_, connection) => {
      for (let i = connection; performance.now() < stopAt && !enough(); i += options.connections) {
        const request = options.requests[i % options.requests.length]!;
        const sentAt = performance.now();
        const { status, body } = await send(request);
        const doneAt = performance.now();
        if (sentAt < countFrom || doneAt > stopAt || enough()) continue;
        latencies.push(doneAt - sentAt);
        lastCounted = Math.max(lastCounted, doneAt);
        statuses[status] = (statuses[status] ?? 0) + 1;
        if ((status < 200 || status > 299) && firstFailure === null) firstFailure = `${status} ${body.slice(0, 500)}`;
      }
    }),
  );
  agent.destroy();
  clearTimeout(opened);
  clearTimeout(closed);
  // Stopped early (maxCount): the window closes now.
  if (cpu === null) {
    cpu = process.cpuUsage(cpuAtOpen ?? undefined);
    process.send!({ edge: 'close' });
  }
  const used = cpu as NodeJS.CpuUsage;
  const windowMs = options.maxCount !== undefined && latencies.length >= options.maxCount ? lastCounted - countFrom : options.durationMs;
  return {
    perSecond: Math.round((latencies.length / windowMs) * 1000),
    clientCpuMs: round((used.user + used.system) / 1000 / Math.max(1, latencies.length)),
    latencyMs: percentiles(latencies),
    statuses,
    firstFailure,
  };
}

if (process.env[CHILD_FLAG] === '1' && process.send) {
  process.once('message', (options: LoadOptions) => {
    void generate(options).then((result) => process.send!({ result }, () => process.exit(0)));
  });
}
