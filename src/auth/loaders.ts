import DataLoader from 'dataloader';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { EntityClass } from '@mikro-orm/core';

/** Per-request DataLoaders, one per entity class, batching look-ups by id (GraphQL field resolvers use them). */
export class Loaders {
  private byClass = new Map<EntityClass<unknown>, DataLoader<string, unknown>>();

  constructor(private readonly em: EntityManager) {}

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
