import type { EntityManager } from '@mikro-orm/postgresql';
import type { RequestContext } from '../auth/context.js';

/**
 * Runs `fn` in one transaction. `tx` is the same request on a transactional EntityManager, so
 * service calls made with it join the transaction instead of opening another.
 */
export async function withTransaction<T>(ctx: RequestContext, fn: (tx: RequestContext) => Promise<T>): Promise<T> {
  if (ctx.em.isInTransaction()) return fn(ctx);
  return ctx.em.transactional((em) => fn(ctx.withEm(em as EntityManager)));
}
