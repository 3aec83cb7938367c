import type { EntityManager } from '@mikro-orm/postgresql';
import type { RequestContext } from '../auth/context.js';
import { recordQueuedDenials } from '../auth/policy.js';

/**
 * Runs `fn` in one transaction, then the work it queued with `tx.afterCommit()`. `tx` is the same request on a transactional EntityManager, so
 * service calls made with it join the transaction instead of opening another. Denied attempts seen inside are recorded once it has ended,
 * whether it committed or not. A transaction whose request made no access decision rolls back instead of committing.
 */
export async function withTransaction<T>(ctx: RequestContext, fn: (tx: RequestContext) => Promise<T>): Promise<T> {
  if (ctx.em.isInTransaction()) return fn(ctx);
  let result: T;
  try {
    result = await ctx.em.transactional(async (em) => {
      const value = await fn(ctx.withEm(em as EntityManager));
      // Backstop before COMMIT: adapters check after the handler, by which time the writes would be kept.
      if (!ctx.mark.checked) throw new Error('transaction about to commit without an access decision (authorize or skipAuthorization)');
      return value;
    });
  } catch (error) {
    ctx.dropCommitHooksAfter(0);
    await recordQueuedDenials(ctx);
    throw error;
  }
  await ctx.runCommitHooks();
  await recordQueuedDenials(ctx);
  return result;
}
