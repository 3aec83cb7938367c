import { Entity, Index, ManyToOne, Property } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Organization } from './organization.js';

@Entity()
export class Site extends BaseEntity<'timezone' | 'address'> {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  @Index()
  orgId!: string;

  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'string', length: 100 })
  timezone = 'UTC';

  @Property({ type: 'text', nullable: true })
  address: string | null = null;
}
