import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { ApolloServer } from '@apollo/server';
import { ApolloServerPluginCacheControlDisabled } from '@apollo/server/plugin/disabled';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';
import { expressMiddleware } from '@as-integrations/express5';
import { GraphQLError, type GraphQLFormattedError, type GraphQLSchema } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer } from 'ws';
import type { RequestHandler } from 'express';
import { authenticate, type Credentials } from '../auth/authenticate.js';
import { RequestContext } from '../auth/context.js';
import { toAppError } from '../errors.js';
import { contextFor, rawClientIp } from '../http/request-context.js';
import type { Runtime } from '../runtime.js';
import type { GraphqlContext } from './context.js';
import { DocumentCache } from './documents.js';
import { queryLimits } from './limits.js';
import { PersistedQueryStore } from './persisted-queries.js';
import { REVOKED_CLOSE_CODE, SocketSessions, type SocketSession } from './socket-sessions.js';

// Apollo's own codes for malformed operations map onto the API's envelope codes.
const APOLLO_CODES: Record<string, string> = {
  GRAPHQL_PARSE_FAILED: 'VALIDATION_ERROR',
  GRAPHQL_VALIDATION_FAILED: 'VALIDATION_ERROR',
  BAD_USER_INPUT: 'VALIDATION_ERROR',
  PERSISTED_QUERY_NOT_FOUND: 'PERSISTED_QUERY_NOT_FOUND',
  PERSISTED_QUERY_NOT_SUPPORTED: 'PERSISTED_QUERY_NOT_SUPPORTED',
  OPERATION_RESOLUTION_FAILURE: 'VALIDATION_ERROR',
  BAD_REQUEST: 'VALIDATION_ERROR',
};

/** graphql-js's "Did you mean …?" hints name fields and types: in production, where introspection is off, they are cut. */
const SUGGESTION = / Did you mean .*\?$/;

export function formatGraphqlError(runtime: Runtime, formatted: GraphQLFormattedError, error: unknown): GraphQLFormattedError {
  const original = error instanceof GraphQLError ? error.originalError : error;
  const known = formatted.extensions?.code as string | undefined;
  if (!original || original instanceof GraphQLError) {
    const message = runtime.config.isProduction ? formatted.message.replace(SUGGESTION, '') : formatted.message;
    return { ...formatted, message, extensions: { code: (known && APOLLO_CODES[known]) ?? known ?? 'VALIDATION_ERROR' } };
  }
  const { error: appError, expected } = toAppError(original);
  if (!expected) runtime.log.error({ err: original instanceof Error ? { message: original.message, stack: original.stack } : original }, 'unhandled GraphQL error');
  return {
    message: appError.message,
    locations: formatted.locations,
    path: formatted.path,
    extensions: { code: appError.code, ...(appError.details === undefined ? {} : { details: appError.details }) },
  };
}

/** connection_init may carry `Bearer <token>` or the bare token. */
function bearer(value: unknown): string | null {
  if (typeof value !== 'string' || !value) return null;
  return /^Bearer\s/i.test(value) ? value : `Bearer ${value}`;
}

function credentialsOf(params: Record<string, unknown>): Credentials {
  return {
    authorization: bearer(params.authorization ?? params.Authorization ?? params.token),
    apiKey: (params.apiKey ?? params['x-api-key'] ?? params['X-API-Key'] ?? null) as string | null,
  };
}

/** An AppError (or anything thrown) as a GraphQL error in the API's envelope. */
function envelopeError(runtime: Runtime, error: unknown): GraphQLError {
  const formatted = formatGraphqlError(runtime, { message: String(error) }, error);
  return new GraphQLError(formatted.message, { extensions: formatted.extensions });
}

/**
 * Apollo Server over HTTP at /graphql and graphql-ws subscriptions on the same path and port.
 * Credentials: Bearer or X-API-Key headers on HTTP; `authorization`/`apiKey` in connection_init
 * on WebSocket, authenticated again on every `subscribe` and kept in check while the socket is open
 * (SocketSessions). Automatic persisted queries (the mobile app's) are Apollo's APQ protocol over a
 * store in PostgreSQL (PersistedQueryStore), so every instance knows every registered hash.
 */
export async function startGraphql(
  runtime: Runtime,
  httpServer: http.Server,
  schema: GraphQLSchema,
): Promise<{ middleware: RequestHandler; upgrade(req: http.IncomingMessage, socket: Duplex, head: Buffer): void; stop(): Promise<void> }> {
  const { config } = runtime;
  const limits = queryLimits(config.graphql);
  const documents = new DocumentCache([limits]);
  // The HTTP server's upgrades are routed by path (src/server.ts): this one takes those to /graphql.
  const wsServer = new WebSocketServer({ noServer: true });
  const sessions = new SocketSessions(runtime, config.graphql.wsRecheckSeconds * 1000);
  const wsCleanup = useServer<Record<string, unknown>, { principal?: RequestContext['principal']; session?: SocketSession }>(
    {
      schema,
      onConnect: async (socket) => {
        const credentials = credentialsOf(socket.connectionParams ?? {});
        try {
          socket.extra.principal = await authenticate(runtime, credentials);
        } catch {
          return false;
        }
        const { principal, socket: ws } = socket.extra;
        if (principal) socket.extra.session = sessions.open(credentials, principal, (reason) => ws.close(REVOKED_CLOSE_CODE, reason));
        return true;
      },
      onSubscribe: async (socket) => {
        const { session } = socket.extra;
        if (!session) return undefined;
        try {
          const refusal = await sessions.refusal(session);
          if (!refusal) return undefined;
          // Closed once the refusal below has been sent, so the client reads why.
          setImmediate(() => sessions.revoke(session));
          return [envelopeError(runtime, refusal)];
        } catch (error) {
          return [envelopeError(runtime, error)];
        }
      },
      onClose: (socket) => {
        if (socket.extra.session) sessions.forget(socket.extra.session);
      },
      context: (socket): GraphqlContext => ({
        ctx: RequestContext.create(runtime, socket.extra.principal ?? null, { ip: rawClientIp(runtime.config, socket.extra.request) }),
      }),
      // Subscribe messages: parsed and validated once per query text (HTTP: Apollo's document store).
      parse: documents.parse,
      validate: documents.validate,
      // Errors reach the client in the API's envelope, as over HTTP: a subscribe its service refused
      // (`NOT_FOUND`, …) arrives in a result, a failure while the events flow as an error message.
      onNext: (_ctx, _id, _payload, _args, result) =>
        result.errors ? { ...result, errors: result.errors.map((error) => formatGraphqlError(runtime, error.toJSON(), error)) } : undefined,
      onError: (_ctx, _id, _payload, errors) => {
        runtime.log.debug({ errors: errors.map((e) => e.message) }, 'subscription error');
        // Those already in the envelope (onSubscribe's refusals) go as they are.
        return errors.map((error) => (error.extensions?.code ? error.toJSON() : formatGraphqlError(runtime, error.toJSON(), error)));
      },
    },
    wsServer,
  );

  const apollo = new ApolloServer<GraphqlContext>({
    schema,
    introspection: !config.isProduction,
    validationRules: [limits],
    // A JSON array of operations answers an array of results; how many one request may carry is capped below.
    allowBatchedHttpRequests: true,
    persistedQueries: { cache: new PersistedQueryStore(runtime.orm, config.graphql.persistedQueriesMax) },
    formatError: (formatted, error) => formatGraphqlError(runtime, formatted, error),
    includeStacktraceInErrorResponses: false,
    plugins: [
      ApolloServerPluginDrainHttpServer({ httpServer }),
      // Apollo's cache-control plugin hooks every field's resolution to compute cache hints the schema
      // never gives (no @cacheControl): every answer comes out uncacheable. That answer is given here
      // directly, without the per-field hook.
      ApolloServerPluginCacheControlDisabled(),
      {
        async requestDidStart() {
          return {
            async willSendResponse({ response }) {
              response.http.headers.set('cache-control', 'no-store');
            },
          };
        },
      },
      {
        async serverWillStart() {
          return {
            async drainServer() {
              await wsCleanup.dispose();
            },
          };
        },
      },
    ],
  });
  await apollo.start();
  sessions.start();
  const apolloMiddleware = expressMiddleware(apollo, {
    context: async ({ req }) => ({ ctx: await contextFor(runtime, req) }),
  });
  // Each operation of a batch passes the depth, cost and alias limits on its own: the batch's size is
  // what keeps one request from asking for GRAPHQL_MAX_BATCH times that.
  const middleware: RequestHandler = (req, res, next) => {
    const operations = Array.isArray(req.body) ? req.body.length : 1;
    if (operations <= config.graphql.maxBatch) return apolloMiddleware(req, res, next);
    const message = `Too many operations in one request: ${operations} exceeds the limit of ${config.graphql.maxBatch}`;
    res.status(400).json({ errors: [{ message, extensions: { code: 'VALIDATION_ERROR' } }] });
  };
  return {
    middleware,
    upgrade: (req, socket, head) => wsServer.handleUpgrade(req, socket, head, (ws) => wsServer.emit('connection', ws, req)),
    async stop() {
      await apollo.stop();
      await sessions.stop();
      wsServer.close();
    },
  };
}
