import { createClient, type Client } from 'graphql-ws';
import WebSocket from 'ws';
import { DOMAIN_EVENT_TOPIC } from '../../src/events/dispatcher.js';
import type { TestApp } from './app.js';
import { eventually } from './eventually.js';
import type { BuiltUser } from './factories.js';

export interface ReceivedEvent {
  type: string;
  data: Record<string, unknown>;
}

/**
 * Each user subscribed to `domainEvents` of `types` over the GraphQL WebSocket, live once this
 * resolves (the test app then has no other such subscription): what each receives, by user id, and
 * `dispose` to close them all (in a `finally`).
 */
export async function listenToDomainEvents(app: TestApp, users: BuiltUser[], types: string[]): Promise<{ received: Map<string, ReceivedEvent[]>; dispose: () => Promise<void> }> {
  const clients: Client[] = [];
  const received = new Map<string, ReceivedEvent[]>();
  const dispose = async () => {
    for (const ws of clients) await ws.dispose();
  };
  for (const user of users) {
    const ws = createClient({ url: app.url.replace('http', 'ws') + '/graphql', webSocketImpl: WebSocket, connectionParams: { authorization: `Bearer ${user.token}` } });
    clients.push(ws);
    received.set(user.user.id, []);
    ws.subscribe(
      { query: 'subscription($types: [String!]) { domainEvents(types: $types) { type data } }', variables: { types } },
      { next: (msg) => void received.get(user.user.id)!.push((msg.data as { domainEvents: ReceivedEvent }).domainEvents), error: () => {}, complete: () => {} },
    );
  }
  try {
    await eventually(() => app.subscriptions(DOMAIN_EVENT_TOPIC) === users.length, 10_000, 'the subscriptions to be live');
  } catch (error) {
    await dispose();
    throw error;
  }
  return { received, dispose };
}
