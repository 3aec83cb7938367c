import { Entity, Index, ManyToOne, Property } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Organization } from './organization.js';
import { Partner } from './partner.js';

export type AccessReviewStatus = 'open' | 'completed';
export type AccessReviewDecision = 'pending' | 'approved' | 'revoked';

/** A periodic review of who holds access to one organization (or one partner's own staff). */
@Entity()
export class AccessReview extends BaseEntity<'orgId' | 'partnerId' | 'status' | 'dueAt' | 'completedAt' | 'completedBy'> {
  @Property({ type: 'string', length: 255 })
  name!: string;

  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', nullable: true, deleteRule: 'cascade' })
  @Index()
  orgId: string | null = null;

  /** set for every review: the organization's partner, or the reviewed partner itself */
  @ManyToOne(() => Partner, { mapToPk: true, fieldName: 'partner_id', nullable: true, deleteRule: 'cascade' })
  @Index()
  partnerId: string | null = null;

  @Property({ type: 'string', length: 20 })
  status: AccessReviewStatus = 'open';

  @Property({ type: 'timestamptz', nullable: true })
  dueAt: Date | null = null;

  @Property({ type: 'uuid', nullable: true })
  createdBy!: string | null;

  @Property({ type: 'timestamptz', nullable: true })
  completedAt: Date | null = null;

  @Property({ type: 'uuid', nullable: true })
  completedBy: string | null = null;
}

/**
 * One membership as it stood when the review was created. User and role are snapshotted (plain
 * ids, copied names) so the review stays readable after the membership or user is gone.
 */
@Entity()
export class AccessReviewItem extends BaseEntity<'notes' | 'decision' | 'decidedBy' | 'decidedAt'> {
  @ManyToOne(() => AccessReview, { mapToPk: true, fieldName: 'review_id', deleteRule: 'cascade' })
  @Index()
  reviewId!: string;

  @Property({ type: 'uuid' })
  userId!: string;

  @Property({ type: 'string', length: 255 })
  userEmail!: string;

  @Property({ type: 'string', length: 255 })
  userName!: string;

  @Property({ type: 'uuid' })
  membershipId!: string;

  @Property({ type: 'uuid' })
  roleId!: string;

  @Property({ type: 'string', length: 255 })
  roleName!: string;

  @Property({ type: 'string', length: 20 })
  decision: AccessReviewDecision = 'pending';

  @Property({ type: 'text', nullable: true })
  notes: string | null = null;

  @Property({ type: 'uuid', nullable: true })
  decidedBy: string | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  decidedAt: Date | null = null;
}
