import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { ApolloServer, HeaderMap, type HTTPGraphQLResponse } from '@apollo/server';
import { ApolloServerPluginCacheControlDisabled, ApolloServerPluginLandingPageDisabled } from '@apollo/server/plugin/disabled';
import { ApolloServerPluginDrainHttpServer } from '@apollo/server/plugin/drainHttpServer';
import { GraphQLError, type GraphQLFormattedError, type GraphQLSchema } from 'graphql';
import { useServer } from 'graphql-ws/use/ws';
import { WebSocketServer } from 'ws';
import type { Request, RequestHandler, Response } from 'express';
import { authenticate, type Credentials } from '../auth/authenticate.js';
import { RequestContext } from '../auth/context.js';
import { badRequest, toAppError } from '../errors.js';
import { errorAnswer } from '../http/error-answer.js';
import { consumeAddressBudget, consumeCallerBudget } from '../http/rate-limit.js';
import { contextFor, rawClientIp } from '../http/request-context.js';
import type { Runtime } from '../runtime.js';
import { persistedQueryKey } from '../services/platform/trusted-documents.js';
import type { GraphqlContext } from './context.js';
import { abandonPastDeadline, rejectedOn, timedOut } from './deadline.js';
import { DocumentCache } from './documents.js';
import { explorer } from './explorer.js';
import { MAX_DOCUMENT_TOKENS, queryLimits } from './limits.js';
import { PersistedQueryStore, isRegistration, persistedQueryRefusal, type SentOperation } from './persisted-queries.js';
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

/** The media type an answer is written in: GraphQL over HTTP's own when the client accepts it. */
function responseType(req: Request): string {
  return req.accepts(['application/json', 'application/graphql-response+json']) === 'application/graphql-response+json'
    ? 'application/graphql-response+json; charset=utf-8'
    : 'application/json; charset=utf-8';
}

/** A request refused before any operation ran, as GraphQL over HTTP answers: `{errors}` with the envelope's status (and Retry-After). */
function sendRefusal(runtime: Runtime, req: Request, res: Response, error: unknown): void {
  const appError = errorAnswer(runtime, req, res, error);
  if (!appError) return;
  const extensions = { code: appError.code, ...(appError.details === undefined ? {} : { details: appError.details }) };
  res.status(appError.status).setHeader('cache-control', 'no-store').type(responseType(req)).send(JSON.stringify({ errors: [{ message: appError.message, extensions }] }));
}

/** The operations of an HTTP request as sent: GET's search parameters, a POST's body or each of its batch. */
function sentOperations(req: Request): SentOperation[] {
  if (req.method !== 'GET') return Array.isArray(req.body) ? (req.body as SentOperation[]) : [(req.body ?? {}) as SentOperation];
  const { query, extensions } = req.query as Record<string, unknown>;
  try {
    return [{ query, extensions: typeof extensions === 'string' ? JSON.parse(extensions) : extensions }];
  } catch {
    // Apollo answers the malformed parameter itself.
    return [{ query }];
  }
}

function headerMap(req: Request): HeaderMap {
  const headers = new HeaderMap();
  for (const [key, value] of Object.entries(req.headers)) if (value !== undefined) headers.set(key, Array.isArray(value) ? value.join(', ') : value);
  return headers;
}

async function writeApolloResponse(res: Response, response: HTTPGraphQLResponse): Promise<void> {
  // Vary adds to what CORS has set (Origin).
  for (const [key, value] of response.headers) {
    if (key === 'vary') res.vary(value);
    else res.setHeader(key, value);
  }
  res.statusCode = response.status ?? 200;
  if (response.body.kind === 'complete') return void res.send(response.body.string);
  for await (const chunk of response.body.asyncIterator) res.write(chunk);
  res.end();
}

/** Two handlers as one: the second where the first passes the request on. */
const chain = (first: RequestHandler, second: RequestHandler): RequestHandler => (req, res, next) => first(req, res, () => second(req, res, next));

/** An AppError (or anything thrown) as a GraphQL error in the API's envelope. */
function envelopeError(runtime: Runtime, error: unknown): GraphQLError {
  const formatted = formatGraphqlError(runtime, { message: String(error) }, error);
  return new GraphQLError(formatted.message, { extensions: formatted.extensions });
}

/**
 * Apollo Server over HTTP at /graphql and graphql-ws subscriptions on the same path and port.
 * Credentials: Bearer or X-API-Key headers on HTTP; `authorization`/`apiKey` in connection_init
 * on WebSocket, authenticated again on every `subscribe` and kept in check while the socket is open
 * (SocketSessions). Persisted queries (PERSISTED_QUERIES): Apollo's APQ protocol over a store in
 * PostgreSQL (PersistedQueryStore), so every instance knows every registered hash; in `trusted` mode
 * only the documents of imported manifests run, over HTTP and WebSocket alike. Every HTTP request and
 * every subscribe counts against its caller's budget (API_RATE_LIMIT_PER_MINUTE), shared with REST;
 * an HTTP operation still running after GRAPHQL_TIMEOUT_MS is answered 504 TIMEOUT and abandoned.
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
  const mode = config.graphql.persistedQueries;
  const store = new PersistedQueryStore(runtime.orm, runtime.clock, config.graphql.persistedQueriesMax, mode === 'trusted');
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
        // Every operation over the socket is a caller's: none is refused as bad credentials are (4403 Forbidden).
        if (!principal) return false;
        socket.extra.session = sessions.open(credentials, principal, (reason) => ws.close(REVOKED_CLOSE_CODE, reason));
        return true;
      },
      onSubscribe: async (socket, _id, payload) => {
        const { session, principal } = socket.extra;
        try {
          if (session) {
            const refusal = await sessions.refusal(session);
            if (refusal) {
              // Closed once the refusal below has been sent, so the client reads why.
              setImmediate(() => sessions.revoke(session));
              return [envelopeError(runtime, refusal)];
            }
          }
          const refusal = await persistedQueryRefusal(mode, store, payload);
          if (refusal) return [envelopeError(runtime, refusal)];
          await consumeCallerBudget(runtime, principal ?? null);
          // graphql-ws requires a query string: an empty one with the persistedQuery extension asks by hash.
          const hash = (payload.extensions as { persistedQuery?: { sha256Hash?: unknown } } | undefined)?.persistedQuery?.sha256Hash;
          if (payload.query || typeof hash !== 'string') return undefined;
          const text = await store.get(persistedQueryKey(hash));
          if (text === undefined) return [new GraphQLError('PersistedQueryNotFound', { extensions: { code: 'PERSISTED_QUERY_NOT_FOUND' } })];
          const document = documents.parse(text);
          const invalid = documents.validate(schema, document);
          if (invalid.length > 0) return invalid.map((error) => envelopeError(runtime, error));
          return { schema, document, operationName: payload.operationName, variableValues: payload.variables };
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

  // An operation answered TIMEOUT resolves no further field (its context's signal has aborted).
  abandonPastDeadline(schema);
  const apollo = new ApolloServer<GraphqlContext>({
    schema,
    // Off in production, unless the explorer (GRAPHQL_EXPLORER), which reads the schema through it, is on.
    introspection: !config.isProduction || config.graphql.explorer,
    validationRules: [limits],
    // A document's size bounds the work of validating it (the same bound as graphql-ws's DocumentCache).
    parseOptions: { maxTokens: MAX_DOCUMENT_TOKENS },
    // A JSON array of operations answers an array of results; how many one request may carry is capped below.
    allowBatchedHttpRequests: true,
    // Apollo's CSRF guard refuses simple GETs without a preflight header; it protects cookie sessions,
    // and nothing here authenticates by cookie (Bearer or X-API-Key headers only, which a cross-site
    // simple request cannot carry), so GETs by hash need no extra header.
    csrfPrevention: false,
    persistedQueries: mode === 'off' ? false : { cache: store },
    formatError: (formatted, error) => formatGraphqlError(runtime, formatted, error),
    includeStacktraceInErrorResponses: false,
    plugins: [
      ApolloServerPluginDrainHttpServer({ httpServer }),
      // Apollo's cache-control plugin hooks every field's resolution to compute cache hints the schema
      // never gives (no @cacheControl): every answer comes out uncacheable. That answer is given here
      // directly, without the per-field hook.
      ApolloServerPluginCacheControlDisabled(),
      // Apollo's landing page loads its scripts from a CDN: the explorer (explorer.ts) replaces it.
      ApolloServerPluginLandingPageDisabled(),
      {
        async requestDidStart() {
          return {
            // A query's answer fetched by hash alone (GET) may be kept by the caller's own cache for
            // GRAPHQL_GET_MAX_AGE_SECONDS: never by a shared one, as it may hold the caller's data.
            // Anything else (mutations, errors, POSTs, queries sent in full) is never stored.
            async willSendResponse({ request, response, operation, metrics }) {
              const cacheable =
                getMaxAge > 0 &&
                request.http?.method === 'GET' &&
                metrics.persistedQueryHit &&
                operation?.operation === 'query' &&
                response.body.kind === 'single' &&
                !response.body.singleResult.errors &&
                (response.http.status ?? 200) === 200;
              response.http.headers.set('cache-control', cacheable ? `private, max-age=${getMaxAge}` : 'no-store');
              if (cacheable) response.http.headers.set('vary', 'Authorization, X-API-Key');
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
  const { maxBatch, timeoutMs, getMaxAgeSeconds: getMaxAge } = config.graphql;
  /** HTTP operations under way, those answered TIMEOUT included */
  const running = new Set<Promise<unknown>>();
  /** Apollo over Express, with what comes before an operation runs: batch size, persisted-query mode, the caller's budget; and the deadline. */
  const middleware: RequestHandler = async (req, res, next) => {
    // /graphql itself: anything under it is no route.
    if (req.path !== '/') return next();
    try {
      const operations = sentOperations(req);
      // Each operation of a batch passes the depth, cost and alias limits on its own: the batch's size
      // is what keeps one request from asking for GRAPHQL_MAX_BATCH times that.
      if (operations.length > maxBatch) throw badRequest(`Too many operations in one request: ${operations.length} exceeds the limit of ${maxBatch}`);
      for (const operation of operations) {
        const refusal = await persistedQueryRefusal(mode, store, operation);
        if (refusal) throw refusal;
      }
      const ctx = await contextFor(runtime, req);
      // Each operation of a batch is a request of its caller's; an anonymous caller's APQ registrations
      // (a row each, which anyone may send) count against its address.
      await consumeCallerBudget(runtime, ctx.principal, Math.max(1, operations.length));
      if (!ctx.principal && mode === 'apq') await consumeAddressBudget(runtime, ctx.meta.ip, operations.filter(isRegistration).length);
      const deadline = new AbortController();
      const timer = setTimeout(() => deadline.abort(timedOut(timeoutMs)), timeoutMs);
      try {
        const answered = apollo.executeHTTPGraphQLRequest({
          httpGraphQLRequest: { method: req.method.toUpperCase(), headers: headerMap(req), search: new URL(req.url, 'http://graphql').search, body: req.body },
          context: async () => ({ ctx, signal: deadline.signal }),
        });
        // Past the deadline the answer is the TIMEOUT: the operation's own outcome, whenever it comes, is
        // dropped; until then it is waited for on stop, so the database outlives its last field.
        running.add(answered);
        const settled = () => void running.delete(answered);
        answered.then(settled, settled);
        const response = await Promise.race([answered, rejectedOn(deadline.signal)]);
        await writeApolloResponse(res, response);
      } finally {
        clearTimeout(timer);
      }
    } catch (error) {
      sendRefusal(runtime, req, res, error);
    }
  };
  return {
    // The explorer (GRAPHQL_EXPLORER, a development aid) answers its page and assets first; everything else is GraphQL.
    middleware: config.graphql.explorer ? chain(explorer(), middleware) : middleware,
    upgrade: (req, socket, head) => wsServer.handleUpgrade(req, socket, head, (ws) => wsServer.emit('connection', ws, req)),
    async stop() {
      await Promise.allSettled(running);
      await apollo.stop();
      await sessions.stop();
      wsServer.close();
    },
  };
}
