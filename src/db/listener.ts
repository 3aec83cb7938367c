import pg from 'pg';
import type { Logger } from '../logger.js';

export interface Listener {
  close(): Promise<void>;
}

/**
 * A dedicated connection that LISTENs on some channels and reconnects when the connection drops
 * (after a reconnect `onReconnect` runs, so callers can catch up on what they may have missed).
 */
export async function listen(
  url: string,
  channels: string[],
  onNotify: (channel: string, payload: string) => void,
  log: Logger,
  onReconnect: () => void = () => {},
): Promise<Listener> {
  let client: pg.Client | null = null;
  let closed = false;
  let retryTimer: NodeJS.Timeout | null = null;

  const connect = async (): Promise<void> => {
    const c = new pg.Client({ connectionString: url });
    c.on('notification', (msg) => onNotify(msg.channel, msg.payload ?? ''));
    c.on('error', (error) => {
      log.warn({ err: error.message, channels }, 'LISTEN connection lost; reconnecting');
      void c.end().catch(() => {});
      scheduleReconnect();
    });
    await c.connect();
    for (const channel of channels) await c.query(`LISTEN "${channel}"`);
    client = c;
  };

  const scheduleReconnect = () => {
    client = null;
    if (closed || retryTimer) return;
    retryTimer = setTimeout(() => {
      retryTimer = null;
      connect().then(onReconnect, () => scheduleReconnect());
    }, 1000);
    retryTimer.unref();
  };

  await connect();
  return {
    async close() {
      closed = true;
      if (retryTimer) clearTimeout(retryTimer);
      await client?.end().catch(() => {});
    },
  };
}
