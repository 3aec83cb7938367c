import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Scope } from '../../entities/role.js';
import type { ActorType } from '../../entities/audit-log.js';
import type { AppError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Runtime } from '../runtime.js';
import { Loaders } from './loaders.js';

/** Who is calling, resolved once per request from a JWT, an API key, or the system itself. */
export interface Principal {
  kind: 'user' | 'apiKey' | 'system';
  /** user id, API key id, or `system` */
  id: string;
  userId: string | null;
  email: string | null;
  membershipId: string | null;
  scope: Scope;
  partnerId: string | null;
  orgId: string | null;
  /** partner memberships: all organizations of the partner, or only `orgIds` */
  orgAccess: 'all' | 'selected';
  orgIds: string[];
  /** organization memberships: restricted to these sites when non-empty */
  siteIds: string[];
  roleId: string | null;
  permissions: string[];
  /** the session was established with a second factor */
  mfa: boolean;
  /** the role, organization or partner requires MFA for everything */
  mfaForced: boolean;
  /** the login session (refresh-token family) of a bearer token; null for API keys and the system */
  sessionId: string | null;
  /** how that session signed in: an SSO session acts in its provider's organization only */
  sessionMethod: SessionMethod | null;
}

export type SessionMethod = 'password' | 'sso';

export interface RequestMeta {
  requestId: string;
  ip: string | null;
  userAgent: string | null;
  /** credentials were sent but refused: raised by the first operation that needs a caller, so public ones still work */
  authError: AppError | null;
}

/**
 * Marked by authorize()/skipAuthorization(); shared by every copy of one request's context, except that
 * each GraphQL field resolution gets its own (`forField`), so one field's decision cannot cover another's.
 */
class AuthorizationMark {
  checked = false;
  reason: string | null = null;
}

/** The request's child logger, made on first use (most requests log only their access line, written by the HTTP layer); shared by every copy. */
class RequestLog {
  private made: Logger | null = null;

  constructor(
    private readonly parent: Logger,
    private readonly requestId: string,
  ) {}

  get log(): Logger {
    return (this.made ??= this.parent.child({ reqId: this.requestId }));
  }
}

/** Work to run once the surrounding transaction has committed; shared by every copy of one request's context. */
class CommitHooks {
  pending: (() => unknown)[] = [];
}

/** A refused authorization, as the policy reports it to the audit trail. */
export interface DeniedAttempt {
  permission: string;
  reason: 'missing_permission' | 'mfa_required';
  orgId: string | null;
  partnerId: string | null;
  resource: string | null;
}

/**
 * Everything a service method needs: the caller, a request-scoped EntityManager, loaders and a
 * logger. REST, GraphQL (HTTP and WebSocket) and jobs all build it through the same constructors.
 */
export class RequestContext {
  private orgPartnerCache = new Map<string, Promise<string | null>>();

  private constructor(
    readonly runtime: Runtime,
    readonly em: EntityManager,
    readonly principal: Principal | null,
    readonly meta: RequestMeta,
    private readonly requestLog: RequestLog,
    readonly mark: AuthorizationMark,
    readonly loaders: Loaders,
    private readonly commitHooks: CommitHooks,
    private readonly deniedAttempts: DeniedAttempt[],
  ) {}

  static create(runtime: Runtime, principal: Principal | null, meta: Partial<RequestMeta> = {}): RequestContext {
    const em = runtime.orm.em.fork() as EntityManager;
    const full: RequestMeta = { requestId: meta.requestId ?? randomUUID(), ip: meta.ip ?? null, userAgent: meta.userAgent ?? null, authError: meta.authError ?? null };
    return new RequestContext(runtime, em, principal, full, new RequestLog(runtime.log, full.requestId), new AuthorizationMark(), new Loaders(em), new CommitHooks(), []);
  }

  /** The request's logger (its lines carry the request id). */
  get log(): Logger {
    return this.requestLog.log;
  }

  /** The service acting on its own behalf (jobs, sweeps, bootstrap). */
  static system(runtime: Runtime, reason: string): RequestContext {
    const ctx = RequestContext.create(runtime, systemPrincipal(), { requestId: `system:${reason}:${randomUUID()}` });
    // Jobs and sweeps act for the service itself: the reason they were started is their access decision.
    ctx.mark.checked = true;
    ctx.mark.reason = reason;
    return ctx;
  }

  /** The same request on another EntityManager (a transaction); the authorization mark is shared. */
  withEm(em: EntityManager): RequestContext {
    const copy = new RequestContext(this.runtime, em, this.principal, this.meta, this.requestLog, this.mark, new Loaders(em), this.commitHooks, this.deniedAttempts);
    copy.orgPartnerCache = this.orgPartnerCache;
    return copy;
  }

  /** The same request with a fresh authorization mark: one GraphQL field resolution must make its own decision. */
  forField(): RequestContext {
    const copy = new RequestContext(this.runtime, this.em, this.principal, this.meta, this.requestLog, new AuthorizationMark(), this.loaders, this.commitHooks, this.deniedAttempts);
    copy.orgPartnerCache = this.orgPartnerCache;
    return copy;
  }

  /**
   * Runs `hook` after the transaction commits (never if it rolls back): work outside the database,
   * such as queueing jobs, that must not see uncommitted rows. A crash in between loses the hook,
   * so what it starts must also be recoverable from the committed rows.
   */
  afterCommit(hook: () => unknown): void {
    if (!this.em.isInTransaction()) throw new Error('afterCommit outside a transaction: wrap the write in withTransaction()');
    this.commitHooks.pending.push(hook);
  }

  /** How many hooks are queued: a savepoint that rolls back drops the hooks added after it (`dropCommitHooksAfter`). */
  commitHookCount(): number {
    return this.commitHooks.pending.length;
  }

  dropCommitHooksAfter(count: number): void {
    this.commitHooks.pending.length = count;
  }

  /** Runs the queued hooks concurrently; a failing hook is logged and does not affect the others. */
  async runCommitHooks(): Promise<void> {
    const hooks = this.commitHooks.pending.splice(0);
    await Promise.all(
      hooks.map((hook) => Promise.resolve().then(hook).catch((error: Error) => this.log.error({ err: error.message }, 'after-commit work failed'))),
    );
  }

  /** Holds a denied attempt seen inside a transaction until it has ended (see `recordQueuedDenials` in src/auth/policy.ts). */
  queueDenied(attempt: DeniedAttempt): void {
    this.deniedAttempts.push(attempt);
  }

  takeQueuedDenials(): DeniedAttempt[] {
    return this.deniedAttempts.splice(0);
  }

  get actorType(): ActorType {
    if (!this.principal) return 'anonymous';
    return this.principal.kind === 'apiKey' ? 'api_key' : this.principal.kind;
  }

  /** Partner of an organization, cached for the request (null when the organization does not exist). */
  partnerOfOrg(orgId: string): Promise<string | null> {
    let partnerId = this.orgPartnerCache.get(orgId);
    if (!partnerId) {
      // The promise is kept, so decisions made at once (a page's field resolvers) share one look-up, batched with the others.
      partnerId = this.loaders.partnerOfOrg.load(orgId);
      this.orgPartnerCache.set(orgId, partnerId);
      partnerId.catch(() => this.orgPartnerCache.delete(orgId));
    }
    return partnerId;
  }
}

export function systemPrincipal(): Principal {
  return {
    kind: 'system',
    id: 'system',
    userId: null,
    email: null,
    membershipId: null,
    scope: 'system',
    partnerId: null,
    orgId: null,
    orgAccess: 'all',
    orgIds: [],
    siteIds: [],
    roleId: null,
    permissions: ['*'],
    mfa: true,
    mfaForced: false,
    sessionId: null,
    sessionMethod: null,
  };
}
