import {
  GraphQLError,
  Kind,
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
  type SelectionSetNode,
  type ValidationContext,
} from 'graphql';
import { DEFAULT_LIMIT, MAX_LIMIT } from '../pagination.js';

const SIZE_ARGS = ['first', 'limit'];

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

/**
 * How many times a field's selection is fetched: the one rule for every list. A field returning a
 * list or a page/connection costs its size argument (`first`/`limit`) as written; a variable, whose
 * value validation cannot see, the largest page; absent, the argument's default, else the default
 * page size. The items list of a page is counted by the field that returned the page.
 */
function fetchCount(field: GraphQLField<unknown, unknown>, node: FieldNode, parent: GraphQLNamedType | undefined): number {
  const returnsList = isListType(getNullableType(field.type));
  if (returnsList && pageItems(parent).includes(field.name)) return 1;
  if (!returnsList && !pageItems(getNamedType(field.type)).length) return 1;
  // A page list's connection takes `first` and the deprecated `limit`: the one written counts.
  const sizeArgs = field.args.filter((a) => SIZE_ARGS.includes(a.name));
  const given = node.arguments?.find((a) => sizeArgs.some((s) => s.name === a.name.value))?.value;
  if (given?.kind === Kind.INT) return Math.max(1, Number(given.value));
  if (given?.kind === Kind.VARIABLE) return MAX_LIMIT;
  const byDefault = sizeArgs.find((a) => typeof a.defaultValue === 'number')?.defaultValue;
  return typeof byDefault === 'number' ? Math.max(1, byDefault) : DEFAULT_LIMIT;
}

export interface QueryLimits {
  maxDepth: number;
  maxCost: number;
  /** aliased fields, counted through fragments as often as they are spread */
  maxAliases: number;
}

/**
 * Query depth, cost and alias limits, as validation rules. Cost counts every selected field,
 * multiplied by how many times the lists above it are fetched (`fetchCount`), so one query cannot ask
 * for a million nested rows; aliases are counted apart, as each one asks for its field again.
 */
export function queryLimits({ maxDepth, maxCost, maxAliases }: QueryLimits) {
  return (context: ValidationContext): ASTVisitor => {
    const schema = context.getSchema();
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const def of context.getDocument().definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);

    const measure = (set: SelectionSetNode, parent: GraphQLNamedType | undefined, depth: number, seen: Set<string>): { depth: number; cost: number; aliases: number } => {
      let maxSeen = depth;
      let cost = 0;
      let aliases = 0;
      for (const sel of set.selections) {
        if (sel.kind === Kind.FIELD) {
          if (sel.alias) aliases += 1;
          if (sel.name.value.startsWith('__')) continue;
          // Unknown fields are reported by the standard rules; here they count as single objects.
          const field = isObjectType(parent) || isInterfaceType(parent) ? parent.getFields()[sel.name.value] : undefined;
          if (sel.selectionSet) {
            const inner = measure(sel.selectionSet, field && getNamedType(field.type), depth + 1, seen);
            maxSeen = Math.max(maxSeen, inner.depth);
            cost += 1 + (field ? fetchCount(field, sel, parent) : 1) * inner.cost;
            aliases += inner.aliases;
          } else {
            cost += 1;
          }
        } else if (sel.kind === Kind.INLINE_FRAGMENT) {
          const inner = measure(sel.selectionSet, sel.typeCondition ? schema.getType(sel.typeCondition.name.value) : parent, depth, seen);
          maxSeen = Math.max(maxSeen, inner.depth);
          cost += inner.cost;
          aliases += inner.aliases;
        } else {
          const fragment = fragments.get(sel.name.value);
          if (!fragment || seen.has(sel.name.value)) continue;
          const inner = measure(fragment.selectionSet, schema.getType(fragment.typeCondition.name.value), depth, new Set([...seen, sel.name.value]));
          maxSeen = Math.max(maxSeen, inner.depth);
          cost += inner.cost;
          aliases += inner.aliases;
        }
      }
      return { depth: maxSeen, cost, aliases };
    };

    return {
      OperationDefinition(node) {
        const { depth, cost, aliases } = measure(node.selectionSet, schema.getRootType(node.operation) ?? undefined, 1, new Set());
        if (depth > maxDepth) {
          context.reportError(new GraphQLError(`Query is too deep: depth ${depth} exceeds the limit of ${maxDepth}`, { extensions: { code: 'VALIDATION_ERROR' } }));
        }
        if (cost > maxCost) {
          context.reportError(new GraphQLError(`Query is too expensive: cost ${cost} exceeds the limit of ${maxCost}`, { extensions: { code: 'VALIDATION_ERROR' } }));
        }
        if (aliases > maxAliases) {
          context.reportError(new GraphQLError(`Query has too many aliases: ${aliases} exceeds the limit of ${maxAliases}`, { extensions: { code: 'VALIDATION_ERROR' } }));
        }
      },
    };
  };
}
