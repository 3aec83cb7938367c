import type { MikroORM } from '@mikro-orm/postgresql';
import { preparedRows, statement } from '../db/prepared.js';
import { AppError, badRequest } from '../errors.js';
import type { Clock } from '../runtime.js';
import { persistedQueryKey, sha256Hex } from '../services/platform/trusted-documents.js';

const READ = statement('select query, trusted from persisted_query where key = ?');
// At most the configured number of registrations are kept: one costs nothing to send, so the table
// must not grow without bound. A new one evicts the least recently used (so clients' queries in use
// stay, whatever else is sent); trusted documents (imported) are neither counted nor evicted. A
// registration changes no row but its last use, so it never makes a document trusted.
const KEEP = statement(`with evicted as (
    delete from persisted_query where key in (
      select key from persisted_query where not trusted order by last_used_at
      limit greatest(0, (select count(*) from persisted_query where not trusted) - ? + 1)))
  insert into persisted_query (key, query) values (?, ?) on conflict (key) do update set last_used_at = now()`);
const TOUCH = statement('update persisted_query set last_used_at = now() where key = ? and not trusted');
const FORGET = statement('delete from persisted_query where key = ? and not trusted');

/** The largest document kept, as for trusted documents (`importTrustedDocuments`): a longer one runs when sent in full. */
export const MAX_PERSISTED_QUERY_CHARS = 100_000;

/** How often an instance records that a registration is still used (its rank for eviction): hourly, not a write per hit. */
const TOUCH_EVERY_MS = 3_600_000;

/** How many queries each instance keeps in memory in front of the table. */
const REMEMBERED = 1000;

interface Known {
  query: string;
  trusted: boolean;
  /** when this instance last recorded a use (registrations only) */
  touchedAt?: number;
}

/**
 * Apollo's automatic persisted queries (the mobile app's) and the trusted documents of imported
 * manifests (`importTrustedDocuments`), kept in PostgreSQL so that a hash registered or imported
 * through one instance is known to every other, with the most recent in memory. Apollo keeps only
 * queries that passed validation, under keys it derives from their SHA-256 (`persistedQueryKey`), so
 * an entry never goes stale: nothing expires. With `trustedOnly` (PERSISTED_QUERIES=trusted) it
 * answers only trusted documents and keeps no registration.
 */
export class PersistedQueryStore {
  private readonly recent = new Map<string, Known>();

  constructor(
    private readonly orm: MikroORM,
    private readonly clock: Clock,
    private readonly max: number,
    private readonly trustedOnly: boolean,
  ) {}

  async get(key: string): Promise<string | undefined> {
    const known = await this.lookup(key);
    if (!known || (!known.trusted && this.trustedOnly)) return undefined;
    const now = this.clock.now().getTime();
    if (!known.trusted && (known.touchedAt === undefined || now - known.touchedAt >= TOUCH_EVERY_MS)) {
      known.touchedAt = now;
      await preparedRows(this.orm, TOUCH, [key]);
    }
    return known.query;
  }

  async set(key: string, query: string): Promise<void> {
    if (this.trustedOnly || this.max === 0 || query.length > MAX_PERSISTED_QUERY_CHARS) return;
    await preparedRows(this.orm, KEEP, [this.max, key, query]);
    this.remember(key, { query, trusted: false, touchedAt: this.clock.now().getTime() });
  }

  async delete(key: string): Promise<void> {
    this.recent.delete(key);
    await preparedRows(this.orm, FORGET, [key]);
  }

  /** Whether an imported manifest lists the document of this hash. */
  async isTrusted(hash: string): Promise<boolean> {
    return (await this.lookup(persistedQueryKey(hash)))?.trusted ?? false;
  }

  /**
   * Trusted-only, a row not (yet) trusted is not remembered: a manifest imported through any instance
   * may list it next.
   */
  private async lookup(key: string): Promise<Known | undefined> {
    const remembered = this.recent.get(key);
    if (remembered) return remembered;
    const [row] = await preparedRows<Known>(this.orm, READ, [key]);
    if (row && (row.trusted || !this.trustedOnly)) this.remember(key, row);
    return row;
  }

  private remember(key: string, known: Known): void {
    this.recent.delete(key);
    this.recent.set(key, known);
    if (this.recent.size > REMEMBERED) this.recent.delete(this.recent.keys().next().value!);
  }
}

/** One operation as a client sent it (an HTTP request's, or a graphql-ws subscribe's payload). */
export interface SentOperation {
  query?: unknown;
  extensions?: unknown;
}

/** The persistedQuery extension's hash of an operation, if it sent one. */
function persistedHash(operation: SentOperation): unknown {
  return (operation.extensions as { persistedQuery?: { sha256Hash?: unknown } } | null | undefined)?.persistedQuery?.sha256Hash;
}

/** Whether an operation registers an automatic persisted query: its text sent with its hash. */
export function isRegistration(sent: SentOperation | null): boolean {
  return typeof sent?.query === 'string' && sent.query !== '' && persistedHash(sent) !== undefined;
}

/**
 * What PERSISTED_QUERIES refuses of an operation before it runs: with `off`, the persistedQuery
 * extension; a text sent with a hash that is not its SHA-256 (400 VALIDATION_ERROR, Apollo's
 * PERSISTED_QUERY_HASH_MISMATCH); with `trusted`, any operation whose document (sent in full, or by
 * hash) is not in an imported manifest. Null when it may go on (Apollo then resolves a hash through
 * the store).
 */
export async function persistedQueryRefusal(mode: 'off' | 'apq' | 'trusted', store: PersistedQueryStore, sent: SentOperation | null): Promise<AppError | null> {
  // A batch's entry may be any JSON value (`[null]`): Apollo answers what is not an operation 400.
  const operation = sent ?? {};
  const persisted = (operation.extensions as { persistedQuery?: unknown } | null | undefined)?.persistedQuery;
  if (mode === 'off') {
    return persisted
      ? new AppError(400, 'PERSISTED_QUERY_NOT_SUPPORTED', 'Persisted queries are turned off on this server: send the query text without the persistedQuery extension')
      : null;
  }
  const sentHash = persistedHash(operation);
  const textHash = typeof operation.query === 'string' && operation.query ? sha256Hex(operation.query) : undefined;
  if (textHash !== undefined && sentHash !== undefined && sentHash !== textHash) {
    return badRequest('PERSISTED_QUERY_HASH_MISMATCH: the persistedQuery sha256Hash is not the SHA-256 of the query sent');
  }
  if (mode === 'apq') return null;
  const hash = textHash ?? sentHash;
  if (typeof hash === 'string' && (await store.isTrusted(hash))) return null;
  return new AppError(400, 'PERSISTED_QUERY_NOT_ALLOWED', 'Only trusted documents run on this server: this operation is not in the trusted manifest');
}
