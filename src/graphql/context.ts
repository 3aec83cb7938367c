import type { RequestContext } from '../auth/context.js';

/** What every resolver receives: the same RequestContext the REST adapter builds. */
export interface GraphqlContext {
  ctx: RequestContext;
  /** aborted once the operation is past GRAPHQL_TIMEOUT_MS (HTTP): its work is abandoned, the answer already given */
  signal?: AbortSignal;
}
