import type { MikroORM } from '@mikro-orm/postgresql';
import type { Logger } from '../logger.js';
import { listen, type Listener } from '../db/listener.js';

export const PUBSUB_CHANNEL = 'service_pubsub';
// PostgreSQL caps a NOTIFY payload just under 8000 bytes.
const MAX_PAYLOAD_BYTES = 7900;

/**
 * Publishes `payload` to `topic` from inside a transaction: PostgreSQL sends the NOTIFY only if, and
 * when, the transaction commits, so listeners on every instance never hear of rows they cannot see yet.
 */
export async function publishOnCommit(em: { execute(query: string, params?: unknown[]): Promise<unknown> }, topic: string, payload: unknown): Promise<void> {
  await em.execute(`select pg_notify(?, ?)`, [PUBSUB_CHANNEL, JSON.stringify({ topic, payload })]);
}

/**
 * GraphQL subscriptions' PubSub over PostgreSQL LISTEN/NOTIFY: a publish on any server instance
 * reaches the subscribers of every instance on the same database. Same shape as type-graphql's PubSub.
 */
export class PgPubSub {
  private readonly topics = new Map<string, Set<(payload: unknown) => void>>();
  private listener: Listener | null = null;
  /** the last NOTIFY queued of each topic */
  private readonly sending = new Map<string, Promise<void>>();

  constructor(
    private readonly orm: MikroORM,
    private readonly url: string,
    private readonly log: Logger,
  ) {}

  async start(): Promise<void> {
    this.listener = await listen(this.url, [PUBSUB_CHANNEL], (_channel, raw) => this.deliver(raw), this.log);
  }

  async close(): Promise<void> {
    await Promise.all([...this.sending.values()]);
    await this.listener?.close();
    this.topics.clear();
  }

  publish(topic: string, payload: unknown): void {
    const message = JSON.stringify({ topic, payload });
    if (Buffer.byteLength(message) > MAX_PAYLOAD_BYTES) {
      this.log.error({ topic, bytes: Buffer.byteLength(message) }, 'subscription payload too large for NOTIFY; not published');
      return;
    }
    this.send(message, topic);
  }

  /**
   * Publishes several payloads to one topic in as few NOTIFYs as fit (each under the size limit),
   * in order: a burst of deliveries or events costs one round trip per few dozen, not one each.
   */
  publishMany(topic: string, payloads: unknown[]): void {
    const envelope = Buffer.byteLength(JSON.stringify({ topic, payloads: [] }));
    const messages: string[] = [];
    let batch: string[] = [];
    let bytes = envelope;
    const close = () => {
      if (batch.length > 0) messages.push(`{"topic":${JSON.stringify(topic)},"payloads":[${batch.join(',')}]}`);
      batch = [];
      bytes = envelope;
    };
    for (const payload of payloads) {
      const json = JSON.stringify(payload);
      if (json === undefined) continue;
      const size = Buffer.byteLength(json) + 1;
      if (envelope + size > MAX_PAYLOAD_BYTES) {
        this.log.error({ topic, bytes: envelope + size }, 'subscription payload too large for NOTIFY; not published');
        continue;
      }
      if (bytes + size > MAX_PAYLOAD_BYTES) close();
      batch.push(json);
      bytes += size;
    }
    close();
    for (const message of messages) this.send(message, topic);
  }

  /**
   * A topic's NOTIFYs go out one after another, in the order they were published (sent on different pool
   * connections at once, they could arrive out of order), on one connection of the pool at a time; topics
   * do not wait for each other.
   */
  private send(message: string, topic: string): void {
    const sent = (this.sending.get(topic) ?? Promise.resolve()).then(() =>
      this.orm.em
        .getConnection()
        .execute(`select pg_notify(?, ?)`, [PUBSUB_CHANNEL, message])
        .then(
          () => {},
          (error: Error) => this.log.error({ err: error.message, topic }, 'publish failed'),
        ),
    );
    this.sending.set(topic, sent);
    void sent.then(() => {
      if (this.sending.get(topic) === sent) this.sending.delete(topic);
    });
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
    // Messages start with their topic: one nobody here listens to is not parsed.
    const head = /^\{"topic":("(?:[^"\\]|\\.)*")/.exec(raw);
    if (head && !this.topics.get(JSON.parse(head[1]!) as string)?.size) return;
    let message: { topic: string; payload?: unknown; payloads?: unknown[] };
    try {
      message = JSON.parse(raw) as typeof message;
    } catch {
      return;
    }
    const handlers = this.topics.get(message.topic);
    if (!handlers || handlers.size === 0) return;
    for (const payload of Array.isArray(message.payloads) ? message.payloads : [message.payload]) {
      for (const handler of handlers) handler(payload);
    }
  }
}
