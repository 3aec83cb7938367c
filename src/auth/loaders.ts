import DataLoader from 'dataloader';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { EntityClass } from '@mikro-orm/core';

/** Per-request DataLoaders, one per entity class, batching look-ups by id (GraphQL field resolvers use them). */
export class Loaders {
  private byClass = new Map<EntityClass<unknown>, DataLoader<string, unknown>>();

  /** Each organization's partner (null when it does not exist): the organizations asked about together, in one statement. */
  readonly partnerOfOrg: DataLoader<string, string | null>;

  constructor(private readonly em: EntityManager) {
    // No cache here: RequestContext keeps the answers for the request (across its transactions too).
    this.partnerOfOrg = new DataLoader(
      async (orgIds) => {
        const rows = (await em.execute(`select id, partner_id from organization where id in (${orgIds.map(() => '?').join(', ')})`, [...orgIds])) as { id: string; partner_id: string }[];
        const partners = new Map(rows.map((r) => [r.id, r.partner_id]));
        return orgIds.map((id) => partners.get(id) ?? null);
      },
      { cache: false },
    );
  }

  byId<T extends { id: string }>(entity: EntityClass<T>): DataLoader<string, T | null> {
    let loader = this.byClass.get(entity as EntityClass<unknown>);
    if (!loader) {
      loader = new DataLoader<string, unknown>(async (ids) => {
        const rows = (await this.em.find(entity, { id: { $in: [...ids] } } as never)) as T[];
        const map = new Map(rows.map((r) => [r.id, r]));
        return ids.map((id) => map.get(id) ?? null);
      });
      this.byClass.set(entity as EntityClass<unknown>, loader);
    }
    return loader as DataLoader<string, T | null>;
  }
}
