import 'reflect-metadata';
import { buildSchema, type MiddlewareFn } from 'type-graphql';
import type { GraphQLSchema } from 'graphql';
import { resolvers } from '../../resolvers/index.js';
import type { PgPubSub } from '../events/pubsub.js';
import type { GraphqlContext } from './context.js';
import { dropNullsTheSchemaRefuses } from './contract.js';

/** Backstop: a root field whose service made no access decision fails instead of answering. */
const requireAccessDecision: MiddlewareFn<GraphqlContext> = async ({ context, info }, next) => {
  const root = info.parentType.name;
  const result = await next();
  if ((root === 'Query' || root === 'Mutation') && !context.ctx.mark.checked) {
    throw new Error(`${root}.${info.fieldName} answered without an access decision (authorize or skipAuthorization)`);
  }
  return result;
};

export async function buildGraphqlSchema(pubSub: Pick<PgPubSub, 'publish' | 'subscribe'>): Promise<GraphQLSchema> {
  return buildSchema({
    resolvers: resolvers as never,
    pubSub,
    validate: false,
    validateFn: (value) => dropNullsTheSchemaRefuses(value),
    globalMiddlewares: [requireAccessDecision],
    emitSchemaFile: false,
  });
}
