import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../src/db/embedded.js';
import { projectRoot } from '../src/paths.js';
import { eventually } from './support/eventually.js';

/** Runs the built server with no configuration but a port, a data folder and `extra`. */
async function runServer(dataDir: string, port: number, extra: NodeJS.ProcessEnv = {}): Promise<{ child: ChildProcess; output: () => string; exited: Promise<number | null> }> {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, PORT: String(port), DATA_DIR: dataDir, HOST: '127.0.0.1', ...extra };
  const child = spawn(process.execPath, [path.join(projectRoot, 'dist/src/main.js')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

function waitForHealth(port: number, timeoutMs: number): Promise<{ status: string; version: string }> {
  return eventually(
    async () => {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/health`);
        return res.ok ? ((await res.json()) as { status: string; version: string }) : undefined;
      } catch {
        return undefined; // not listening yet
      }
    },
    timeoutMs,
    '/health to answer',
  );
}

test('with NODE_ENV=production and no secrets the server does not start, naming them', async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rmm-start-'));
  try {
    const server = await runServer(dataDir, await freePort(), { NODE_ENV: 'production' });
    expect(await server.exited).toBe(1);
    expect(server.output()).toMatch(/JWT_SECRET: required when NODE_ENV=production/);
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
  }
});

test('as `npm start` runs it, with no configuration the server starts on embedded PostgreSQL, answers /health, stops cleanly on SIGTERM and reuses its data', async () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'rmm-start-'));
  const noConfiguration = {};
  try {
    const port = await freePort();
    const first = await runServer(dataDir, port, noConfiguration);
    const health = await waitForHealth(port, 30_000).catch((error: Error) => {
      throw new Error(`${error.message}\n${first.output()}`);
    });
    expect(health).toMatchObject({ status: 'ok', version: expect.any(String) });
    expect(first.output()).toMatch(/"email":"admin@localhost","password":"[^"]+".*created the first platform admin/);
    first.child.kill('SIGTERM');
    expect(await first.exited).toBe(0);
    expect(fs.existsSync(path.join(dataDir, 'pg', 'postmaster.pid'))).toBe(false);

    const second = await runServer(dataDir, port, noConfiguration);
    await waitForHealth(port, 30_000);
    expect(second.output()).not.toMatch(/created the first platform admin/);
    second.child.kill('SIGTERM');
    expect(await second.exited).toBe(0);
  } finally {
    // PostgreSQL's last files can land just after the process reports its exit.
    fs.rmSync(dataDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  }
}, 60_000);
