import { z, type ZodType } from 'zod';

export interface RouteDoc {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  path: string;
  summary: string;
  tag: string;
  public: boolean;
  status: number;
  body?: ZodType;
  query?: ZodType;
  /** an object schema with one property per `:name` segment of the path */
  params?: ZodType;
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
          [String(route.status)]: { description: route.status === 204 ? 'No content' : 'Success' },
          default: { description: 'Error', content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } } },
        },
      };
      if (route.public) operation.security = [];
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
        },
        schemas: {
          Error: {
            type: 'object',
            required: ['code', 'message'],
            properties: { code: { type: 'string' }, message: { type: 'string' }, details: {} },
          },
        },
      },
      paths,
    };
  }
}

function jsonSchema(schema: ZodType): Record<string, unknown> {
  const { $schema: _ignored, ...rest } = z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
}

function parameters(schema: ZodType, where: 'path' | 'query'): Record<string, unknown>[] {
  const json = jsonSchema(schema) as { properties?: Record<string, unknown>; required?: string[] };
  return Object.entries(json.properties ?? {}).map(([name, s]) => ({ name, in: where, required: json.required?.includes(name) ?? false, schema: s }));
}
