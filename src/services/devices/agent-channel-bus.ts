import { randomUUID } from 'node:crypto';
import type { AgentResponse, Runtime } from '../../runtime.js';

// The bus between instances for the agent channel (agent-channel.ts): LISTEN/NOTIFY through the
// runtime's pubsub, with messages too big for one NOTIFY sent in chunks and put together again.

/** Largest message either side of a channel may send; a bigger one closes the channel (1009). */
export const MAX_CHANNEL_MESSAGE_BYTES = 1024 * 1024;

export const BUS = {
  connected: 'agent-channel:connected',
  request: 'agent-channel:request',
  accepted: 'agent-channel:accepted',
  response: 'agent-channel:response',
  chunk: 'agent-channel:chunk',
} as const;
/** A NOTIFY payload stays under 8000 bytes: bigger messages travel in base64 chunks. */
const INLINE_BYTES = 6_000;
const CHUNK_BYTES = 4_500;
const MAX_CHUNKS = Math.ceil((MAX_CHANNEL_MESSAGE_BYTES + 64 * 1024) / CHUNK_BYTES);
const CHUNK_TTL_MS = 60_000;

export interface Connected {
  deviceId: string;
  connectionId: string;
  instanceId: string;
  openedAt: number;
}
export interface ForwardedRequest {
  deviceId: string;
  requestId: string;
  method: string;
  params: Record<string, unknown>;
  timeoutMs: number;
  from: string;
}
export interface Accepted {
  to: string;
  requestId: string;
}
export interface ForwardedResponse {
  to: string;
  requestId: string;
  /** null: the channel closed before the agent answered */
  response: AgentResponse | null;
}
interface Chunk {
  /** the instance it is for; null: every instance */
  to: string | null;
  id: string;
  topic: string;
  index: number;
  count: number;
  data: string;
}

/** Sends and reassembles the bus's messages for one instance (the hub). */
export class ChannelBus {
  private readonly chunks = new Map<string, { parts: (Buffer | undefined)[]; received: number; timer: NodeJS.Timeout }>();

  constructor(
    private readonly runtime: () => Runtime,
    private readonly instanceId: () => string,
    /** a chunked request or response, whole again */
    private readonly onWhole: (topic: string, payload: unknown) => void,
  ) {}

  /** Subscribes to the chunks; answers the unsubscribe. */
  listen(): () => void {
    return this.runtime().pubsub.on(BUS.chunk, (payload) => this.onChunk(payload as Chunk));
  }

  clear(): void {
    for (const { timer } of this.chunks.values()) clearTimeout(timer);
    this.chunks.clear();
  }

  /** Publishes on the bus, in chunks when the message is too big for one NOTIFY. */
  send(topic: string, payload: object, to: string | null): void {
    const rt = this.runtime();
    const json = JSON.stringify(payload);
    if (Buffer.byteLength(json) <= INLINE_BYTES) {
      rt.pubsub.publish(topic, payload);
      return;
    }
    const bytes = Buffer.from(json);
    const count = Math.ceil(bytes.length / CHUNK_BYTES);
    if (count > MAX_CHUNKS) {
      rt.log.error({ topic, bytes: bytes.length }, 'agent channel message too large for the bus; dropped');
      return;
    }
    const id = randomUUID();
    for (let index = 0; index < count; index++) {
      const data = bytes.subarray(index * CHUNK_BYTES, (index + 1) * CHUNK_BYTES).toString('base64');
      rt.pubsub.publish(BUS.chunk, { to, id, topic, index, count, data } satisfies Chunk);
    }
  }

  private onChunk(chunk: Chunk): void {
    if ((chunk.to !== null && chunk.to !== this.instanceId()) || chunk.count > MAX_CHUNKS || chunk.index >= chunk.count) return;
    let partial = this.chunks.get(chunk.id);
    if (!partial) {
      const timer = setTimeout(() => this.chunks.delete(chunk.id), CHUNK_TTL_MS);
      timer.unref();
      partial = { parts: new Array<Buffer | undefined>(chunk.count), received: 0, timer };
      this.chunks.set(chunk.id, partial);
    }
    if (partial.parts[chunk.index]) return;
    partial.parts[chunk.index] = Buffer.from(chunk.data, 'base64');
    partial.received += 1;
    if (partial.received < chunk.count) return;
    clearTimeout(partial.timer);
    this.chunks.delete(chunk.id);
    const payload: unknown = JSON.parse(Buffer.concat(partial.parts as Buffer[]).toString());
    if (chunk.topic === BUS.request || chunk.topic === BUS.response) this.onWhole(chunk.topic, payload);
  }
}
