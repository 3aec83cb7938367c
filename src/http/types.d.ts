import type { RequestContext } from '../auth/context.js';

declare global {
  namespace Express {
    interface Request {
      /** the request's context, built by the API's authentication middleware */
      ctx: RequestContext;
      requestId: string;
    }
  }
}
