import express from 'express';
import type { Runtime } from '../runtime.js';

const startedAt = Date.now();
const CHECK_TIMEOUT_MS = 2000;

/** What `GET /health` answers: the process is up, its version and uptime. */
export function liveness(runtime: Runtime): { status: 'ok'; version: string; uptime: number } {
  return { status: 'ok', version: runtime.config.serviceVersion, uptime: Math.round((Date.now() - startedAt) / 1000) };
}

/** `/health` says the process is up; `/health/ready` checks each dependency and answers 503 when one is down. */
export function healthRoutes(runtime: Runtime): express.Router {
  const router = express.Router();
  // `GET /health` itself is answered in front of Express (src/http/app.ts); HEAD, or one with a query string, comes here.
  router.get('/health', (_req, res) => {
    res.json(liveness(runtime));
  });
  router.get('/health/ready', async (_req, res) => {
    const checks = {
      database: await check(() => runtime.orm.em.getConnection().execute('select 1')),
      jobs: await check(() => runtime.jobs.ping()),
    };
    const ready = Object.values(checks).every((c) => c.status === 'ok');
    res.status(ready ? 200 : 503).json({ status: ready ? 'ok' : 'unavailable', version: runtime.config.serviceVersion, checks });
  });
  return router;
}

async function check(probe: () => Promise<unknown>): Promise<{ status: 'ok' | 'error'; latencyMs: number; error?: string }> {
  const started = Date.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      probe(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
      }),
    ]);
    return { status: 'ok', latencyMs: Date.now() - started };
  } catch (error) {
    return { status: 'error', latencyMs: Date.now() - started, error: (error as Error).message.split('\n')[0]!.slice(0, 200) };
  } finally {
    clearTimeout(timer);
  }
}
