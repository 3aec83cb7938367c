import { Entity, Index, ManyToOne, Property } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Partner, type TenantSettings } from './partner.js';

/** A customer of a partner: contains sites, devices, groups and users. */
@Entity()
export class Organization extends BaseEntity<'status' | 'requireMfa' | 'settings' | 'contactEmail'> {
  @ManyToOne(() => Partner, { mapToPk: true, fieldName: 'partner_id', deleteRule: 'cascade' })
  @Index()
  partnerId!: string;

  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'string', length: 20 })
  status: 'active' | 'suspended' = 'active';

  /** every member of the organization must sign in with a second factor */
  @Property({ type: 'boolean' })
  requireMfa = false;

  @Property({ type: 'string', length: 255, nullable: true })
  contactEmail: string | null = null;

  @Property({ type: 'json' })
  settings: TenantSettings = {};
}
