import type { MikroORM } from '@mikro-orm/postgresql';
import { preparedRows, statement } from '../db/prepared.js';

const READ = statement('select query from persisted_query where key = ?');
// Kept only while the table holds fewer than the configured number: a registration costs nothing to
// send, so the table must not grow without bound; past the cap the query still runs, sent in full.
const KEEP = statement(`insert into persisted_query (key, query)
  select ?, ? where (select count(*) from persisted_query) < ? on conflict (key) do nothing`);
const FORGET = statement('delete from persisted_query where key = ?');

/** How many queries each instance keeps in memory in front of the table. */
const REMEMBERED = 1000;

/**
 * Apollo's automatic persisted queries (the mobile app's), kept in PostgreSQL so that a hash
 * registered through one instance is known to every other, with the most recent in memory. Apollo
 * keeps only queries that passed validation, under keys it derives from their SHA-256, so an entry
 * never goes stale: nothing expires.
 */
export class PersistedQueryStore {
  private readonly recent = new Map<string, string>();

  constructor(
    private readonly orm: MikroORM,
    private readonly max: number,
  ) {}

  async get(key: string): Promise<string | undefined> {
    const known = this.recent.get(key);
    if (known !== undefined) return known;
    const [row] = await preparedRows<{ query: string }>(this.orm, READ, [key]);
    if (row) this.remember(key, row.query);
    return row?.query;
  }

  async set(key: string, query: string): Promise<void> {
    await preparedRows(this.orm, KEEP, [key, query, this.max]);
    this.remember(key, query);
  }

  async delete(key: string): Promise<void> {
    this.recent.delete(key);
    await preparedRows(this.orm, FORGET, [key]);
  }

  private remember(key: string, query: string): void {
    this.recent.delete(key);
    this.recent.set(key, query);
    if (this.recent.size > REMEMBERED) this.recent.delete(this.recent.keys().next().value!);
  }
}
