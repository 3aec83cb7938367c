import type { RequestContext } from '../auth/context.js';

/** What every resolver receives: the same RequestContext the REST adapter builds. */
export interface GraphqlContext {
  ctx: RequestContext;
}
