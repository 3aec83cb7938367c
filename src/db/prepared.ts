import { createHash } from 'node:crypto';
import type { EntityManager, MikroORM } from '@mikro-orm/postgresql';

/** A statement PostgreSQL prepares once per connection (parsed and planned once, then only bound and run). */
export interface PreparedStatement {
  readonly name: string;
  readonly text: string;
}

const statements = new Map<string, PreparedStatement>();

/**
 * The prepared statement of `sql`, whose parameters are written `?` (numbered `$1…` in order here;
 * so the text must not use PostgreSQL's `?` operators), named after its text. A statement is a shape:
 * values, lists included (`= any(?::uuid[])`), are parameters, never spliced into the text, so a
 * service has a handful of statements, each prepared once per pooled connection.
 */
export function statement(sql: string): PreparedStatement {
  let known = statements.get(sql);
  if (!known) {
    let n = 0;
    const text = sql.replace(/\?/g, () => `$${++n}`);
    known = { name: `s_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`, text };
    statements.set(sql, known);
  }
  return known;
}

interface PgConnection {
  query(config: { name: string; text: string; values: unknown[] }): Promise<{ rows: unknown[] }>;
}

interface ConnectionSource {
  acquireConnection(): Promise<PgConnection>;
  releaseConnection(connection: PgConnection): Promise<unknown>;
}

async function run<T>(source: ConnectionSource, prepared: PreparedStatement, values: unknown[]): Promise<T[]> {
  const connection = await source.acquireConnection();
  try {
    const result = await connection.query({ name: prepared.name, text: prepared.text, values });
    return result.rows as T[];
  } finally {
    await source.releaseConnection(connection);
  }
}

/**
 * Runs a prepared statement on a connection of the ORM's pool, outside any EntityManager and any
 * transaction: rows as the `pg` driver returns them with the ORM's type parsers (jsonb parsed,
 * timestamps as PostgreSQL's text), no entities, no identity map. For reads of committed state on the
 * hottest path (the request's principal).
 */
export function preparedRows<T>(orm: MikroORM, prepared: PreparedStatement, values: unknown[]): Promise<T[]> {
  return run<T>(orm.em.getConnection().getKnex().client as unknown as ConnectionSource, prepared, values);
}

/**
 * `preparedRows` for a request's EntityManager: inside its transaction, on the transaction's
 * connection (so the read sees the transaction's own writes); otherwise on the pool. For reads that
 * only show rows (views built from them, no entities).
 */
export function requestRows<T>(em: EntityManager, prepared: PreparedStatement, values: unknown[]): Promise<T[]> {
  const knex = em.getTransactionContext<ReturnType<EntityManager['getKnex']>>() ?? em.getConnection().getKnex();
  return run<T>(knex.client as unknown as ConnectionSource, prepared, values);
}
