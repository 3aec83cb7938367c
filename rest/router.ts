import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type Request, type RequestHandler, type Response } from 'express';
import { z, type ZodType } from 'zod';
import type { RequestContext } from '../src/auth/context.js';
import { claimAgent, requireAgentToken } from '../src/auth/agent.js';
import { requireUserCaller } from '../src/auth/policy.js';
import { AppError, notFound } from '../src/errors.js';
import type { OpenApiRegistry } from '../src/http/openapi.js';
import { consumeRateLimit, type RateLimit } from '../src/http/rate-limit.js';
import { parseInput } from '../src/validation.js';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

const PATH_PARAM = /:([A-Za-z0-9_]+)/g;

/** The `:name` segments of a route path. */
type PathParams<Path extends string> = Path extends `${string}:${infer Name}/${infer Rest}`
  ? Name | PathParams<`/${Rest}`>
  : Path extends `${string}:${infer Name}`
    ? Name
    : never;
type ParamsShape<Path extends string> = { [K in PathParams<Path>]: ZodType };
/** The `:name` segments of a route path, in order. */
type PathParamList<Path extends string> = Path extends `${string}:${infer Name}/${infer Rest}`
  ? [Name, ...PathParamList<`/${Rest}`>]
  : Path extends `${string}:${infer Name}`
    ? [Name]
    : [];

interface RouteSpec<B extends ZodType | undefined, Q extends ZodType | undefined, P, R extends ZodType | undefined> {
  summary: string;
  body?: B;
  query?: Q;
  /**
   * One schema per `:name` segment of the path. A value that fails its schema answers 404 NOT_FOUND
   * with the schema's message: a malformed id names nothing, so it answers as an id of another tenant does.
   */
  params?: P;
  /** success status; 200 by default, 204 when the handler returns nothing */
  status?: number;
  /**
   * The JSON the route answers with, documented in OpenAPI: a domain's view schema (the one its
   * GraphQL type is derived from) or a page of it. With it, the handler must resolve to the
   * schema's output type. A 204 route takes none.
   */
  response?: R;
  /** reachable without credentials (the service method then calls skipAuthorization) */
  public?: boolean;
  /**
   * Who may call, when not public: users' sessions and API keys by default; `agent`, only an agent's
   * token, for the path's `:agentId` (src/auth/agent.ts: the router binds the claim, the service
   * verifies it). Any other caller is 401.
   */
  auth?: 'agent';
  /** a budget per client IP and route, counted before anything else */
  limit?: RateLimit;
  /**
   * Also served in front of Express (src/http/app.ts) with the same schemas, handler and error
   * envelope, for requests without a query string (and POSTs with a JSON body): the routes called
   * thousands of times a second (the agents' heartbeat, the dashboard's own profile). A GET or POST
   * that answers a body; its handler gets the raw request (read only `req.headers`) and must not
   * write to `res`.
   */
  hot?: boolean;
}

/** `params` is required exactly when the path has `:name` segments. */
type Spec<Path extends string, B extends ZodType | undefined, Q extends ZodType | undefined, P, R extends ZodType | undefined> = RouteSpec<B, Q, P, R> &
  ([PathParams<Path>] extends [never] ? { params?: undefined } : { params: P });

type Parsed<S> = S extends ZodType ? z.output<S> : undefined;
type ParsedParams<P> = { [K in keyof P]: P[K] extends ZodType ? z.output<P[K]> : never };

export interface HandlerInput<B, Q, P> {
  body: B;
  query: Q;
  params: P;
  req: Request;
  res: Response;
}

/**
 * What a handler resolves to: with a `response` schema, that schema's output. Services build their
 * views as `z.output<typeof XViewSchema>` (nothing parses them on the way out), and the output side
 * is also what OpenAPI documents (`io: 'output'`): a field with a default is always present.
 */
type Answer<R> = R extends ZodType ? z.output<R> : unknown;

type Handler<B extends ZodType | undefined, Q extends ZodType | undefined, P, R extends ZodType | undefined = undefined> = (
  ctx: RequestContext,
  input: HandlerInput<Parsed<B>, Parsed<Q>, ParsedParams<P>>,
) => Promise<Answer<R>>;

/** What `call(service)` passes after the context: the path parameters in path order, then the body, then the query. */
type ParamValues<Names extends unknown[], P> = Names extends [infer Name, ...infer Rest] ? [Name extends keyof P ? ParsedParams<P>[Name] : never, ...ParamValues<Rest, P>] : [];
type ServiceArgs<Path extends string, B, Q, P> = [
  ...ParamValues<PathParamList<Path>, P>,
  ...(B extends ZodType ? [z.output<B>] : []),
  ...(Q extends ZodType ? [z.output<Q>] : []),
];

/** A route served by one service function called the usual way (`call(service)`). */
interface ServiceCall<A extends unknown[], T> {
  readonly call: (ctx: RequestContext, ...args: A) => Promise<T>;
}

/**
 * The usual route's handler: the service called with the context, the path parameters in path
 * order, the body and the query, each as its schema parsed it. The route's types check the
 * service's parameters against them.
 */
export const call = <A extends unknown[], T>(service: (ctx: RequestContext, ...args: A) => Promise<T>): ServiceCall<A, T> => ({ call: service });

type AddRoute = <
  Path extends string,
  P extends ParamsShape<Path> = ParamsShape<Path>,
  B extends ZodType | undefined = undefined,
  Q extends ZodType | undefined = undefined,
  R extends ZodType | undefined = undefined,
>(
  path: Path,
  spec: Spec<Path, B, Q, P, R>,
  handler: Handler<B, Q, P, R> | ServiceCall<ServiceArgs<Path, B, Q, P>, Answer<R>>,
) => RestRouter;

/** A path id: a UUID, else 404 `<resource> not found`. */
export const pathId = (resource: string) => z.uuid({ message: notFound(resource).message });

type AnySpec = RouteSpec<ZodType | undefined, ZodType | undefined, Record<string, ZodType>, ZodType | undefined>;
type AnyHandler = Handler<ZodType | undefined, ZodType | undefined, Record<string, ZodType>>;

interface RestRoute {
  method: Method;
  path: string;
  handle: RequestHandler;
}

/** A route also served in front of Express (`hot: true`): the raw request's path matched, then the route's own parsing and handler. */
export interface HotRoute {
  method: 'GET' | 'POST';
  /** the path parameters when `pathname` is this route's, else null */
  match(pathname: string): Record<string, string> | null;
  answer(ctx: RequestContext, raw: { body: unknown; query: unknown; params: unknown }, req: IncomingMessage, res: ServerResponse): Promise<{ status: number; body: unknown }>;
}

/**
 * One domain's routes. Each route: parse body, query and path parameters with their zod schemas,
 * call the service, send. The route lands in the OpenAPI document with the same schemas. A route
 * whose service never decided access (authorize/skipAuthorization) fails loudly instead of answering.
 */
export class RestRouter {
  readonly routes: RestRoute[] = [];
  readonly hot: HotRoute[] = [];

  constructor(
    private readonly openapi: OpenApiRegistry,
    private readonly tag: string,
  ) {}

  readonly get = this.adder('get');
  readonly post = this.adder('post');
  readonly put = this.adder('put');
  readonly patch = this.adder('patch');
  readonly delete = this.adder('delete');

  private adder(method: Method): AddRoute {
    return (path, spec, handler) => this.add(method, path, spec as AnySpec, handler as AnyHandler | ServiceCall<unknown[], unknown>);
  }

  private add(method: Method, path: string, spec: AnySpec, serve: AnyHandler | ServiceCall<unknown[], unknown>): this {
    const route = `${method.toUpperCase()} ${path}`;
    const names = [...path.matchAll(PATH_PARAM)].map((m) => m[1]!);
    const handler: AnyHandler =
      typeof serve === 'function'
        ? serve
        : (ctx, { params, body, query }) =>
            serve.call(ctx, ...names.map((name) => (params as Record<string, unknown>)[name]), ...(spec.body ? [body] : []), ...(spec.query ? [query] : []));
    // The types ask for every `:name`; an extra schema would refuse every request.
    if (Object.keys(spec.params ?? {}).sort().join() !== [...names].sort().join()) throw new Error(`${route}: params must declare exactly ${names.join(', ') || 'none'}`);
    const params = spec.params && z.object(spec.params);
    const agentRoute = spec.auth === 'agent';
    if (agentRoute && (spec.public || !names.includes('agentId'))) throw new Error(`${route}: an agent route is not public and names its agent (:agentId)`);
    const status = spec.status ?? 200;
    if (spec.response && status === 204) throw new Error(`${route}: a 204 route answers no body, so it takes no response schema`);
    this.openapi.add({ method, path: `/api/v1${path}`, summary: spec.summary, tag: this.tag, public: !!spec.public, agent: agentRoute, status, body: spec.body, query: spec.query, params, response: spec.response });
    /** Parse, call the service, check the access decision: what both the Express route and the hot path run. */
    const answer = async (ctx: RequestContext, raw: { body: unknown; query: unknown; params: unknown }, req: Request, res: Response) => {
      if (spec.limit) await consumeRateLimit(ctx.runtime, spec.limit, `${ctx.meta.ip ?? 'unknown'} ${route}`);
      if (agentRoute) requireAgentToken(ctx);
      else if (!spec.public) requireUserCaller(ctx);
      const body = spec.body ? parseInput(spec.body, raw.body ?? {}) : undefined;
      const query = spec.query ? parseInput(spec.query, raw.query) : undefined;
      // After body and query, as the service would find an id of another tenant after them.
      const parsed = params ? params.safeParse(raw.params) : { success: true as const, data: {} };
      if (!parsed.success) throw new AppError(404, 'NOT_FOUND', parsed.error.issues[0]!.message);
      if (agentRoute) claimAgent(ctx, (parsed.data as { agentId: string }).agentId);
      const result = await handler(ctx, { body, query, params: parsed.data, req, res });
      if (!ctx.mark.checked) throw new Error(`${route} answered without an access decision (authorize or skipAuthorization)`);
      if (agentRoute && ctx.principal?.kind !== 'agent') throw new Error(`${route} answered without verifying its agent (src/auth/agent.ts)`);
      return result;
    };
    const handle = async (req: Request, res: Response) => {
      const result = await answer(req.ctx, req, req, res);
      if (res.headersSent) return;
      if (result === undefined) res.status(204).end();
      else res.status(status).json(result);
    };
    if (spec.hot) {
      if ((method !== 'post' && method !== 'get') || status === 204) throw new Error(`${route}: a hot route is a GET or POST that answers a body`);
      const pattern = new RegExp(`^/api/v1${path.replace(PATH_PARAM, '([^/]+)')}$`);
      this.hot.push({
        method: method === 'get' ? 'GET' : 'POST',
        match: (pathname) => {
          const found = pattern.exec(pathname);
          if (!found) return null;
          try {
            return Object.fromEntries(names.map((name, i) => [name, decodeURIComponent(found[i + 1]!)]));
          } catch {
            return null;
          }
        },
        answer: async (ctx, raw, req, res) => ({ status, body: await answer(ctx, raw, req as Request, res as Response) }),
      });
    }
    this.routes.push({ method, path, handle });
    return this;
  }
}

/**
 * Every domain's routes in one Express router. Where two paths first differ, a fixed segment goes
 * before a `:param`, so `/webhooks/dead-letters` wins over `/webhooks/:id` whatever order the routes
 * were declared in.
 */
export function mountRoutes(routers: RestRouter[]): express.Router {
  const shape = (path: string) => path.split('/').map((segment) => (segment.startsWith(':') ? '1' : '0')).join('');
  const byShape = (a: RestRoute, b: RestRoute) => {
    const [x, y] = [shape(a.path), shape(b.path)];
    return x.length - y.length || (x < y ? -1 : x > y ? 1 : 0);
  };
  const router = express.Router();
  for (const route of routers.flatMap((r) => r.routes).sort(byShape)) router[route.method](route.path, route.handle);
  return router;
}
