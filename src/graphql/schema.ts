import 'reflect-metadata';
import { buildSchema, type MiddlewareFn } from 'type-graphql';
import type { GraphQLSchema } from 'graphql';
import type { RequestContext } from '../auth/context.js';
import { domainResolvers } from '../domains.js';
import type { PgPubSub } from '../events/pubsub.js';
import type { GraphqlContext } from './context.js';
import { dropNullsTheSchemaRefuses } from './contract.js';

/**
 * Backstop: every field resolution that reaches for the request context (root fields, field resolvers)
 * gets its own authorization mark and fails when its service made no access decision. The mark is per
 * field, so a field resolver cannot ride on the decision its root field made; fields that never touch
 * the context (plain properties) only return what an authorized field already loaded, and do not run
 * it at all (their object types are declared `simpleResolvers`: graphql-js's default resolver).
 */
export const requireAccessDecision: MiddlewareFn<GraphqlContext> = async (action, next) => {
  const { context, info } = action;
  let fieldCtx: RequestContext | null = null;
  action.context = {
    ...context,
    get ctx() {
      return (fieldCtx ??= context.ctx.forField());
    },
  };
  const result = await next();
  if (fieldCtx && !(fieldCtx as RequestContext).mark.checked) {
    throw new Error(`${info.parentType.name}.${info.fieldName} answered without an access decision (authorize or skipAuthorization)`);
  }
  return result;
};

/** The root types' descriptions: type-graphql builds them without one. */
const ROOTS = {
  Query: 'Reads. Every list is a Relay connection (`first`/`after`); errors carry the REST error code in `extensions.code`.',
  Mutation: 'Writes, each answered as the REST route for it does (same rules, codes and audit entries).',
  Subscription: 'Live updates over graphql-ws, for the tenants the caller can see, from any server instance.',
} as const;

export async function buildGraphqlSchema(pubSub: Pick<PgPubSub, 'publish' | 'subscribe'>): Promise<GraphQLSchema> {
  const schema = await buildSchema({
    resolvers: domainResolvers as never,
    pubSub,
    validate: false,
    validateFn: (value) => dropNullsTheSchemaRefuses(value),
    globalMiddlewares: [requireAccessDecision],
    emitSchemaFile: false,
  });
  for (const root of [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()]) if (root) root.description = ROOTS[root.name as keyof typeof ROOTS];
  return schema;
}
