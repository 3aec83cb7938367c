import { randomUUID } from 'node:crypto';
import { OptionalProps, PrimaryKey, Property } from '@mikro-orm/core';

/** uuid key and timestamps shared by every table. */
export abstract class BaseEntity<Defaulted extends string = never> {
  /** properties with defaults: optional in `em.create` */
  [OptionalProps]?: 'id' | 'createdAt' | 'updatedAt' | Defaulted;

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();

  @Property({ type: 'timestamptz', onUpdate: () => new Date() })
  updatedAt: Date = new Date();
}
