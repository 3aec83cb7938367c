import { decodeJwt } from 'jose';
import { authenticate, type Credentials } from '../auth/authenticate.js';
import type { Principal } from '../auth/context.js';
import { AppError, forbidden, unauthenticated } from '../errors.js';
import { DOMAIN_EVENT_TOPIC } from '../events/dispatcher.js';
import type { DomainEvent, DomainEventMap, DomainEventType } from '../events/types.js';
import type { Runtime } from '../runtime.js';

/** graphql-ws's Forbidden: the code a connection refused at connection_init also gets. */
export const REVOKED_CLOSE_CODE = 4403;
const REVOKED = 'Forbidden: credentials revoked';
const EXPIRED = 'Forbidden: access token expired';
// A few re-checks at a time: a sweep over thousands of sockets must not take every database connection.
const CONCURRENCY = 4;
// setTimeout's ceiling (~24.8 days); a token that lives longer is left to the periodic re-check.
const MAX_TIMER_MS = 2 ** 31 - 1;

/** Committed events that may take access away, and the index key of the sockets they concern. */
const AFFECTED: { [T in DomainEventType]?: (data: DomainEventMap[T]) => string } = {
  'user.logout': (d) => `user:${d.userId}`,
  'user.password_changed': (d) => `user:${d.userId}`,
  'user.updated': (d) => `user:${d.userId}`,
  'user.role_changed': (d) => `user:${d.userId}`,
  'user.deleted': (d) => `user:${d.userId}`,
  'user.membership_accepted': (d) => `user:${d.userId}`,
  'api_key.revoked': (d) => `apiKey:${d.apiKeyId}`,
  // Rescoped or given an earlier expiry; rotated: the key the socket presented stops working at once.
  'api_key.updated': (d) => `apiKey:${d.apiKeyId}`,
  'api_key.rotated': (d) => `apiKey:${d.apiKeyId}`,
  'role.updated': (d) => `role:${d.roleId}`,
  'role.deleted': (d) => `role:${d.roleId}`,
  'organization.updated': (d) => `org:${d.orgId}`,
  'organization.deleted': (d) => `org:${d.orgId}`,
  'partner.updated': (d) => `partner:${d.partnerId}`,
  'partner.deleted': (d) => `partner:${d.partnerId}`,
};

function keysOf(p: Principal): string[] {
  return [`user:${p.userId}`, `role:${p.roleId}`, ...(p.orgId ? [`org:${p.orgId}`] : []), ...(p.partnerId ? [`partner:${p.partnerId}`] : []), ...(p.kind === 'apiKey' ? [`apiKey:${p.id}`] : [])];
}

/** What the connection may do and see: any change (role, permissions, scope, reach, MFA) ends it; the email is not access. */
function accessOf(p: Principal): string {
  return JSON.stringify({ ...p, email: null });
}

export interface SocketSession {
  readonly credentials: Credentials;
  readonly access: string;
  readonly keys: string[];
  readonly close: (reason: string) => void;
  /** when the bearer token expires (epoch ms), by its `exp` */
  readonly expiresAt: number | null;
  expiry: NodeJS.Timeout | null;
}

/**
 * Keeps authenticated graphql-ws connections to what their credentials still grant. A committed
 * event that may revoke access (logout, password change, user/role/organization/partner changes,
 * API key revocation) reaches every instance over LISTEN/NOTIFY and re-authenticates only the
 * sockets it concerns; a bearer socket closes when its token expires, without a query; a periodic
 * sweep re-authenticates every socket, for revocations that emit no event (refresh-token reuse, an
 * API key's expiry) and notifications lost while the listener reconnected. Expiry is read on the
 * runtime's clock: the token's own timer, and every re-check (sweep or subscribe).
 */
export class SocketSessions {
  private readonly sessions = new Set<SocketSession>();
  private readonly byKey = new Map<string, Set<SocketSession>>();
  private readonly queue = new Set<SocketSession>();
  private readonly workers = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | null = null;
  private off: (() => void) | null = null;
  private stopped = false;

  constructor(
    private readonly runtime: Runtime,
    private readonly recheckMs: number,
  ) {}

  start(): void {
    this.off = this.runtime.pubsub.on(DOMAIN_EVENT_TOPIC, (event) => {
      const key = AFFECTED[(event as DomainEvent).type]?.((event as DomainEvent).data as never);
      const hit = key ? this.byKey.get(key) : undefined;
      if (hit) this.recheck(hit);
    });
    this.timer = setInterval(() => this.recheck(this.sessions), this.recheckMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.off?.();
    if (this.timer) clearInterval(this.timer);
    for (const session of this.sessions) this.forget(session);
    this.queue.clear();
    await Promise.all(this.workers);
  }

  /** Tracks a connection that authenticated as `principal`; `close` ends it with REVOKED_CLOSE_CODE. */
  open(credentials: Credentials, principal: Principal, close: (reason: string) => void): SocketSession {
    // The token authenticate() took (and verified), so its expiry can be read without verifying again.
    const token = /^Bearer\s+(.+)$/i.exec(credentials.authorization ?? '')?.[1]?.trim();
    const exp = token ? decodeJwt(token).exp : undefined;
    const session: SocketSession = { credentials, access: accessOf(principal), keys: keysOf(principal), close, expiresAt: exp === undefined ? null : exp * 1000, expiry: null };
    this.sessions.add(session);
    for (const key of session.keys) {
      const set = this.byKey.get(key) ?? new Set();
      set.add(session);
      this.byKey.set(key, set);
    }
    const wait = session.expiresAt === null ? null : session.expiresAt - this.runtime.clock.now().getTime();
    if (wait !== null && wait <= MAX_TIMER_MS) {
      session.expiry = setTimeout(() => this.revoke(session, EXPIRED), Math.max(0, wait));
      session.expiry.unref();
    }
    return session;
  }

  /** The connection has closed. */
  forget(session: SocketSession): void {
    if (!this.sessions.delete(session)) return;
    if (session.expiry) clearTimeout(session.expiry);
    this.queue.delete(session);
    for (const key of session.keys) {
      const set = this.byKey.get(key);
      set?.delete(session);
      if (set?.size === 0) this.byKey.delete(key);
    }
  }

  /** Closes the connection, unless it was closed already; why: its token expired, else its credentials were revoked. */
  revoke(session: SocketSession, reason = this.expired(session) ? EXPIRED : REVOKED): void {
    if (!this.sessions.has(session)) return;
    this.forget(session);
    session.close(reason);
  }

  /**
   * Re-runs authentication with the connection's credentials: null while they still grant what
   * they granted at connect, else why not. Anything but a refusal (the database is down) throws.
   */
  async refusal(session: SocketSession): Promise<AppError | null> {
    if (this.expired(session)) return unauthenticated('Invalid or expired access token');
    let principal: Principal | null;
    try {
      principal = await authenticate(this.runtime, session.credentials);
    } catch (error) {
      if (error instanceof AppError) return error;
      throw error;
    }
    return principal && accessOf(principal) === session.access ? null : forbidden('Your access has changed: connect again');
  }

  private expired(session: SocketSession): boolean {
    return session.expiresAt !== null && session.expiresAt <= this.runtime.clock.now().getTime();
  }

  /** Queues re-checks; a session already queued is checked once, one being checked is checked again. */
  private recheck(sessions: Iterable<SocketSession>): void {
    if (this.stopped) return;
    for (const session of sessions) this.queue.add(session);
    while (this.workers.size < CONCURRENCY && this.queue.size > 0) {
      const worker: Promise<void> = this.work().finally(() => {
        this.workers.delete(worker);
        this.recheck([]);
      });
      this.workers.add(worker);
    }
  }

  private async work(): Promise<void> {
    for (const session of this.queue) {
      this.queue.delete(session);
      try {
        if (await this.refusal(session)) this.revoke(session);
      } catch (error) {
        this.runtime.log.warn({ err: (error as Error).message }, 'WebSocket credentials re-check failed; the next sweep retries');
      }
      if (this.stopped) return;
    }
  }
}
