import { GraphQLError, Kind, type ASTVisitor, type FragmentDefinitionNode, type SelectionSetNode, type ValidationContext } from 'graphql';

/**
 * Query depth and cost limits, as validation rules. Cost counts every selected field, multiplied
 * by the page size (`first`/`limit` argument) of the lists above it, so one query cannot ask for
 * a million nested rows.
 */
export function queryLimits(maxDepth: number, maxCost: number) {
  return (context: ValidationContext): ASTVisitor => {
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const def of context.getDocument().definitions) if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);

    const measure = (set: SelectionSetNode, depth: number, seen: Set<string>): { depth: number; cost: number } => {
      let maxSeen = depth;
      let cost = 0;
      for (const sel of set.selections) {
        if (sel.kind === Kind.FIELD) {
          if (sel.name.value.startsWith('__')) continue;
          const sizeArg = sel.arguments?.find((a) => a.name.value === 'first' || a.name.value === 'limit');
          const multiplier = sizeArg?.value.kind === Kind.INT ? Math.max(1, Number(sizeArg.value.value)) : sizeArg ? 100 : 1;
          if (sel.selectionSet) {
            const inner = measure(sel.selectionSet, depth + 1, seen);
            maxSeen = Math.max(maxSeen, inner.depth);
            cost += 1 + multiplier * inner.cost;
          } else {
            cost += 1;
          }
        } else if (sel.kind === Kind.INLINE_FRAGMENT) {
          const inner = measure(sel.selectionSet, depth, seen);
          maxSeen = Math.max(maxSeen, inner.depth);
          cost += inner.cost;
        } else {
          const fragment = fragments.get(sel.name.value);
          if (!fragment || seen.has(sel.name.value)) continue;
          const inner = measure(fragment.selectionSet, depth, new Set([...seen, sel.name.value]));
          maxSeen = Math.max(maxSeen, inner.depth);
          cost += inner.cost;
        }
      }
      return { depth: maxSeen, cost };
    };

    return {
      OperationDefinition(node) {
        const { depth, cost } = measure(node.selectionSet, 1, new Set());
        if (depth > maxDepth) {
          context.reportError(new GraphQLError(`Query is too deep: depth ${depth} exceeds the limit of ${maxDepth}`, { extensions: { code: 'VALIDATION_ERROR' } }));
        }
        if (cost > maxCost) {
          context.reportError(new GraphQLError(`Query is too expensive: cost ${cost} exceeds the limit of ${maxCost}`, { extensions: { code: 'VALIDATION_ERROR' } }));
        }
      },
    };
  };
}
