import { Entity, Index, ManyToOne, Property } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Partner } from './partner.js';

/** A customer of a partner: contains sites, devices, groups and users. */
@Entity()
export class Organization extends BaseEntity<'status' | 'requireMfa' | 'settings'> {
  @ManyToOne(() => Partner, { mapToPk: true, fieldName: 'partner_id', deleteRule: 'cascade' })
  @Index()
  partnerId!: string;

  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'string', length: 20 })
  status: 'active' | 'suspended' = 'active';

  @Property({ type: 'boolean' })
  requireMfa = false;

  @Property({ type: 'json' })
  settings: Record<string, unknown> = {};
}
