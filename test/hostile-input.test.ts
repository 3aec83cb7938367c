import crypto from 'node:crypto';
import { Webhook, WebhookDelivery } from '../entities/webhook.js';
import { createTestApp, type TestApp } from './support/app.js';
import { buildOrg, buildUser } from './support/factories.js';

/**
 * Hostile values against every REST route (from the OpenAPI document) and every GraphQL Query and
 * Mutation field (from introspection), as the platform admin with an MFA session so requests get
 * past authorization into validation and the services, plus anonymous requests. Whatever is sent,
 * the answer must be a 2xx/3xx/4xx, never a 5xx or INTERNAL_ERROR. Routes and fields added later
 * are covered without changes here; combinations per route are capped to bound the run time.
 */

const MAX_REST_CASES_PER_ROUTE = 32;
const MAX_GRAPHQL_CASES_PER_FIELD = 24;
const CONCURRENCY = 6;
// Thousands of requests, more with every route: CPU-bound, so a busy machine stretches them well past jest's 60 s default.
const SWEEP_TIMEOUT_MS = 240_000;

let app: TestApp;
let adminToken: string;
let orgId: string;

const b64 = (text: string) => Buffer.from(text).toString('base64url');
const randomCursor = crypto.randomBytes(24).toString('base64url');
const objectCursor = b64(JSON.stringify({ $ne: null }));
// The minted shape `[value, id]` with an operator for the value, and with values of the wrong types.
const operatorCursor = b64(JSON.stringify([{ $ne: null }, crypto.randomUUID()]));
const wrongTypeCursor = b64(JSON.stringify(['not a date', 'not a uuid']));
// A public address the outbound guard accepts without DNS; nothing is ever delivered to it here.
const SAMPLE_URL = 'https://1.1.1.1/in';
const LONG = 'a'.repeat(100_000);
// Node refuses request lines over 16 kB before the app sees them: URLs get a shorter long string.
const URL_LONG = 'a'.repeat(6_000);

/** Text that parses as something it should not: numbers out of range, far dates, null bytes, forged cursors. */
const HOSTILE_TEXT = [
  '-1',
  '1e308',
  String(2 ** 53 + 1),
  'NaN',
  '-271821-04-20T00:00:00Z',
  '+275760-09-13T00:00:00Z',
  '0000-01-01',
  '0000-01-01T00:00:00Z',
  '\u0000',
  'a\u0000b',
  randomCursor,
  objectCursor,
  operatorCursor,
  wrongTypeCursor,
];
/** JSON values for bodies and GraphQL variables: the text above, wrong types, operators, arrays, 100 kB. */
const HOSTILE_JSON: unknown[] = [...HOSTILE_TEXT, LONG, 1e308, -1, 2 ** 53 + 1, { $ne: null }, { $gt: '' }, ['a', { $ne: null }], null];
/** Query-string values: objects and arrays become `k[$ne]=` and `k=a&k=b` under the extended parser. */
const HOSTILE_QUERY: unknown[] = [...HOSTILE_TEXT, URL_LONG, { $ne: '' }, { $gt: '' }, ['a', 'b']];
const HOSTILE_PATH = [...HOSTILE_TEXT, URL_LONG, crypto.randomUUID(), crypto.randomUUID().toUpperCase(), '00000000-0000-0000-0000-000000000000'];
/** Whole bodies sent as raw bytes with content-type application/json. */
const HOSTILE_RAW_BODIES: { name: string; bytes: Buffer }[] = [
  { name: 'invalid UTF-8 (C3 28)', bytes: Buffer.from([0xc3, 0x28]) },
  { name: 'invalid UTF-8 inside a string', bytes: Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}')]) },
  { name: 'malformed JSON', bytes: Buffer.from('{"name": ') },
  { name: 'JSON null', bytes: Buffer.from('null') },
  { name: 'JSON array', bytes: Buffer.from('[{"$ne":null}]') },
  { name: 'JSON string', bytes: Buffer.from('"text"') },
  { name: 'operator body', bytes: Buffer.from('{"$ne":null,"$or":[{"id":{"$ne":null}}]}') },
  { name: 'deep nesting', bytes: Buffer.from(`${'['.repeat(10_000)}${']'.repeat(10_000)}`) },
];

interface Case {
  label: string;
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string | Buffer;
  /** GraphQL: the answer is a GraphQL response */
  graphql?: boolean;
}

interface Failure {
  case: string;
  request: string;
  status: number;
  response: unknown;
}

const clip = (value: unknown, max = 300): unknown => {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text !== undefined && text.length > max ? `${text.slice(0, max)}… (${text.length} chars)` : value;
};

beforeAll(async () => {
  // Generous SSO limits and no per-caller budget, so requests reach validation instead of stopping at 429.
  app = await createTestApp({ env: { SSO_RATE_LIMIT_PER_MINUTE: '100000', API_RATE_LIMIT_PER_MINUTE: '0' } });
  // A platform administrator, so that hostile input reaches every route's validation and service rather than stopping at 403.
  adminToken = (await buildUser(app, { role: 'Platform Admin' })).token;
  const org = await buildOrg(app);
  orgId = org.id;
  // A webhook with a delivery in the organization every `orgId` defaults to, so nested cursor arguments reach a query.
  const em = app.server.runtime.orm.em.fork();
  const hook = em.create(Webhook, { orgId, name: 'hostile', url: app.server.runtime.secrets.encrypt(SAMPLE_URL), events: ['device.offline'] });
  em.create(WebhookDelivery, { webhookId: hook.id, orgId, status: 'delivered', event: 'device.offline', eventId: crypto.randomUUID(), payload: {} });
  await em.flush();
});
afterAll(async () => {
  await app?.stop();
});

// ---- sample values ---------------------------------------------------------------------------

/** Optional arguments that name the organization: partner and system callers must give one, so samples always do. */
const TENANT_ARG = /^(org|organization)Id$/i;

/** A value a schema accepts (as far as a guess goes), so that one hostile field at a time reaches the service. */
function sampleJson(schema: any, name = ''): unknown {
  if (!schema || typeof schema !== 'object') return 'x';
  if ('const' in schema) return schema.const;
  if (schema.default !== undefined) return schema.default;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(alternatives)) return sampleJson(alternatives.find((s: any) => s.type !== 'null') ?? alternatives[0], name);
  if (Array.isArray(schema.allOf)) return sampleJson(schema.allOf[0], name);
  const type = Array.isArray(schema.type) ? schema.type.find((t: string) => t !== 'null') : schema.type;
  switch (type) {
    case 'string':
      return sampleText(name, schema.format, schema.minLength);
    case 'integer':
    case 'number':
      return Math.min(schema.maximum ?? Number.MAX_SAFE_INTEGER, Math.max(schema.minimum ?? 1, schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : 1));
    case 'boolean':
      return true;
    case 'array':
      return Array.from({ length: Math.max(1, schema.minItems ?? 1) }, () => sampleJson(schema.items, name));
    case 'object':
    default:
      if (!schema.properties) return type === 'object' ? {} : 'x';
      return Object.fromEntries(
        Object.keys(schema.properties)
          .filter((key) => schema.required?.includes(key) || TENANT_ARG.test(key))
          .map((key) => [key, sampleJson(schema.properties[key], key)]),
      );
  }
}

function sampleText(name: string, format?: string, minLength = 1): string {
  if (TENANT_ARG.test(name)) return orgId;
  if (format === 'uuid' || /Id$/.test(name) || name === 'id') return crypto.randomUUID();
  if (format === 'email' || /email/i.test(name)) return `hostile-${crypto.randomBytes(3).toString('hex')}@example.test`;
  if (format === 'date-time' || /At$/.test(name)) return new Date(Date.now() + 86_400_000).toISOString();
  if (format === 'uri' || format === 'url' || /url/i.test(name)) return SAMPLE_URL;
  return 'x'.repeat(Math.max(minLength, 1));
}

/** Paths to the leaves of a sample: each gets the hostile values in turn (objects and arrays, three levels). */
function leafPaths(schema: any, depth = 0): (string | number)[][] {
  if (!schema || depth > 2) return [];
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (Array.isArray(alternatives)) return leafPaths(alternatives.find((s: any) => s.type === 'object' || s.type === 'array') ?? {}, depth);
  if (schema.type === 'object' && schema.properties) {
    return Object.entries(schema.properties).flatMap(([key, inner]) => [[key], ...leafPaths(inner, depth + 1).map((rest) => [key, ...rest])]);
  }
  if (schema.type === 'array' && schema.items) return leafPaths(schema.items, depth + 1).map((rest) => [0, ...rest]);
  return [];
}

/** A copy of `base` with `value` at `path`, creating the containers on the way from the schema's samples. */
function withValue(base: unknown, path: (string | number)[], value: unknown, schema: any): unknown {
  if (path.length === 0) return value;
  const [head, ...rest] = path;
  const inner = schemaAt(schema, head!);
  if (typeof head === 'number') {
    const list = Array.isArray(base) ? [...base] : [];
    list[head] = withValue(list[head] ?? sampleJson(inner), rest, value, inner);
    return list;
  }
  const object = base && typeof base === 'object' && !Array.isArray(base) ? { ...(base as Record<string, unknown>) } : {};
  object[head!] = withValue(object[head!] ?? sampleJson(inner, String(head)), rest, value, inner);
  return object;
}

function schemaAt(schema: any, key: string | number): any {
  const alternatives = schema?.anyOf ?? schema?.oneOf;
  const s = Array.isArray(alternatives) ? (alternatives.find((a: any) => a.type === 'object' || a.type === 'array') ?? {}) : schema;
  return typeof key === 'number' ? s?.items : s?.properties?.[key];
}

function queryString(params: Record<string, unknown>): string {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(params)) {
    if (Array.isArray(value)) for (const item of value) parts.push(`${key}=${encodeURIComponent(String(item))}`);
    else if (value && typeof value === 'object') for (const [op, inner] of Object.entries(value)) parts.push(`${key}[${encodeURIComponent(op)}]=${encodeURIComponent(String(inner))}`);
    else parts.push(`${key}=${encodeURIComponent(String(value))}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

/** Takes from each group in turn up to `max`, so a route with many fields still sends every kind of value. */
function roundRobin<T>(groups: T[][], max: number): T[] {
  const out: T[] = [];
  const queues = groups.map((g) => [...g]);
  while (out.length < max && queues.some((q) => q.length)) {
    for (const q of queues) {
      const next = q.shift();
      if (next !== undefined && out.length < max) out.push(next);
    }
  }
  return out;
}

const DATE_TEXT = new Set(HOSTILE_TEXT.filter((v) => /^[-+]?\d{4,6}-\d\d-\d\d/.test(v)));
const CURSOR_TEXT = new Set([randomCursor, objectCursor, operatorCursor, wrongTypeCursor]);
const isNumeric = (v: unknown) => typeof v === 'number' || (typeof v === 'string' && v !== '' && !DATE_TEXT.has(v) && !Number.isNaN(Number(v))) || v === 'NaN';
let rotation = 0;

/**
 * The hostile values for one field, those that look like its declared type first (they get past
 * the type check and deeper), the rest rotated from field to field so that capped routes still send
 * every kind of value somewhere.
 */
function hostileFor<T>(values: T[], field: { name: string; type?: string; format?: string }): T[] {
  const { name, type, format } = field;
  const fits = (v: T): boolean => {
    if (format === 'date-time' || /(At|^from|^to|date)$/i.test(name)) return DATE_TEXT.has(v as string);
    if (/cursor|^after$|^before$/i.test(name)) return CURSOR_TEXT.has(v as string);
    if (type === 'integer' || type === 'number' || type === 'Int' || type === 'Float') return isNumeric(v);
    return false;
  };
  const first = values.filter(fits);
  const rest = values.filter((v) => !fits(v));
  const shift = rest.length ? (rotation += 5) % rest.length : 0;
  return [...first, ...rest.slice(shift), ...rest.slice(0, shift)];
}

const schemaType = (schema: any): string | undefined => {
  const alternatives = schema?.anyOf ?? schema?.oneOf;
  const s = Array.isArray(alternatives) ? (alternatives.find((a: any) => a.type !== 'null') ?? {}) : schema;
  return Array.isArray(s?.type) ? s.type.find((t: string) => t !== 'null') : s?.type;
};
const schemaFormat = (schema: any): string | undefined => schema?.format ?? (schema?.anyOf ?? schema?.oneOf ?? []).find((a: any) => a.format)?.format;

// ---- REST ------------------------------------------------------------------------------------

interface Operation {
  parameters?: { name: string; in: 'path' | 'query'; required?: boolean; schema?: any }[];
  requestBody?: { content: { 'application/json': { schema: any } } };
}

function restCases(path: string, method: string, op: Operation): Case[] {
  const route = `${method.toUpperCase()} ${path}`;
  const pathParams = (op.parameters ?? []).filter((p) => p.in === 'path');
  const queryParams = (op.parameters ?? []).filter((p) => p.in === 'query');
  const bodySchema = op.requestBody?.content['application/json'].schema;
  const admin = { authorization: `Bearer ${adminToken}` };
  const json = { 'content-type': 'application/json' };

  const basePath = Object.fromEntries(pathParams.map((p) => [p.name, encodeURIComponent(sampleText(p.name))]));
  const baseQuery = Object.fromEntries(queryParams.filter((p) => p.required || TENANT_ARG.test(p.name)).map((p) => [p.name, sampleJson(p.schema, p.name)]));
  const baseBody = bodySchema ? sampleJson(bodySchema) : undefined;
  const url = (params: Record<string, string>, query: Record<string, unknown>) =>
    `/api/v1${path.replace(/^\/api\/v1/, '').replace(/\{(\w+)\}/g, (_m, name: string) => params[name]!)}${queryString(query)}`;
  const make = (label: string, params = basePath, query = baseQuery, body: unknown = baseBody, headers: Record<string, string> = admin): Case => ({
    label: `${route} ${label}`,
    method: method.toUpperCase(),
    url: url(params, query),
    headers: body === undefined ? headers : { ...json, ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });

  const groups: Case[][] = [[make('baseline'), make('anonymous', basePath, baseQuery, baseBody, {})]];
  for (const p of pathParams) {
    groups.push(hostileFor(HOSTILE_PATH, { name: p.name }).map((v) => make(`path ${p.name}=${JSON.stringify(clip(v, 60))}`, { ...basePath, [p.name]: encodeURIComponent(v) })));
  }
  for (const p of queryParams) {
    groups.push(hostileFor(HOSTILE_QUERY, { name: p.name, type: schemaType(p.schema), format: schemaFormat(p.schema) }).map((v) => make(`query ${p.name}=${JSON.stringify(clip(v, 60))}`, basePath, { ...baseQuery, [p.name]: v })));
  }
  if (bodySchema) {
    for (const leaf of leafPaths(bodySchema)) {
      const leafSchema = leaf.reduce((schema: any, key) => schemaAt(schema, key), bodySchema);
      const field = { name: String(leaf.findLast((k) => typeof k === 'string') ?? ''), type: schemaType(leafSchema), format: schemaFormat(leafSchema) };
      groups.push(hostileFor(HOSTILE_JSON, field).map((v) => make(`body ${leaf.join('.')}=${JSON.stringify(clip(v, 60))}`, basePath, baseQuery, withValue(baseBody, leaf, v, bodySchema))));
    }
  }
  if (method !== 'get') {
    groups.push(
      HOSTILE_RAW_BODIES.map(({ name, bytes }) => ({ ...make(`raw body: ${name}`), headers: { ...json, ...admin }, body: bytes })),
      HOSTILE_RAW_BODIES.slice(0, 2).map(({ name, bytes }) => ({ ...make(`anonymous raw body: ${name}`), headers: json, body: bytes })),
    );
  }
  return roundRobin(groups, MAX_REST_CASES_PER_ROUTE);
}

// ---- GraphQL ---------------------------------------------------------------------------------

interface TypeRef {
  kind: string;
  name: string | null;
  ofType: TypeRef | null;
}
interface InputValue {
  name: string;
  type: TypeRef;
  defaultValue: string | null;
}
interface FieldDef {
  name: string;
  args: InputValue[];
  type: TypeRef;
}
interface FullType {
  kind: string;
  name: string;
  fields: FieldDef[] | null;
  inputFields: InputValue[] | null;
  enumValues: { name: string }[] | null;
}

const TYPE_REF = 'kind name ofType { kind name ofType { kind name ofType { kind name ofType { kind name } } } }';
const INTROSPECTION = `{ __schema { queryType { name } mutationType { name } types { kind name
  fields { name type { ${TYPE_REF} } args { name defaultValue type { ${TYPE_REF} } } }
  inputFields { name defaultValue type { ${TYPE_REF} } }
  enumValues { name } } } }`;

const named = (ref: TypeRef): TypeRef => (ref.ofType ? named(ref.ofType) : ref);
const typeString = (ref: TypeRef): string => (ref.kind === 'NON_NULL' ? `${typeString(ref.ofType!)}!` : ref.kind === 'LIST' ? `[${typeString(ref.ofType!)}]` : ref.name!);
const required = (v: InputValue) => v.type.kind === 'NON_NULL' && v.defaultValue === null;

function graphqlCases(types: Map<string, FullType>, operation: 'query' | 'mutation', field: FieldDef): Case[] {
  const sample = (ref: TypeRef, name: string): unknown => {
    if (ref.kind === 'NON_NULL') return sample(ref.ofType!, name);
    if (ref.kind === 'LIST') return [sample(ref.ofType!, name)];
    const type = types.get(ref.name!)!;
    if (type.kind === 'ENUM') return type.enumValues![0]!.name;
    if (type.kind === 'INPUT_OBJECT') return Object.fromEntries(type.inputFields!.filter((f) => required(f) || TENANT_ARG.test(f.name)).map((f) => [f.name, sample(f.type, f.name)]));
    if (ref.name === 'Int' || ref.name === 'Float') return 1;
    if (ref.name === 'Boolean') return false;
    if (ref.name === 'JSONObject' || ref.name === 'JSON') return {};
    return sampleText(name);
  };
  /** Paths into an argument's value: the argument itself, or each field of an input object (two levels). */
  const argPaths = (ref: TypeRef, depth = 0): string[][] => {
    const type = types.get(named(ref).name!)!;
    if (type.kind !== 'INPUT_OBJECT' || depth > 1) return [[]];
    return type.inputFields!.flatMap((f) => argPaths(f.type, depth + 1).map((rest) => [f.name, ...rest]));
  };
  const leafType = (ref: TypeRef, path: string[]): TypeRef =>
    path.length === 0 ? ref : leafType(types.get(named(ref).name!)!.inputFields!.find((f) => f.name === path[0])!.type, path.slice(1));
  const setAt = (base: unknown, path: string[], value: unknown, ref: TypeRef): unknown => {
    if (path.length === 0) return value;
    const type = types.get(named(ref).name!)!;
    const inner = type.inputFields!.find((f) => f.name === path[0])!;
    const object = { ...(base as Record<string, unknown>) };
    object[path[0]!] = setAt(object[path[0]!] ?? sample(inner.type, inner.name), path.slice(1), value, inner.type);
    return object;
  };

  /** Fields below the result that take arguments (e.g. `webhooks { data { deliveries(after:) } }`), reached through fields without required ones. */
  const nested: { path: string[]; field: FieldDef }[] = [];
  const walk = (ref: TypeRef, path: string[], depth: number) => {
    const type = types.get(named(ref).name!)!;
    if (type.kind !== 'OBJECT' || depth > 2) return;
    for (const f of type.fields ?? []) {
      if (f.args.some(required)) continue;
      if (f.args.length) nested.push({ path: [...path, f.name], field: f });
      walk(f.type, [...path, f.name], depth + 1);
    }
  };
  walk(field.type, [], 0);

  const isComposite = (ref: TypeRef) => !['SCALAR', 'ENUM'].includes(types.get(named(ref).name!)!.kind);
  /** `{ a { b { leaf(args) { __typename } } } }` down to a nested field. */
  const selection = (path: string[], leaf: FieldDef, args: string): string => {
    const [head, ...rest] = path;
    if (rest.length > 0) return `{ ${head} ${selection(rest, leaf, args)} }`;
    return `{ ${head}${args}${isComposite(leaf.type) ? ' { __typename }' : ''} }`;
  };
  const baseVars = Object.fromEntries(field.args.filter((a) => required(a) || TENANT_ARG.test(a.name)).map((a) => [a.name, sample(a.type, a.name)]));

  const make = (label: string, vars: Record<string, unknown>, nestedAt?: { path: string[]; field: FieldDef; vars: Record<string, unknown> }, anonymous = false): Case => {
    const defs = [
      ...field.args.filter((a) => a.name in vars).map((a) => `$${a.name}: ${typeString(a.type)}`),
      ...(nestedAt ? nestedAt.field.args.filter((a) => a.name in nestedAt.vars).map((a) => `$n_${a.name}: ${typeString(a.type)}`) : []),
    ];
    const args = field.args.filter((a) => a.name in vars).map((a) => `${a.name}: $${a.name}`);
    const nestedArgs = nestedAt ? nestedAt.field.args.filter((a) => a.name in nestedAt.vars).map((a) => `${a.name}: $n_${a.name}`) : [];
    const inner = nestedAt ? selection(nestedAt.path, nestedAt.field, nestedArgs.length ? `(${nestedArgs.join(', ')})` : '') : isComposite(field.type) ? '{ __typename }' : '';
    const query = `${operation}${defs.length ? `(${defs.join(', ')})` : ''} { ${field.name}${args.length ? `(${args.join(', ')})` : ''} ${inner} }`;
    const variables = { ...vars, ...Object.fromEntries(Object.entries(nestedAt?.vars ?? {}).map(([k, v]) => [`n_${k}`, v])) };
    return {
      label: `graphql ${operation} ${field.name} ${label}`,
      method: 'POST',
      url: '/graphql',
      headers: { 'content-type': 'application/json', ...(anonymous ? {} : { authorization: `Bearer ${adminToken}` }) },
      body: JSON.stringify({ query, variables }),
      graphql: true,
    };
  };

  const groups: Case[][] = [[make('baseline', baseVars), make('anonymous', baseVars, undefined, true)]];
  for (const arg of field.args) {
    for (const path of argPaths(arg.type)) {
      const leafName = path.at(-1) ?? arg.name;
      groups.push(
        hostileFor(HOSTILE_JSON, { name: leafName, type: named(leafType(arg.type, path)).name! }).map((v) =>
          make(`${[arg.name, ...path].join('.')}=${JSON.stringify(clip(v, 60))}`, { ...baseVars, [arg.name]: setAt(baseVars[arg.name] ?? sample(arg.type, arg.name), path, v, arg.type) }),
        ),
      );
    }
  }
  for (const n of nested) {
    for (const arg of n.field.args) {
      groups.push(hostileFor(HOSTILE_JSON, { name: arg.name, type: named(arg.type).name! }).map((v) => make(`${n.path.join('.')}(${arg.name}=${JSON.stringify(clip(v, 60))})`, baseVars, { ...n, vars: { [arg.name]: v } })));
    }
  }
  return roundRobin(groups, MAX_GRAPHQL_CASES_PER_FIELD);
}

// ---- running ---------------------------------------------------------------------------------

const malformedOperations: string[] = [];

async function send(c: Case): Promise<Failure | null> {
  let status: number;
  let text: string;
  try {
    const res = await fetch(`${app.url}${c.url}`, { method: c.method, headers: c.headers, body: c.body, redirect: 'manual' });
    status = res.status;
    text = await res.text();
  } catch (error) {
    return { case: c.label, request: `${c.method} ${clip(c.url, 200)}`, status: 0, response: `request failed: ${(error as Error).message}` };
  }
  let body: any = text;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    // not JSON (a CSV export, SAML metadata): the status says enough
  }
  // An operation GraphQL refuses as a document (not for its variables) means this file built it wrong: nothing was exercised.
  if (c.graphql && status === 400 && (body?.errors ?? []).some((e: any) => !e.path && !/^Variable "\$/.test(e.message))) {
    malformedOperations.push(`${c.label}: ${clip(body.errors[0].message, 200)}`);
  }
  const internal = c.graphql
    ? (body?.errors ?? []).some((e: any) => e?.extensions?.code === 'INTERNAL_ERROR' || !e?.extensions?.code)
    : body?.code === 'INTERNAL_ERROR';
  if (status < 500 && !internal) return null;
  return { case: c.label, request: `${c.method} ${clip(c.url, 200)} ${clip(c.body instanceof Buffer ? `<bytes ${c.body.toString('hex').slice(0, 60)}>` : c.body, 300)}`, status, response: clip(body, 500) };
}

async function runAll(cases: Case[]): Promise<Failure[]> {
  const failures: Failure[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < cases.length) {
        const failure = await send(cases[next++]!);
        if (failure) failures.push(failure);
      }
    }),
  );
  return failures;
}

test('no REST route answers 5xx or INTERNAL_ERROR to hostile input', async () => {
  const doc = (await (await fetch(`${app.url}/api/v1/openapi.json`)).json()) as { paths: Record<string, Record<string, Operation>> };
  const routes = Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => ({ path, method, op })));
  expect(routes.length).toBeGreaterThan(50);
  const cases = routes.flatMap((r) => restCases(r.path, r.method, r.op));
  const failures = await runAll(cases);
  console.info(`hostile REST: ${routes.length} routes, ${cases.length} requests, ${failures.length} failures`);
  expect(failures).toEqual([]);
}, SWEEP_TIMEOUT_MS);

test('no GraphQL Query or Mutation field answers INTERNAL_ERROR to hostile variables', async () => {
  const res = await fetch(`${app.url}/graphql`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query: INTROSPECTION }) });
  const { data } = (await res.json()) as { data: { __schema: { queryType: { name: string }; mutationType: { name: string }; types: FullType[] } } };
  const types = new Map(data.__schema.types.map((t) => [t.name, t]));
  const roots = [
    ['query', data.__schema.queryType.name],
    ['mutation', data.__schema.mutationType.name],
  ] as const;
  const fields = roots.flatMap(([operation, name]) => types.get(name)!.fields!.map((field) => ({ operation, field })));
  expect(fields.length).toBeGreaterThan(50);
  const cases = fields.flatMap(({ operation, field }) => graphqlCases(types, operation, field));
  const failures = await runAll(cases);
  console.info(`hostile GraphQL: ${fields.length} fields, ${cases.length} requests, ${failures.length} failures`);
  expect(failures).toEqual([]);
  expect(malformedOperations).toEqual([]);
}, SWEEP_TIMEOUT_MS);

test('bodies that are not valid UTF-8 or JSON, and text with null characters, are 400 VALIDATION_ERROR', async () => {
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${adminToken}` };
  const call = async (path: string, body: string | Buffer) => {
    const res = await fetch(`${app.url}${path}`, { method: 'POST', headers, body });
    return { status: res.status, body: (await res.json()) as any };
  };
  for (const path of ['/api/v1/orgs/partners', '/graphql']) {
    expect(await call(path, Buffer.concat([Buffer.from('{"name":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]))).toEqual({
      status: 400,
      body: { code: 'VALIDATION_ERROR', message: 'Request body is not valid UTF-8' },
    });
    expect(await call(path, '{"name": ')).toEqual({ status: 400, body: { code: 'VALIDATION_ERROR', message: 'Malformed JSON in request body' } });
  }
  expect(await call('/api/v1/orgs/partners', JSON.stringify({ name: 'a\u0000b' }))).toEqual({
    status: 400,
    body: { code: 'VALIDATION_ERROR', message: 'name: must not contain null characters', details: [{ path: 'name', message: 'must not contain null characters' }] },
  });
  const viaGraphql = await call('/graphql', JSON.stringify({ query: 'mutation($name: String!) { createPartner(input: { name: $name }) { id } }', variables: { name: 'a\u0000b' } }));
  expect(viaGraphql.body.errors).toEqual([expect.objectContaining({ message: 'name: must not contain null characters', extensions: expect.objectContaining({ code: 'VALIDATION_ERROR' }) })]);
});
