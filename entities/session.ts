import { Entity, Index, ManyToOne, Property, Unique } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Membership, User } from './user.js';

/**
 * One refresh token of a login session. Rotation marks the old row used and issues a new one in the
 * same family; presenting a used token again revokes the whole family.
 */
@Entity()
export class RefreshToken extends BaseEntity<'mfa' | 'method' | 'tokenVersion' | 'usedAt' | 'revokedAt' | 'ip' | 'userAgent'> {
  @ManyToOne(() => User, { mapToPk: true, fieldName: 'user_id', deleteRule: 'cascade' })
  @Index()
  userId!: string;

  @ManyToOne(() => Membership, { mapToPk: true, fieldName: 'membership_id', deleteRule: 'cascade' })
  membershipId!: string;

  @Property({ type: 'uuid' })
  @Index()
  familyId!: string;

  @Property({ type: 'string', length: 64, hidden: true })
  @Unique()
  tokenHash!: string;

  @Property({ type: 'boolean' })
  mfa = false;

  /** How the session began: password, sso or refresh of one of those. */
  @Property({ type: 'string', length: 20 })
  method: 'password' | 'sso' = 'password';

  /** The user's token version when the session began: a password change or disable bumps it and ends the session. */
  @Property({ type: 'integer' })
  tokenVersion = 0;

  @Property({ type: 'timestamptz' })
  expiresAt!: Date;

  @Property({ type: 'timestamptz', nullable: true })
  usedAt: Date | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  revokedAt: Date | null = null;

  @Property({ type: 'string', length: 64, nullable: true })
  ip: string | null = null;

  @Property({ type: 'text', nullable: true })
  userAgent: string | null = null;
}

/** Failed and successful password logins, counted per email and per IP for lockout. */
@Entity()
@Index({ properties: ['email', 'createdAt'] })
@Index({ properties: ['ip', 'createdAt'] })
export class LoginAttempt extends BaseEntity {
  @Property({ type: 'string', length: 255 })
  email!: string;

  @Property({ type: 'string', length: 64 })
  ip!: string;

  @Property({ type: 'boolean' })
  success!: boolean;
}
