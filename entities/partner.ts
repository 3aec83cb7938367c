import { Entity, Property } from '@mikro-orm/core';
import { BaseEntity } from './base.js';

/** An MSP: owns organizations. */
@Entity()
export class Partner extends BaseEntity<'status' | 'requireMfa' | 'settings'> {
  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'string', length: 20 })
  status: 'active' | 'suspended' = 'active';

  @Property({ type: 'boolean' })
  requireMfa = false;

  @Property({ type: 'json' })
  settings: Record<string, unknown> = {};
}
