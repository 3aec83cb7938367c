import net from 'node:net';

/**
 * A TCP proxy in front of the test database, so a test can take the database away from an app as a
 * stopped server would (`cut`: every open connection dropped, new ones refused) and bring it back on
 * the same address (`restore`).
 */
export interface TcpProxy {
  /** `target` with the host and port replaced by the proxy's */
  url: string;
  cut(): Promise<void>;
  restore(): Promise<void>;
  close(): Promise<void>;
}

export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const upstream = new URL(target);
  const sockets = new Set<net.Socket>();
  const track = (socket: net.Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server = net.createServer((client) => {
    const db = net.connect(Number(upstream.port || 5432), upstream.hostname);
    track(client);
    track(db);
    client.pipe(db).pipe(client);
    client.on('close', () => db.destroy());
    db.on('close', () => client.destroy());
  });
  const listen = (port: number) => new Promise<void>((resolve, reject) => server.once('error', reject).listen(port, '127.0.0.1', () => resolve()));
  await listen(0);
  const port = (server.address() as net.AddressInfo).port;
  const url = new URL(target);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  const stop = async () => {
    const closed = server.listening ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve();
    for (const socket of sockets) socket.destroy();
    await closed;
  };
  return { url: url.toString(), cut: stop, restore: () => listen(port), close: stop };
}
