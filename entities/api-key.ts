import { Entity, Index, ManyToOne, Property, Unique } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Membership, User } from './user.js';

/** Only a hash and a visible prefix of the key are stored; the full key is shown once. */
@Entity()
export class ApiKey extends BaseEntity<'scopes' | 'orgId' | 'partnerId' | 'expiresAt' | 'lastUsedAt' | 'revokedAt'> {
  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'string', length: 32 })
  @Unique()
  prefix!: string;

  @Property({ type: 'string', length: 64, hidden: true })
  keyHash!: string;

  @Property({ type: 'json' })
  scopes: string[] = [];

  @ManyToOne(() => User, { mapToPk: true, fieldName: 'user_id', deleteRule: 'cascade' })
  @Index()
  userId!: string;

  @ManyToOne(() => Membership, { mapToPk: true, fieldName: 'membership_id', deleteRule: 'cascade' })
  membershipId!: string;

  @Property({ type: 'uuid', nullable: true })
  @Index()
  orgId: string | null = null;

  @Property({ type: 'uuid', nullable: true })
  @Index()
  partnerId: string | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  expiresAt: Date | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  lastUsedAt: Date | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  revokedAt: Date | null = null;
}
