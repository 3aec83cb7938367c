import fs from 'node:fs';
import https from 'node:https';
import type { IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** Date.now() when the body was complete */
  at: number;
  /** the client's port: requests with the same one came over the same connection */
  remotePort: number;
}

/** How the receiver answers one request: a status (and body, headers), or `hang` to never answer. */
export type Reply = { status: number; body?: string; headers?: Record<string, string> } | 'hang';

export interface HttpsReceiver {
  port: number;
  /** `https://127.0.0.1:<port><path>` (the test certificate covers 127.0.0.1, localhost and receiver.test) */
  url(path: string, host?: string): string;
  requests: ReceivedRequest[];
  /** requests to one path */
  to(path: string): ReceivedRequest[];
  /** Replies for `path`, used in order; the last one repeats. Unscripted paths answer 200 `ok`. */
  script(path: string, replies: Reply[]): void;
  /** Cuts the connections of the requests left hanging so far (their senders see the connection drop). */
  dropHanging(): void;
  close(): Promise<void>;
}

const fixture = (name: string) => fs.readFileSync(new URL(`../fixtures/tls/${name}`, import.meta.url));

/** A real HTTPS endpoint on loopback with the test certificate; records every request. */
export async function startHttpsReceiver(): Promise<HttpsReceiver> {
  const requests: ReceivedRequest[] = [];
  const scripts = new Map<string, Reply[]>();
  const hanging = new Set<import('node:http').ServerResponse>();
  const server = https.createServer({ cert: fixture('server.pem'), key: fixture('server.key') }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0]!;
      requests.push({ method: req.method ?? '', path, headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), at: Date.now(), remotePort: req.socket.remotePort ?? 0 });
      const replies = scripts.get(path);
      const reply = replies && replies.length > 1 ? replies.shift()! : (replies?.[0] ?? { status: 200, body: 'ok' });
      if (reply === 'hang') return void hanging.add(res);
      res.writeHead(reply.status, reply.headers).end(reply.body ?? '');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: (path, host = '127.0.0.1') => `https://${host}:${port}${path}`,
    requests,
    to: (path) => requests.filter((r) => r.path === path),
    script: (path, replies) => void scripts.set(path, [...replies]),
    dropHanging: () => {
      for (const res of hanging) res.socket?.destroy();
      hanging.clear();
    },
    async close() {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    },
  };
}

/**
 * The test file's receiver: started before its tests and closed after them (Jest hooks registered
 * here). Call at the top level of the file; the object is filled in once `beforeAll` has run.
 */
export function useHttpsReceiver(): HttpsReceiver {
  const receiver = {} as HttpsReceiver;
  beforeAll(async () => {
    Object.assign(receiver, await startHttpsReceiver());
  });
  afterAll(async () => {
    await receiver.close();
  });
  return receiver;
}
