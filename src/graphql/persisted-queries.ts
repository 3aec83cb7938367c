import type { MikroORM } from '@mikro-orm/postgresql';
import { preparedRows, statement } from '../db/prepared.js';
import { AppError } from '../errors.js';
import { persistedQueryKey, sha256Hex } from '../services/platform/trusted-documents.js';

const READ = statement('select query, trusted from persisted_query where key = ?');
// Kept only while the table holds fewer than the configured number of registrations: one costs
// nothing to send, so the table must not grow without bound; past the cap the query still runs, sent
// in full. Trusted documents (imported) are not counted. A registration never changes a row, so it
// never makes a document trusted.
const KEEP = statement(`insert into persisted_query (key, query)
  select ?, ? where (select count(*) from persisted_query where not trusted) < ? on conflict (key) do nothing`);
const FORGET = statement('delete from persisted_query where key = ? and not trusted');

/** How many queries each instance keeps in memory in front of the table. */
const REMEMBERED = 1000;

interface Known {
  query: string;
  trusted: boolean;
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
    private readonly max: number,
    private readonly trustedOnly: boolean,
  ) {}

  async get(key: string): Promise<string | undefined> {
    const known = await this.lookup(key);
    return known && (known.trusted || !this.trustedOnly) ? known.query : undefined;
  }

  async set(key: string, query: string): Promise<void> {
    if (this.trustedOnly) return;
    await preparedRows(this.orm, KEEP, [key, query, this.max]);
    this.remember(key, { query, trusted: false });
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

/**
 * What PERSISTED_QUERIES refuses of an operation before it runs: with `off`, the persistedQuery
 * extension; with `trusted`, any operation whose document (sent in full, or by hash) is not in an
 * imported manifest. Null when it may go on (Apollo then resolves a hash through the store).
 */
export async function persistedQueryRefusal(mode: 'off' | 'apq' | 'trusted', store: PersistedQueryStore, sent: SentOperation | null): Promise<AppError | null> {
  // A batch's entry may be any JSON value (`[null]`): Apollo answers what is not an operation 400.
  const operation = sent ?? {};
  const persisted = (operation.extensions as { persistedQuery?: { sha256Hash?: unknown } } | null | undefined)?.persistedQuery;
  if (mode === 'off') {
    return persisted
      ? new AppError(400, 'PERSISTED_QUERY_NOT_SUPPORTED', 'Persisted queries are turned off on this server: send the query text without the persistedQuery extension')
      : null;
  }
  if (mode === 'apq') return null;
  const hash = typeof operation.query === 'string' && operation.query ? sha256Hex(operation.query) : persisted?.sha256Hash;
  if (typeof hash === 'string' && (await store.isTrusted(hash))) return null;
  return new AppError(400, 'PERSISTED_QUERY_NOT_ALLOWED', 'Only trusted documents run on this server: this operation is not in the trusted manifest');
}
