import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Scope } from '../../entities/role.js';
import type { ActorType } from '../../entities/audit-log.js';
import type { AppError } from '../errors.js';
import type { Logger } from '../logger.js';
import type { Runtime } from '../runtime.js';
import { Loaders } from './loaders.js';

/** The kinds of caller: each is authenticated in src/auth and named by audit rows and policy decisions. */
export type PrincipalKind = Principal['kind'];

/** What every principal carries: its tenant (scope, organization, partner) and what it was granted. */
interface PrincipalBase {
  /** user id, API key id, device id (an agent), portal user id, plugin installation id, or `system` */
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
  /** users and API keys: their role's grants (wildcards expand); other kinds: exactly these permissions, nothing implied */
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

/** The device an agent token belongs to (src/auth/agent.ts). */
export interface AgentIdentity {
  deviceId: string;
  agentId: string;
  /** SHA-256 of the token it authenticated with: a replaced token ends what was opened with it (the agent channel) */
  tokenHash: string;
  orgId: string;
  siteId: string | null;
}

/**
 * Who is calling, resolved once per request from a JWT, an API key, an agent token, or the system
 * itself. `portalUser` and `plugin` are defined ahead of their domains: no credential makes them yet,
 * every route refuses them (401) and `authorize` grants them only what `permissions` lists.
 */
export type Principal =
  | (PrincipalBase & { kind: 'user' | 'apiKey' | 'system' })
  | (PrincipalBase & { kind: 'agent'; agent: AgentIdentity })
  | (PrincipalBase & { kind: 'portalUser'; portal: { orgId: string } })
  | (PrincipalBase & { kind: 'plugin'; plugin: { pluginId: string; orgId: string | null } });

/** What an agent route's request says it is, not yet checked: the path's agent and the SHA-256 of its Bearer token. */
export interface AgentClaim {
  agentId: string;
  tokenHash: string;
}

export type SessionMethod = 'password' | 'sso';

export interface RequestMeta {
  requestId: string;
  ip: string | null;
  userAgent: string | null;
  /** credentials were sent but refused: raised by the first operation that needs a caller, so public ones still work */
  authError: AppError | null;
  /** an agent token was presented (its SHA-256): only the agent routes take it, checked against their path's agent (src/auth/agent.ts) */
  agentTokenHash: string | null;
}

/**
 * The request's caller, shared by every copy of one request's context. An agent route's caller
 * starts as a claim and becomes its agent once the claim is verified (`src/auth/agent.ts`), which the
 * heartbeat's shared statement does in the same statement that records the report.
 */
class Caller {
  claim: AgentClaim | null = null;

  constructor(public principal: Principal | null) {}
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
    private readonly caller: Caller,
    readonly meta: RequestMeta,
    private readonly requestLog: RequestLog,
    readonly mark: AuthorizationMark,
    readonly loaders: Loaders,
    private readonly commitHooks: CommitHooks,
    private readonly deniedAttempts: DeniedAttempt[],
  ) {}

  static create(runtime: Runtime, principal: Principal | null, meta: Partial<RequestMeta> = {}): RequestContext {
    const em = runtime.orm.em.fork() as EntityManager;
    const full: RequestMeta = {
      requestId: meta.requestId ?? randomUUID(),
      ip: meta.ip ?? null,
      userAgent: meta.userAgent ?? null,
      authError: meta.authError ?? null,
      agentTokenHash: meta.agentTokenHash ?? null,
    };
    return new RequestContext(runtime, em, new Caller(principal), full, new RequestLog(runtime.log, full.requestId), new AuthorizationMark(), new Loaders(em), new CommitHooks(), []);
  }

  /** Who is calling; null for anonymous requests and for an agent route's claim not yet verified. */
  get principal(): Principal | null {
    return this.caller.principal;
  }

  /** An agent route's unverified claim (`claimAgent`, src/auth/agent.ts). */
  get agentClaim(): AgentClaim | null {
    return this.caller.claim;
  }

  /** Binds the presented agent token to the route's agent. Only src/auth/agent.ts calls it. */
  claimAgent(claim: AgentClaim): void {
    if (this.caller.principal || this.caller.claim) throw new Error('The request already has a caller');
    this.caller.claim = claim;
  }

  /**
   * The request acts as this agent from here on (its copies too). Only src/auth/agent.ts calls it, with
   * a device read for the claim's token (or, at enrollment, the device the enrollment key enrolled).
   */
  admitAgent(principal: Extract<Principal, { kind: 'agent' }>): void {
    const current = this.caller.principal;
    if (current && !(current.kind === 'agent' && current.id === principal.id && current.agent.tokenHash === principal.agent.tokenHash)) throw new Error('The request already has a caller');
    const claim = this.caller.claim;
    if (claim && (claim.agentId !== principal.agent.agentId || claim.tokenHash !== principal.agent.tokenHash)) throw new Error('The agent does not answer the claim');
    this.caller.principal = principal;
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
    const copy = new RequestContext(this.runtime, em, this.caller, this.meta, this.requestLog, this.mark, new Loaders(em), this.commitHooks, this.deniedAttempts);
    copy.orgPartnerCache = this.orgPartnerCache;
    return copy;
  }

  /** The same request with a fresh authorization mark: one GraphQL field resolution must make its own decision. */
  forField(): RequestContext {
    const copy = new RequestContext(this.runtime, this.em, this.caller, this.meta, this.requestLog, new AuthorizationMark(), this.loaders, this.commitHooks, this.deniedAttempts);
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
    return this.principal ? ACTOR_TYPES[this.principal.kind] : 'anonymous';
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

const ACTOR_TYPES: Record<PrincipalKind, ActorType> = { user: 'user', apiKey: 'api_key', agent: 'agent', portalUser: 'portal_user', plugin: 'plugin', system: 'system' };

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
