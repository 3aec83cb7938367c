import { isDeepStrictEqual } from 'node:util';
import { z, type ZodType } from 'zod';

export interface RouteDoc {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  path: string;
  summary: string;
  tag: string;
  public: boolean;
  /** called with an agent's token (`auth: 'agent'`) */
  agent?: boolean;
  status: number;
  body?: ZodType;
  query?: ZodType;
  /** an object schema with one property per `:name` segment of the path */
  params?: ZodType;
  /** the success answer: a named view (`.meta({ title })`), documented by reference */
  response?: ZodType;
}

/**
 * Every REST route registers here when its router is built, so the OpenAPI document served at
 * /api/v1/openapi.json is generated from the same zod schemas that validate requests.
 */
export class OpenApiRegistry {
  private readonly routes: RouteDoc[] = [];

  add(route: RouteDoc): void {
    this.routes.push(route);
  }

  document(version: string): Record<string, unknown> {
    const views = viewSchemas(this.routes.flatMap((route) => (route.response ? [route.response] : [])));
    const paths: Record<string, Record<string, unknown>> = {};
    for (const route of this.routes) {
      const oaPath = route.path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
      const params = route.params ? parameters(route.params, 'path') : [];
      const queryParams = route.query ? parameters(route.query, 'query') : [];
      const operation: Record<string, unknown> = {
        summary: route.summary,
        tags: [route.tag],
        parameters: [...params, ...queryParams],
        responses: {
          [String(route.status)]: {
            description: route.status === 204 ? 'No content' : 'Success',
            ...(route.response ? { content: { 'application/json': { schema: views.ref(route.response) } } } : {}),
          },
          default: { description: 'Error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
        },
      };
      if (route.public) operation.security = [];
      else if (route.agent) operation.security = [{ agentToken: [] }];
      // A body whose every field is optional may be left out.
      if (route.body) operation.requestBody = { required: !route.body.safeParse({}).success, content: { 'application/json': { schema: jsonSchema(route.body) } } };
      (paths[oaPath] ??= {})[route.method] = operation;
    }
    return {
      openapi: '3.1.0',
      info: { title: 'rmm-service API', version },
      servers: [{ url: '/api/v1' }],
      security: [{ bearerAuth: [] }, { apiKey: [] }],
      components: {
        securitySchemes: {
          bearerAuth: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          apiKey: { type: 'apiKey', in: 'header', name: 'X-API-Key' },
          agentToken: { type: 'http', scheme: 'bearer', description: "The agent's token (`agt_…`), answered by POST /agents/enroll: the agent routes only" },
        },
        schemas: {
          Error: {
            type: 'object',
            required: ['code', 'message'],
            properties: { code: { type: 'string' }, message: { type: 'string' }, details: {} },
          },
          ...views.components,
        },
      },
      paths,
    };
  }
}

const COMPONENT = '#/components/schemas/';
type AnySchema = z.core.$ZodType;
const titleOf = (schema: AnySchema) => (z.globalRegistry.get(schema) as { title?: string } | undefined)?.title;

/**
 * The named views among the response schemas and everything they nest: each object schema with a
 * `.meta({ title })` (the name GraphQL gives its type) lands in `components.schemas` once, and every
 * use of it, at the top of a response or nested in another view, is a `$ref`. zod writes the
 * references: the views go into a registry with their title as `id`, converted together.
 */
function viewSchemas(responses: ZodType[]): { components: Record<string, unknown>; ref: (schema: ZodType) => { $ref: string } } {
  const registry = z.registry<{ id: string }>();
  const byTitle = new Map<string, AnySchema>();
  for (const schema of new Set(responses)) {
    if (!titleOf(schema)) throw new Error(`OpenAPI: a response schema must be a named view (.meta({ title })): ${JSON.stringify(jsonSchema(schema, 'output')).slice(0, 200)}`);
    for (const view of nestedViews(schema)) {
      const title = titleOf(view)!;
      const seen = byTitle.get(title);
      if (seen === view) continue;
      // Two copies of one view (`pageSchema(SiteViewSchema, 'SitePage')` built twice) share the
      // component; two different shapes under one name would make one of them lie.
      if (seen && !isDeepStrictEqual(jsonSchema(seen, 'output'), jsonSchema(view, 'output'))) throw new Error(`OpenAPI: two different response schemas are named ${title}`);
      byTitle.set(title, view);
      // A second copy under the same id: the copies all refer to it, and one of them is emitted.
      registry.add(view, { id: title });
    }
  }
  const { schemas } = z.toJSONSchema(registry, { io: 'output', unrepresentable: 'any', uri: (id) => `${COMPONENT}${id}` });
  // `__shared` would hold what zod could not name (a cycle); `Error` is the error envelope's.
  for (const id of ['__shared', 'Error']) if (id in schemas) throw new Error(`OpenAPI: response schemas produced a component named ${id}`);
  const components = Object.fromEntries(Object.entries(schemas).map(([id, { $schema: _schema, $id: _id, ...schema }]) => [id, schema]));
  const ref = (schema: ZodType) => {
    const title = titleOf(schema)!;
    if (!(title in components)) throw new Error(`OpenAPI: the response schema ${title} is not an object view`);
    return { $ref: `${COMPONENT}${title}` };
  };
  return { components, ref };
}

/** The schema itself and every object (or union of objects) schema below it that carries its own title (a `.describe()`d copy refers to the original). */
function nestedViews(schema: AnySchema): AnySchema[] {
  const found: AnySchema[] = [];
  // zod's own walk: the override sees every schema the conversion visits.
  z.toJSONSchema(schema, { io: 'output', unrepresentable: 'any', override: ({ zodSchema }) => void found.push(zodSchema) });
  return found.filter((s) => {
    const title = titleOf(s);
    const parent = s._zod.parent;
    return title && (s._zod.def.type === 'object' || s._zod.def.type === 'union') && !(parent && titleOf(parent) === title);
  });
}

function jsonSchema(schema: AnySchema, io: 'input' | 'output' = 'input'): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
}

function parameters(schema: ZodType, where: 'path' | 'query'): Record<string, unknown>[] {
  const json = jsonSchema(schema) as { properties?: Record<string, unknown>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, s]) => ({ name, in: where, required: json.required?.includes(name) ?? false, schema: s }));
}
