import { Entity, Index, ManyToOne, Property } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Organization } from './organization.js';
import { Partner } from './partner.js';

/** Tenancy scopes, widest first. */
export const SCOPES = ['system', 'partner', 'organization'] as const;
export type Scope = (typeof SCOPES)[number];

/** A named set of `resource:action` permissions for one scope; system roles are seeded and read-only. */
@Entity()
export class Role extends BaseEntity<'description' | 'partnerId' | 'orgId' | 'permissions' | 'isSystem' | 'requireMfa' | 'createdBy'> {
  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'text', nullable: true })
  description: string | null = null;

  @Property({ type: 'string', length: 20 })
  scope!: Scope;

  @ManyToOne(() => Partner, { mapToPk: true, fieldName: 'partner_id', nullable: true, deleteRule: 'cascade' })
  @Index()
  partnerId: string | null = null;

  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', nullable: true, deleteRule: 'cascade' })
  @Index()
  orgId: string | null = null;

  @Property({ type: 'json' })
  permissions: string[] = [];

  @Property({ type: 'boolean' })
  isSystem = false;

  @Property({ type: 'boolean' })
  requireMfa = false;

  @Property({ type: 'uuid', nullable: true })
  createdBy: string | null = null;
}
