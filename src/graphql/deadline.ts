import { isObjectType, type GraphQLSchema } from 'graphql';
import { AppError } from '../errors.js';
import type { GraphqlContext } from './context.js';

/** The answer to an operation past GRAPHQL_TIMEOUT_MS. */
export const timedOut = (ms: number) => new AppError(504, 'TIMEOUT', `The operation did not finish within ${ms} ms and was abandoned`);

/** Settles only when the signal aborts: rejected with its reason. */
export function rejectedOn(signal: AbortSignal): Promise<never> {
  return new Promise((_resolve, reject) => signal.addEventListener('abort', () => reject(signal.reason as Error), { once: true }));
}

/**
 * graphql-js cannot abort an execution: once its context's `signal` has aborted (the deadline), every
 * field with a resolver of its own (root fields and field resolvers, the ones that do work) throws
 * the signal's reason instead of running, so the rest of the operation is abandoned. Plain data
 * fields (graphql-js's default resolver) are left as they are, at no cost; Apollo's per-field plugin
 * hook would instrument every field of every request for this. Changes the schema's fields in place.
 */
export function abandonPastDeadline(schema: GraphQLSchema): void {
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__')) continue;
    for (const field of Object.values(type.getFields())) {
      const resolve = field.resolve;
      if (!resolve) continue;
      field.resolve = (source, args, context: GraphqlContext, info) => {
        if (context.signal?.aborted) throw context.signal.reason;
        return resolve(source, args, context, info);
      };
    }
  }
}
