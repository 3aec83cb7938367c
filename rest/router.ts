import express, { type Request, type Response } from 'express';
import type { ZodType, z } from 'zod';
import type { RequestContext } from '../src/auth/context.js';
import { requirePrincipal } from '../src/auth/policy.js';
import type { OpenApiRegistry } from '../src/http/openapi.js';
import { parseInput } from '../src/validation.js';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';

interface RouteSpec<B extends ZodType | undefined, Q extends ZodType | undefined> {
  summary: string;
  body?: B;
  query?: Q;
  /** success status; 200 by default, 204 when the handler returns nothing */
  status?: number;
  /** reachable without credentials (the service method then calls skipAuthorization) */
  public?: boolean;
}

type Parsed<S> = S extends ZodType ? z.output<S> : undefined;

export interface HandlerInput<B, Q> {
  body: B;
  query: Q;
  params: Record<string, string>;
  req: Request;
  res: Response;
}

type Handler<B extends ZodType | undefined, Q extends ZodType | undefined> = (
  ctx: RequestContext,
  input: HandlerInput<Parsed<B>, Parsed<Q>>,
) => Promise<unknown>;

/**
 * One domain's routes. Each route: parse body and query with its zod schema, call the service,
 * send. The route lands in the OpenAPI document with the same schemas. A route whose service never
 * decided access (authorize/skipAuthorization) fails loudly instead of answering.
 */
export class RestRouter {
  readonly router = express.Router();

  constructor(
    private readonly openapi: OpenApiRegistry,
    private readonly tag: string,
  ) {}

  get<B extends ZodType | undefined = undefined, Q extends ZodType | undefined = undefined>(path: string, spec: RouteSpec<B, Q>, handler: Handler<B, Q>) {
    return this.add('get', path, spec, handler);
  }
  post<B extends ZodType | undefined = undefined, Q extends ZodType | undefined = undefined>(path: string, spec: RouteSpec<B, Q>, handler: Handler<B, Q>) {
    return this.add('post', path, spec, handler);
  }
  put<B extends ZodType | undefined = undefined, Q extends ZodType | undefined = undefined>(path: string, spec: RouteSpec<B, Q>, handler: Handler<B, Q>) {
    return this.add('put', path, spec, handler);
  }
  patch<B extends ZodType | undefined = undefined, Q extends ZodType | undefined = undefined>(path: string, spec: RouteSpec<B, Q>, handler: Handler<B, Q>) {
    return this.add('patch', path, spec, handler);
  }
  delete<B extends ZodType | undefined = undefined, Q extends ZodType | undefined = undefined>(path: string, spec: RouteSpec<B, Q>, handler: Handler<B, Q>) {
    return this.add('delete', path, spec, handler);
  }

  private add<B extends ZodType | undefined, Q extends ZodType | undefined>(method: Method, path: string, spec: RouteSpec<B, Q>, handler: Handler<B, Q>): this {
    const status = spec.status ?? 200;
    this.openapi.add({ method, path: `/api/v1${path}`, summary: spec.summary, tag: this.tag, public: !!spec.public, status, body: spec.body, query: spec.query });
    this.router[method](path, async (req: Request, res: Response) => {
      const ctx = req.ctx;
      if (!spec.public) requirePrincipal(ctx);
      const body = (spec.body ? parseInput(spec.body, req.body ?? {}) : undefined) as Parsed<B>;
      const query = (spec.query ? parseInput(spec.query, req.query) : undefined) as Parsed<Q>;
      const result = await handler(ctx, { body, query, params: req.params as Record<string, string>, req, res });
      if (!ctx.mark.checked) throw new Error(`${method.toUpperCase()} ${path} answered without an access decision (authorize or skipAuthorization)`);
      if (res.headersSent) return;
      if (result === undefined) res.status(204).end();
      else res.status(status).json(result);
    });
    return this;
  }
}
