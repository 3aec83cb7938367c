import {
  GraphQLError,
  Kind,
  SchemaMetaFieldDef,
  TypeMetaFieldDef,
  TypeNameMetaFieldDef,
  getNamedType,
  getNullableType,
  isInterfaceType,
  isListType,
  isObjectType,
  type ASTVisitor,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLSchema,
  type SelectionSetNode,
  type ValueNode,
  type ValidationContext,
} from 'graphql';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../pagination.js';

/**
 * The most tokens a GraphQL document may hold (graphql-js's `parse` stops there): with each fragment
 * measured once, this bounds the work of validation, the limits below included. A trusted document may
 * be 100,000 characters; a dashboard's query is a few hundred tokens.
 */
export const MAX_DOCUMENT_TOKENS = 20_000;

/**
 * The items lists of a page type (`pageSchema`'s `data` next to `pagination`) or a connection type
 * (connectionOf's `edges` next to `pageInfo`; a page list's connection has both), none for any other type.
 */
function pageItems(type: GraphQLNamedType | undefined): string[] {
  if (!isObjectType(type)) return [];
  const fields = type.getFields();
  const items: string[] = [];
  if (fields.pagination && fields.data && isListType(getNullableType(fields.data.type))) items.push('data');
  if (fields.pageInfo && fields.edges && isListType(getNullableType(fields.edges.type))) items.push('edges');
  return items;
}

/** A size argument as written: a number, the largest page for a variable (validation cannot see its value), else undefined. */
function writtenSize(value: ValueNode | undefined): number | undefined {
  if (value?.kind === Kind.INT) return Math.max(1, Number(value.value));
  if (value?.kind === Kind.VARIABLE) return MAX_LIMIT;
  return undefined;
}

/**
 * How many times a field's selection is fetched: the one rule for every list, the size its resolver
 * reads. A field returning a list or a page/connection costs its `first` as written, else its default,
 * else the default page size. A page list's connection also takes the deprecated `page`/`limit`, and
 * once either is given reads `limit`-sized pages (`pageConnection`) whatever `first` says: then `limit`
 * counts (its default page size when left out), and where a variable leaves open which one the
 * resolver reads (a null `page`), the larger. The items list of a page is counted by the field that
 * returned the page; the lists of introspection types hold the schema, not rows, and count once.
 */
function fetchCount(field: GraphQLField<unknown, unknown>, node: FieldNode, parent: GraphQLNamedType | undefined): number {
  const returnsList = isListType(getNullableType(field.type));
  if (returnsList && (pageItems(parent).includes(field.name) || parent?.name.startsWith('__'))) return 1;
  if (!returnsList && !pageItems(getNamedType(field.type)).length) return 1;
  const written = (name: string) => node.arguments?.find((a) => a.name.value === name)?.value;
  const declared = (name: string) => field.args.find((a) => a.name === name);
  const byDefault = (name: string) => {
    const value = declared(name)?.defaultValue;
    return typeof value === 'number' ? Math.max(1, value) : DEFAULT_LIMIT;
  };
  const first = writtenSize(written('first')) ?? byDefault('first');
  if (!declared('limit')) return first;
  const limit = writtenSize(written('limit')) ?? byDefault('limit');
  if (!declared('first')) return limit;
  const paging = [written('page'), written('limit')].filter((v) => v !== undefined && v.kind !== Kind.NULL);
  if (paging.length === 0) return first;
  return paging.some((v) => v!.kind !== Kind.VARIABLE) ? limit : Math.max(first, limit);
}

/** The field a selection names, introspection's own (`__typename`, `__schema`, `__type`) included. */
function fieldOf(schema: GraphQLSchema, parent: GraphQLNamedType | undefined, name: string): GraphQLField<unknown, unknown> | undefined {
  if (name === TypeNameMetaFieldDef.name) return TypeNameMetaFieldDef;
  if (parent && parent === schema.getQueryType()) {
    if (name === SchemaMetaFieldDef.name) return SchemaMetaFieldDef;
    if (name === TypeMetaFieldDef.name) return TypeMetaFieldDef;
  }
  return isObjectType(parent) || isInterfaceType(parent) ? parent.getFields()[name] : undefined;
}

export interface QueryLimits {
  maxDepth: number;
  maxCost: number;
  /** aliased fields, counted through fragments as often as they are spread */
  maxAliases: number;
}

/** What a selection set asks for: depth below it, cost, aliases and introspection root fields (`__schema`, `__type`). */
interface Measure {
  depth: number;
  cost: number;
  aliases: number;
  introspections: number;
}

const NOTHING: Measure = { depth: 0, cost: 0, aliases: 0, introspections: 0 };

/**
 * Query depth, cost and alias limits, as validation rules. Cost counts every selected field,
 * multiplied by how many times the lists above it are fetched (`fetchCount`), so one query cannot ask
 * for a million nested rows; aliases are counted apart, as each one asks for its field again.
 * Introspection counts like any other field, and an operation may hold one introspection root field:
 * its answer is the schema (the whole of it is over 500 KB), which no page size bounds.
 * Each fragment is measured once per document and its measure reused at every spread, so a fragment
 * spread twice by a fragment spread twice … costs validation one walk of each, not 2^n.
 */
export function queryLimits({ maxDepth, maxCost, maxAliases }: QueryLimits) {
  return (context: ValidationContext): ASTVisitor => {
    const schema = context.getSchema();
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const def of context.getDocument().definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
    /** Each fragment's measure, relative to where it is spread; NOTHING while it is being measured (a cycle, which NoFragmentCycles reports). */
    const measured = new Map<string, Measure>();

    const fragmentMeasure = (name: string): Measure => {
      const known = measured.get(name);
      if (known) return known;
      const fragment = fragments.get(name);
      if (!fragment) return NOTHING;
      measured.set(name, NOTHING);
      const result = measure(fragment.selectionSet, schema.getType(fragment.typeCondition.name.value));
      measured.set(name, result);
      return result;
    };

    /** Depth counts the levels of fields below the set; introspection's levels are not counted (type references nest by design). */
    const measure = (set: SelectionSetNode, parent: GraphQLNamedType | undefined): Measure => {
      let depth = 0;
      let cost = 0;
      let aliases = 0;
      let introspections = 0;
      for (const sel of set.selections) {
        let inner: Measure;
        let times = 1;
        if (sel.kind === Kind.FIELD) {
          if (sel.alias) aliases += 1;
          // Unknown fields are reported by the standard rules; here they count as single objects.
          const field = fieldOf(schema, parent, sel.name.value);
          if (field === SchemaMetaFieldDef || field === TypeMetaFieldDef) introspections += 1;
          // `__typename` is answered from the type, without a resolver: free, as any client's cache adds it everywhere.
          if (field !== TypeNameMetaFieldDef) cost += 1;
          if (!sel.selectionSet) continue;
          const below = measure(sel.selectionSet, field && getNamedType(field.type));
          inner = { ...below, depth: sel.name.value.startsWith('__') ? 0 : below.depth + 1 };
          times = field ? fetchCount(field, sel, parent) : 1;
        } else {
          const fragment = sel.kind === Kind.INLINE_FRAGMENT ? measure(sel.selectionSet, sel.typeCondition ? schema.getType(sel.typeCondition.name.value) : parent) : fragmentMeasure(sel.name.value);
          // A spread costs at least 1, so a fragment spread twice by a fragment spread twice … of free fields still doubles.
          inner = { ...fragment, cost: Math.max(1, fragment.cost) };
        }
        depth = Math.max(depth, inner.depth);
        // Past any limit the exact figure does not matter: capped, it stays a safe integer.
        cost = Math.min(cost + times * inner.cost, Number.MAX_SAFE_INTEGER);
        aliases = Math.min(aliases + inner.aliases, Number.MAX_SAFE_INTEGER);
        introspections = Math.min(introspections + inner.introspections, Number.MAX_SAFE_INTEGER);
      }
      return { depth, cost, aliases, introspections };
    };

    const refuse = (message: string) => context.reportError(new GraphQLError(message, { extensions: { code: 'VALIDATION_ERROR' } }));
    return {
      OperationDefinition(node) {
        const result = measure(node.selectionSet, schema.getRootType(node.operation) ?? undefined);
        const depth = result.depth + 1;
        if (depth > maxDepth) refuse(`Query is too deep: depth ${depth} exceeds the limit of ${maxDepth}`);
        if (result.cost > maxCost) refuse(`Query is too expensive: cost ${result.cost} exceeds the limit of ${maxCost}`);
        if (result.aliases > maxAliases) refuse(`Query has too many aliases: ${result.aliases} exceeds the limit of ${maxAliases}`);
        if (result.introspections > 1) refuse(`Query asks for introspection ${result.introspections} times: an operation may ask once`);
      },
    };
  };
}
