import { randomUUID } from 'node:crypto';
import { Entity, Index, PrimaryKey, Property, Unique } from '@mikro-orm/core';

export type ActorType = 'user' | 'api_key' | 'agent' | 'portal_user' | 'plugin' | 'system' | 'anonymous';
export type AuditResult = 'success' | 'denied' | 'failure';

/**
 * Append-only record of every mutation and denied attempt. Entries form one hash chain per
 * organization (`org:<id>`), one per partner for its organization-less entries (`partner:<id>`) and
 * one for the rest (`system`); entries written before chains were per tenant form the `legacy`
 * chain. `hash` covers the row's content and the previous hash in its chain, so editing or deleting
 * a row breaks its chain from there on.
 */
@Entity()
@Index({ properties: ['orgId', 'createdAt'] })
@Unique({ properties: ['chain', 'chainSeq'] })
@Index({ properties: ['action'] })
export class AuditLog {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  /** Order across every chain (from the `audit_log_seq` sequence): lists and exports page by it. */
  @Property({ type: 'bigint', unique: true })
  seq!: string;

  @Property({ type: 'string', length: 50 })
  chain!: string;

  /** Position in its chain, from 1; assigned under the chain's lock so the chain has no forks. */
  @Property({ type: 'bigint' })
  chainSeq!: string;

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();

  @Property({ type: 'string', length: 20 })
  actorType!: ActorType;

  @Property({ type: 'uuid', nullable: true })
  @Index()
  actorId: string | null = null;

  @Property({ type: 'string', length: 255, nullable: true })
  actorEmail: string | null = null;

  @Property({ type: 'string', length: 100 })
  action!: string;

  @Property({ type: 'string', length: 100 })
  resourceType!: string;

  @Property({ type: 'string', length: 100, nullable: true })
  resourceId: string | null = null;

  @Property({ type: 'uuid', nullable: true })
  orgId: string | null = null;

  @Property({ type: 'uuid', nullable: true })
  @Index()
  partnerId: string | null = null;

  @Property({ type: 'string', length: 64, nullable: true })
  ip: string | null = null;

  @Property({ type: 'text', nullable: true })
  userAgent: string | null = null;

  @Property({ type: 'string', length: 20 })
  result: AuditResult = 'success';

  @Property({ type: 'json' })
  changes: string[] = [];

  @Property({ type: 'json' })
  details: Record<string, unknown> = {};

  @Property({ type: 'string', length: 64 })
  prevHash!: string;

  @Property({ type: 'string', length: 64 })
  hash!: string;
}
