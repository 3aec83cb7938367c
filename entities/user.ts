import { Entity, Index, ManyToOne, Property, Unique } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Organization } from './organization.js';
import { Partner } from './partner.js';
import { Role, type Scope } from './role.js';

export type UserStatus = 'active' | 'invited' | 'disabled';
export type MembershipStatus = 'active' | 'pending';

/** A person. Emails are stored lower-cased, so lookups are case-insensitive. */
@Entity()
export class User extends BaseEntity<
  'passwordHash' | 'status' | 'mfaEnabled' | 'mfaSecret' | 'mfaRecoveryCodes' | 'mfaLastUsedStep' | 'tokenVersion' | 'lastLoginAt' | 'inviteTokenHash' | 'inviteExpiresAt'
> {
  @Property({ type: 'string', length: 255 })
  @Unique()
  email!: string;

  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'text', nullable: true, hidden: true })
  passwordHash: string | null = null;

  @Property({ type: 'string', length: 20 })
  status: UserStatus = 'active';

  @Property({ type: 'boolean' })
  mfaEnabled = false;

  /** TOTP secret, encrypted at rest; set during setup before MFA is enabled. */
  @Property({ type: 'text', nullable: true, hidden: true })
  mfaSecret: string | null = null;

  /** SHA-256 hashes of unused recovery codes. */
  @Property({ type: 'json', hidden: true })
  mfaRecoveryCodes: string[] = [];

  /** The last TOTP time step accepted: a code is good once, even within its validity window. */
  @Property({ type: 'integer', nullable: true, hidden: true })
  mfaLastUsedStep: number | null = null;

  /** Bumped on disable and password change: tokens carrying an older value stop working at once. */
  @Property({ type: 'integer' })
  tokenVersion = 0;

  @Property({ type: 'timestamptz', nullable: true })
  lastLoginAt: Date | null = null;

  @Property({ type: 'string', length: 64, nullable: true, hidden: true })
  @Index()
  inviteTokenHash: string | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  inviteExpiresAt: Date | null = null;
}

/** What a user may do where: one row per partner or organization the user belongs to (system admins hold a system row). */
@Entity()
@Unique({ properties: ['userId', 'partnerId', 'orgId'] })
export class Membership extends BaseEntity<'partnerId' | 'orgId' | 'orgAccess' | 'orgIds' | 'siteIds' | 'status' | 'inviteTokenHash' | 'inviteExpiresAt' | 'invitedName'> {
  @ManyToOne(() => User, { mapToPk: true, fieldName: 'user_id', deleteRule: 'cascade' })
  @Index()
  userId!: string;

  @Property({ type: 'string', length: 20 })
  scope!: Scope;

  @ManyToOne(() => Partner, { mapToPk: true, fieldName: 'partner_id', nullable: true, deleteRule: 'cascade' })
  @Index()
  partnerId: string | null = null;

  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', nullable: true, deleteRule: 'cascade' })
  @Index()
  orgId: string | null = null;

  @ManyToOne(() => Role, { mapToPk: true, fieldName: 'role_id', deleteRule: 'restrict' })
  @Index()
  roleId!: string;

  /** Partner memberships: every organization of the partner, or only `orgIds`. */
  @Property({ type: 'string', length: 20 })
  orgAccess: 'all' | 'selected' = 'all';

  @Property({ type: 'json' })
  orgIds: string[] = [];

  /** Organization memberships: restrict to these sites (empty = all sites). */
  @Property({ type: 'json' })
  siteIds: string[] = [];

  /**
   * `pending`: another tenant invited an existing account, and the account's owner has not accepted
   * yet. A pending membership grants nothing: no login, no session, no API key acts through it.
   */
  @Property({ type: 'string', length: 20 })
  status: MembershipStatus = 'active';

  /** SHA-256 of the one-time link that accepts a pending membership (with the account's own password). */
  @Property({ type: 'string', length: 64, nullable: true, hidden: true })
  @Index()
  inviteTokenHash: string | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  inviteExpiresAt: Date | null = null;

  /** The name the inviter typed: what the inviting tenant sees until the owner accepts, never the account's own. */
  @Property({ type: 'string', length: 255, nullable: true })
  invitedName: string | null = null;
}
