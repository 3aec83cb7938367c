import 'reflect-metadata';
import { GraphQLError, GraphQLScalarType, Kind } from 'graphql';
import { GraphQLJSON, GraphQLJSONObject } from 'graphql-scalars';
import { Arg, Args, ArgsType, Ctx, Field, FieldResolver, Float, ID, InputType, Int, Mutation, ObjectType, Query, Resolver, Root, Subscription, registerEnumType, type ClassType } from 'type-graphql';
import { z, type ZodType } from 'zod';
import { ConnectionPageArgs, CursorConnectionArgs, type ConnectionPageInput, type CursorConnectionInput } from '../pagination.js';
import { enumValues, isDateTimeSchema, isoDateTime } from '../validation.js';
import type { GraphqlContext } from './context.js';

/**
 * One definition per contract: a domain writes its inputs and views once, as zod objects in its
 * service, and the GraphQL types are derived here (type-graphql's decorators are plain functions,
 * applied from the definition). REST validates with the same schemas and OpenAPI documents them.
 */

/** ISO 8601 instants, in and out; inputs pass the API's one date-time rule (years 0001–9999). */
const DateTimeScalar = new GraphQLScalarType({
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
  deprecationReason?: string;
}

interface Meta {
  title?: string;
  description?: string;
  /** marks a field deprecated in GraphQL */
  deprecationReason?: string;
}

function metaOf(schema: ZodType): Meta {
  return (z.globalRegistry.get(schema) as Meta | undefined) ?? {};
}

/** A named type's own description: a `.describe()`d copy of it (a field's use) describes the field, not the type. */
function typeDescription(schema: ZodType): string | undefined {
  let current = schema;
  const title = metaOf(schema).title;
  for (;;) {
    const parent = current._zod.parent as ZodType | undefined;
    if (!parent || title === undefined || metaOf(parent).title !== title) return metaOf(current).description;
    current = parent;
  }
}

/** The GraphQL type of one zod field: wrappers become nullability and defaults, the rest a named type. */
function describe(schema: ZodType, kind: DerivedKind, name: string): Described {
  let current = schema;
  let nullable = false;
  let defaultValue: unknown;
  let description = metaOf(schema).description;
  let deprecationReason = metaOf(schema).deprecationReason;
  // A title given on a wrapper (`z.enum([...]).default('a').meta({ title })`) names the type inside.
  let title = metaOf(schema).title;
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
    deprecationReason ??= metaOf(current).deprecationReason;
    title ??= metaOf(current).title;
  }
  // A field with a default may be left out of an input.
  if (defaultValue !== undefined) nullable = false;
  return { type: baseType(current, kind, name, title), nullable, defaultValue, description, deprecationReason };
}

function baseType(schema: ZodType, kind: DerivedKind, name: string, title = metaOf(schema).title): TypeThunk {
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
      return enumType(schema, title ?? name);
    case 'array': {
      const item = describe(def.element!, kind, name);
      const inner = item.type;
      return () => [inner()];
    }
    case 'object':
      return derivedType(kind === 'args' ? 'input' : kind, title ?? name, schema as z.ZodObject);
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
function enumType(schema: ZodType, name: string): TypeThunk {
  const values = Object.values((schema._zod.def as unknown as { entries: Record<string, string> }).entries);
  if (!values.every((v) => GRAPHQL_NAME.test(v))) return () => String;
  let registered = enums.get(name);
  if (!registered) {
    registered = Object.fromEntries(values.map((v) => [v, v]));
    const described = enumValues.get(schema) ?? {};
    const valuesConfig = Object.fromEntries(Object.entries(described).map(([value, text]) => [value, { description: text }]));
    registerEnumType(registered, { name, description: typeDescription(schema), valuesConfig });
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
      ...(d.deprecationReason ? { deprecationReason: d.deprecationReason } : {}),
    })(Target.prototype, field);
  }
  const description = typeDescription(schema);
  // Plain data fields resolve as graphql-js's default does, without the per-field middleware: they never reach for the request context.
  if (kind === 'object') ObjectType(name, { description, simpleResolvers: true })(Target);
  else {
    (kind === 'input' ? InputType(name, { description }) : ArgsType())(Target);
    inputSchemas.set(Target, schema);
  }
  return Target;
}

/** The GraphQL object type of a view schema. */
export function objectType<S extends z.ZodObject>(name: string, schema: S): ClassType<z.output<S>> {
  return derive('object', name, schema, {}) as ClassType<z.output<S>>;
}

/** The GraphQL input type of an input schema (a mutation's `input` argument). */
export function inputType<S extends z.ZodObject>(name: string, schema: S): ClassType<z.input<S>> {
  return derive('input', name, schema, {}) as ClassType<z.input<S>>;
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

/*
 * Operations: a resolver is declared as data, `name: query(returns, params, service)`, and its
 * handler methods and their decorators are generated from that. The params are a tuple in the order
 * the service takes them after the request context, so the service is type-checked against them.
 */

type Ctx = GraphqlContext['ctx'];

/** One argument of an operation; `T` is the value its service receives. */
export interface Param<T> {
  /** makes the `@Arg`/`@Args` decorator when the operation is declared: a derived type is made then, after the return type */
  readonly decorator: () => (prototype: object, method: string, index: number) => void;
  /** the value among a subscription's raw arguments (subscribe runs outside type-graphql's handler) */
  readonly pick: (raw: Record<string, unknown>) => T;
}

type Scalar = GraphQLScalarType | StringConstructor;
type ArgType = Scalar | readonly [Scalar] | ClassType;
type ArgValue<T> = T extends StringConstructor ? string : T extends GraphQLScalarType<infer V> ? V : T extends readonly [infer E] ? ArgValue<E>[] : T extends ClassType<infer I> ? I : never;
interface ArgOptions {
  nullable?: boolean;
  description?: string;
}

function named(name: string, type: () => ArgType, options: ArgOptions): Param<unknown> {
  return {
    decorator: () => {
      const made = type();
      return Arg(name, () => made as ClassType, options);
    },
    pick: (raw) => raw[name],
  };
}

/** A named argument (`@Arg`); a nullable one may be null or left out. */
export function arg<T extends ArgType>(name: string, type: T, options?: ArgOptions & { nullable?: false }): Param<ArgValue<T>>;
export function arg<T extends ArgType>(name: string, type: T, options: ArgOptions & { nullable: true }): Param<ArgValue<T> | null | undefined>;
export function arg(name: string, type: ArgType, options: ArgOptions = {}): Param<unknown> {
  return named(name, () => type, options);
}

/** The `id` of the record an operation acts on. */
export const id = arg('id', ID, { description: 'ID of the record to read or act on; NOT_FOUND when it does not exist or the caller may not see it.' });

/** The `input` argument, of the input type derived from `schema`. */
export function input<S extends z.ZodObject>(name: string, schema: S, options?: ArgOptions & { nullable?: false }): Param<z.input<S>>;
export function input<S extends z.ZodObject>(name: string, schema: S, options: ArgOptions & { nullable: true }): Param<z.input<S> | null | undefined>;
export function input(name: string, schema: z.ZodObject, options: ArgOptions = {}): Param<unknown> {
  return named('input', () => inputType(name, schema), { description: 'The values to write; a field left out takes its default (creating) or keeps its value (updating).', ...options });
}

/** Top-level arguments (`@Args`) from a query schema, e.g. a list's filters and page. */
export function args<S extends z.ZodObject>(name: string, schema: S, options: ContractOptions = {}): Param<z.input<S>> {
  return {
    decorator: () => {
      const type = derive('args', name, schema, options);
      return Args(() => type);
    },
    pick: (raw) => raw as z.input<S>,
  };
}

/**
 * The arguments of a page/limit list read as a connection (`paged` in resolvers/shared.ts): the list
 * query's filters with `first`/`after` (and the deprecated `page`/`limit`) for its page.
 */
export function pageArgs<S extends z.ZodObject>(name: string, schema: S, options: ContractOptions = {}): Param<Omit<z.input<S>, 'page' | 'limit'> & ConnectionPageInput> {
  return args(name, schema.omit({ page: true, limit: true } as never).extend(ConnectionPageArgs.shape), options) as unknown as Param<Omit<z.input<S>, 'page' | 'limit'> & ConnectionPageInput>;
}

/**
 * The arguments of a cursor list read as a connection (`cursored` in resolvers/shared.ts): the list
 * query's filters with `first`/`after` for its `limit`/`cursor`.
 */
export function cursorArgs<S extends z.ZodObject>(name: string, schema: S, options: ContractOptions = {}): Param<Omit<z.input<S>, 'cursor' | 'limit'> & CursorConnectionInput> {
  return args(name, schema.omit({ cursor: true, limit: true } as never).extend(CursorConnectionArgs.shape), options) as unknown as Param<Omit<z.input<S>, 'cursor' | 'limit'> & CursorConnectionInput>;
}

/** A view schema (its `meta({ title })` names the object type), a derived or hand-written class, a list of one, Boolean, or Int (a count). */
type Returns = z.ZodObject | ClassType | readonly [z.ZodObject | ClassType] | BooleanConstructor | typeof Int;
type One<R> = R extends z.ZodObject ? z.output<R> : R extends typeof Int ? number : R extends ClassType<infer T> ? T : never;
/** What the service gives for a return type; a `Boolean` operation's service returns nothing and the operation answers true. */
type Answer<R, O> = R extends BooleanConstructor ? void : (R extends readonly [infer E] ? One<E>[] : One<R>) | (O extends { nullable: true } ? null : never);
type Params = readonly Param<unknown>[];
type Values<A extends Params> = { -readonly [K in keyof A]: A[K] extends Param<infer T> ? T : never };

function graphqlType(returns: Returns): ClassType | [ClassType] {
  if (Array.isArray(returns)) return [graphqlType(returns[0]) as ClassType];
  if (!(returns instanceof z.ZodObject)) return returns as unknown as ClassType;
  const title = metaOf(returns).title;
  if (!title) throw new Error('A view schema an operation returns needs meta({ title }): the name of its GraphQL type');
  return derive('object', title, returns, {});
}

interface OperationOptions {
  description?: string;
  nullable?: boolean;
}

/** A Query, Mutation or Subscription field, or a field of the resolver's object type whose parent view is `Parent`. */
export interface Operation<Parent = unknown> {
  readonly declare: (prototype: object, name: string) => void;
  /** type only: a field is declared on an object type whose views it accepts */
  readonly parent?: (view: Parent) => void;
}

/** Any service; `query`, `mutation` and `field` have checked it against the params. */
type Service = (...args: never) => unknown;
type HandlerKind = 'query' | 'mutation' | 'field';
const DECORATORS = { query: Query, mutation: Mutation, field: FieldResolver } satisfies Record<HandlerKind, unknown>;

function handler<Parent>(kind: HandlerKind, returns: Returns, params: Params, service: Service, options: OperationOptions = {}): Operation<Parent> {
  const call = (context: GraphqlContext, values: unknown[]) => (service as (ctx: Ctx, ...values: unknown[]) => unknown)(context.ctx, ...values);
  // A field's parent view comes after the context and before the arguments.
  const first = kind === 'field' ? 2 : 1;
  return {
    declare(prototype, name) {
      const method =
        returns === Boolean
          ? async (context: GraphqlContext, ...values: unknown[]) => {
              await call(context, values);
              return true;
            }
          : (context: GraphqlContext, ...values: unknown[]) => call(context, values);
      Object.defineProperty(prototype, name, { value: method, writable: true, configurable: true });
      const type = graphqlType(returns);
      DECORATORS[kind](() => type, options)(prototype, name, Object.getOwnPropertyDescriptor(prototype, name)!);
      Ctx()(prototype, name, 0);
      if (kind === 'field') Root()(prototype, name, 1);
      params.forEach((param, index) => param.decorator()(prototype, name, first + index));
    },
  };
}

/** A Query field answered by `service(ctx, ...values of params)`. */
export function query<const R extends Returns, const A extends Params, const O extends OperationOptions = {}>(
  returns: R,
  params: A,
  service: (ctx: Ctx, ...values: Values<A>) => Answer<R, O> | Promise<Answer<R, O>>,
  options?: O,
): Operation {
  return handler('query', returns, params, service, options);
}

/** A Mutation field answered by `service(ctx, ...values of params)`; declared `Boolean`, it answers true once the service returns. */
export function mutation<const R extends Returns, const A extends Params, const O extends OperationOptions = {}>(
  returns: R,
  params: A,
  service: (ctx: Ctx, ...values: Values<A>) => Answer<R, O> | Promise<Answer<R, O>>,
  options?: O,
): Operation {
  return handler('mutation', returns, params, service, options);
}

/** A field of the resolver's object type, answered by `service(ctx, parent view, ...values of params)`. */
export function field<const R extends Returns, const A extends Params, Parent, const O extends OperationOptions = {}>(
  returns: R,
  params: A,
  service: (ctx: Ctx, parent: Parent, ...values: Values<A>) => Answer<R, O> | Promise<Answer<R, O>>,
  options?: O,
): Operation<Parent> {
  return handler('field', returns, params, service, options);
}

/** A Subscription field: `subscribe(ctx, ...values of params)` gives the events, each answered as it is. */
export function subscription<const R extends Returns, const A extends Params>(
  returns: R,
  params: A,
  subscribe: (ctx: Ctx, ...values: Values<A>) => Promise<AsyncIterable<Answer<R, {}>>>,
  options: OperationOptions = {},
): Operation {
  const start = ({ args: raw, context }: { args: Record<string, unknown>; context: GraphqlContext }) =>
    (subscribe as (ctx: Ctx, ...values: unknown[]) => Promise<AsyncIterable<unknown>>)(context.ctx, ...params.map((param) => param.pick(raw)));
  return {
    declare(prototype, name) {
      Object.defineProperty(prototype, name, { value: (event: unknown) => event, writable: true, configurable: true });
      const type = graphqlType(returns);
      Subscription(() => type, { ...options, subscribe: start })(prototype, name, Object.getOwnPropertyDescriptor(prototype, name)!);
      Root()(prototype, name, 0);
      params.forEach((param, index) => param.decorator()(prototype, name, 1 + index));
    },
  };
}

/**
 * The resolver class of a domain's operations, with field resolvers on the object type of `of`.
 * What the builder does not cover goes in a subclass (`@Resolver(() => X) class R extends
 * operations(...) { ... }`): type-graphql moves a decorated base class's handlers to the subclass
 * and builds only the classes it is given.
 */
export function operations(spec: Record<string, Operation>): ClassType;
export function operations<S extends z.ZodObject>(of: S, spec: Record<string, Operation<z.output<S>>>): ClassType;
export function operations(...given: [Record<string, Operation>] | [z.ZodObject, Record<string, Operation<never>>]): ClassType {
  const [of, spec] = given.length === 1 ? [undefined, given[0]] : given;
  const Operations = class {};
  (of ? Resolver(() => graphqlType(of) as ClassType) : Resolver())(Operations);
  for (const [name, operation] of Object.entries(spec)) operation.declare(Operations.prototype, name);
  return Operations;
}
