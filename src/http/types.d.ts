import type { RequestContext } from '../auth/context.js';
import type { AppError } from '../errors.js';

declare global {
  namespace Express {
    interface Request {
      /** the request's context, built by the API's authentication middleware */
      ctx: RequestContext;
      requestId: string;
      /** why the credentials sent were refused (raised only by routes that need a caller) */
      authError: AppError | null;
    }
  }
}
