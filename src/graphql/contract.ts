import 'reflect-metadata';
import { GraphQLError, GraphQLScalarType, Kind } from 'graphql';
import { GraphQLJSON, GraphQLJSONObject } from 'graphql-scalars';
import { ArgsType, Field, Float, ID, InputType, Int, ObjectType, registerEnumType, type ClassType } from 'type-graphql';
import { z, type ZodType } from 'zod';
import { isDateTimeSchema, isoDateTime } from '../validation.js';

/**
 * One definition per contract: a domain writes its inputs and views once, as zod objects in its
 * service, and the GraphQL types are derived here (type-graphql's decorators are plain functions,
 * applied from the definition). REST validates with the same schemas and OpenAPI documents them.
 */

/** ISO 8601 instants, in and out; inputs pass the API's one date-time rule (years 0001–9999). */
export const DateTimeScalar = new GraphQLScalarType({
  name: 'DateTime',
  description: 'An instant as ISO 8601 text in UTC, e.g. 2026-11-24T08:00:00.000Z',
  serialize: (value) => (value instanceof Date ? value.toISOString() : String(value)),
  parseValue: (value) => parseDateTime(value),
  parseLiteral: (ast) => parseDateTime(ast.kind === Kind.STRING ? ast.value : undefined),
});

function parseDateTime(value: unknown): string {
  const parsed = isoDateTime().safeParse(value);
  if (!parsed.success) throw new GraphQLError(`DateTime: ${parsed.error.issues[0]?.message ?? 'must be an ISO 8601 date-time'}`, { extensions: { code: 'VALIDATION_ERROR' } });
  return parsed.data;
}

type DerivedKind = 'object' | 'input' | 'args';
type TypeThunk = NonNullable<Parameters<typeof Field>[0]> & (() => unknown);

export interface ContractOptions {
  description?: string;
  /** per field: a GraphQL type the schema cannot express (another derived object, a resolver's type) */
  fields?: Record<string, { type?: TypeThunk; description?: string }>;
}

const GRAPHQL_NAME = /^[_A-Za-z][_0-9A-Za-z]*$/;
const enums = new Map<string, object>();
const derived = new Map<string, ClassType>();
/** the schema each derived input and args class came from */
const inputSchemas = new WeakMap<object, z.ZodObject>();

const pascal = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

interface Described {
  type: TypeThunk;
  nullable: boolean;
  defaultValue?: unknown;
  description?: string;
}

function metaOf(schema: ZodType): { title?: string; description?: string } {
  return (z.globalRegistry.get(schema) as { title?: string; description?: string } | undefined) ?? {};
}

/** The GraphQL type of one zod field: wrappers become nullability and defaults, the rest a named type. */
function describe(schema: ZodType, kind: DerivedKind, name: string): Described {
  let current = schema;
  let nullable = false;
  let defaultValue: unknown;
  let description = metaOf(schema).description;
  for (;;) {
    const def = current._zod.def as unknown as { type: string; innerType?: ZodType; in?: ZodType; defaultValue?: unknown };
    if (isDateTimeSchema(current)) break;
    if (def.type === 'optional' || def.type === 'nullable') nullable = true;
    else if (def.type === 'default' || def.type === 'prefault') {
      // Inputs: the default shows in the schema (the service applies it again); views always carry the value.
      if (kind !== 'object') defaultValue = def.defaultValue;
    } else if (def.type === 'pipe') {
      current = def.in!;
      continue;
    } else if (def.type !== 'readonly' && def.type !== 'catch') break;
    current = def.innerType!;
    description ??= metaOf(current).description;
  }
  // A field with a default may be left out of an input.
  if (defaultValue !== undefined) nullable = false;
  return { type: baseType(current, kind, name), nullable, defaultValue, description };
}

function baseType(schema: ZodType, kind: DerivedKind, name: string): TypeThunk {
  if (isDateTimeSchema(schema)) return () => DateTimeScalar;
  const def = schema._zod.def as unknown as { type: string; element?: ZodType };
  const format = (schema as { format?: string | null }).format;
  switch (def.type) {
    case 'string':
      if (format === 'uuid' || format === 'guid') return () => ID;
      if (format === 'datetime') return () => DateTimeScalar;
      return () => String;
    case 'number':
      return format === 'safeint' || format === 'int32' ? () => Int : () => Float;
    case 'boolean':
      return () => Boolean;
    case 'enum':
      return enumType(schema, name);
    case 'array': {
      const item = describe(def.element!, kind, name);
      const inner = item.type;
      return () => [inner()];
    }
    case 'object':
      return derivedType(kind === 'args' ? 'input' : kind, metaOf(schema).title ?? name, schema as z.ZodObject);
    case 'record':
      return () => GraphQLJSONObject;
    case 'unknown':
    case 'any':
      return () => GraphQLJSON;
    default:
      return () => String;
  }
}

/** A zod enum is a GraphQL enum of the same values (named by its `meta({ title })`), unless a value is not a GraphQL name. */
function enumType(schema: ZodType, fallbackName: string): TypeThunk {
  const values = Object.values((schema._zod.def as unknown as { entries: Record<string, string> }).entries);
  if (!values.every((v) => GRAPHQL_NAME.test(v))) return () => String;
  const name = metaOf(schema).title ?? fallbackName;
  let registered = enums.get(name);
  if (!registered) {
    registered = Object.fromEntries(values.map((v) => [v, v]));
    registerEnumType(registered, { name, description: metaOf(schema).description });
    enums.set(name, registered);
  }
  const type = registered;
  return () => type;
}

function derivedType(kind: 'object' | 'input', name: string, schema: z.ZodObject): TypeThunk {
  const type = derive(kind, kind === 'input' && !name.endsWith('Input') ? `${name}Input` : name, schema, {});
  return () => type;
}

function derive(kind: DerivedKind, name: string, schema: z.ZodObject, options: ContractOptions): ClassType {
  const key = `${kind}:${name}`;
  const existing = derived.get(key);
  if (existing) return existing;
  const Target = { [name]: class {} }[name]!;
  derived.set(key, Target);
  for (const [field, fieldSchema] of Object.entries(schema.shape as Record<string, ZodType>)) {
    const override = options.fields?.[field];
    const d = describe(fieldSchema, kind, `${name.replace(/Input$/, '')}${pascal(field)}`);
    Field(override?.type ?? d.type, {
      nullable: d.nullable,
      ...(d.defaultValue !== undefined ? { defaultValue: d.defaultValue } : {}),
      ...(override?.description ?? d.description ? { description: override?.description ?? d.description } : {}),
    })(Target.prototype, field);
  }
  const description = options.description ?? metaOf(schema).description;
  if (kind === 'object') ObjectType(name, { description })(Target);
  else {
    (kind === 'input' ? InputType(name, { description }) : ArgsType())(Target);
    inputSchemas.set(Target, schema);
  }
  return Target;
}

/** The GraphQL object type of a view schema. */
export function objectType<S extends z.ZodObject>(name: string, schema: S, options: ContractOptions = {}): ClassType<z.output<S>> {
  return derive('object', name, schema, options) as ClassType<z.output<S>>;
}

/** The GraphQL input type of an input schema (a mutation's `input` argument). */
export function inputType<S extends z.ZodObject>(name: string, schema: S, options: ContractOptions = {}): ClassType<z.input<S>> {
  return derive('input', name, schema, options) as ClassType<z.input<S>>;
}

/** Top-level field arguments (`@Args`) from a query schema, e.g. a list's filters and page. */
export function argsType<S extends z.ZodObject>(name: string, schema: S, options: ContractOptions = {}): ClassType<z.input<S>> {
  return derive('args', name, schema, options) as ClassType<z.input<S>>;
}

/**
 * GraphQL cannot say "may be left out but not null": an optional input field is nullable. A null
 * sent for a field whose schema refuses null means "not given", as an absent REST field does, so the
 * service's parse sees the same input either way. Runs on every argument (buildSchema's validateFn).
 */
export function dropNullsTheSchemaRefuses(value: unknown): void {
  if (!value || typeof value !== 'object') return;
  if (Array.isArray(value)) {
    for (const item of value) dropNullsTheSchemaRefuses(item);
    return;
  }
  const shape = inputSchemas.get((value as object).constructor)?.shape as Record<string, ZodType> | undefined;
  if (!shape) return;
  const record = value as Record<string, unknown>;
  for (const [key, field] of Object.entries(record)) {
    if (field === null && shape[key] && !shape[key].safeParse(null).success) delete record[key];
    else dropNullsTheSchemaRefuses(field);
  }
}
