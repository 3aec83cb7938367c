import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '../logger.js';
import { listen, type Listener } from '../db/listener.js';

export const PUBSUB_CHANNEL = 'service_pubsub';
// PostgreSQL caps a NOTIFY payload just under 8000 bytes.
const MAX_PAYLOAD_BYTES = 7900;

/**
 * GraphQL subscriptions' PubSub over PostgreSQL LISTEN/NOTIFY: a publish on any server instance
 * reaches the subscribers of every instance on the same database. Same shape as type-graphql's PubSub.
 */
export class PgPubSub {
  private readonly topics = new Map<string, Set<(payload: unknown) => void>>();
  private listener: Listener | null = null;

  constructor(
    private readonly orm: MikroORM,
    private readonly url: string,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    this.listener = await listen(this.url, [PUBSUB_CHANNEL], (_channel, raw) => this.deliver(raw), this.log);
  }

  async close(): Promise<void> {
    await this.listener?.close();
    this.topics.clear();
  }

  publish(topic: string, payload: unknown): void {
    const message = JSON.stringify({ topic, payload });
    if (Buffer.byteLength(message) > MAX_PAYLOAD_BYTES) {
      this.log.error({ topic, bytes: Buffer.byteLength(message) }, 'subscription payload too large for NOTIFY; not published');
      return;
    }
    this.orm.em
      .getConnection()
      .execute(`select pg_notify(?, ?)`, [PUBSUB_CHANNEL, message])
      .catch((error: Error) => this.log.error({ err: error.message, topic }, 'publish failed'));
  }

  /** Calls `handler` with every payload published to `topic` on any instance, until the returned function is called. */
  on(topic: string, handler: (payload: unknown) => void): () => void {
    const handlers = this.topics.get(topic) ?? new Set();
    handlers.add(handler);
    this.topics.set(topic, handlers);
    return () => handlers.delete(handler);
  }

  subscribe(topic: string): AsyncIterable<unknown> {
    const queue: unknown[] = [];
    let wake: (() => void) | null = null;
    let done = false;
    const off = this.on(topic, (payload) => {
      queue.push(payload);
      wake?.();
    });
    const stop = () => {
      done = true;
      off();
      wake?.();
    };
    return {
      [Symbol.asyncIterator]: () => ({
        next: async (): Promise<IteratorResult<unknown>> => {
          while (queue.length === 0 && !done) await new Promise<void>((resolve) => (wake = resolve));
          wake = null;
          if (queue.length > 0) return { value: queue.shift(), done: false };
          return { value: undefined, done: true };
        },
        return: async (): Promise<IteratorResult<unknown>> => {
          stop();
          return { value: undefined, done: true };
        },
      }),
    };
  }

  private deliver(raw: string): void {
    let message: { topic: string; payload: unknown };
    try {
      message = JSON.parse(raw) as { topic: string; payload: unknown };
    } catch {
      return;
    }
    for (const handler of this.topics.get(message.topic) ?? []) handler(message.payload);
  }
}
