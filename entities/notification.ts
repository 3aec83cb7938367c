import { randomUUID } from 'node:crypto';
import { Entity, Index, ManyToOne, OptionalProps, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { Organization } from './organization.js';
import { User } from './user.js';

/**
 * An in-app notification for one user (an alert that reached them through a policy). `dedupKey`
 * keeps the at-least-once fan-out from notifying twice.
 */
@Entity()
@Index({ properties: ['userId', 'createdAt', 'id'] })
@Unique({ properties: ['userId', 'dedupKey'] })
export class Notification {
  [OptionalProps]?: 'id' | 'createdAt' | 'message' | 'severity' | 'alertId' | 'dedupKey' | 'readAt';

  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => User, { mapToPk: true, fieldName: 'user_id', deleteRule: 'cascade' })
  userId!: string;

  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @Property({ type: 'string', length: 30 })
  type!: string;

  @Property({ type: 'string', length: 500 })
  title!: string;

  @Property({ type: 'text', nullable: true })
  message: string | null = null;

  @Property({ type: 'string', length: 20, nullable: true })
  severity: string | null = null;

  @Property({ type: 'uuid', nullable: true })
  alertId: string | null = null;

  @Property({ type: 'string', length: 200, nullable: true })
  dedupKey: string | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  readAt: Date | null = null;

  @Property({ type: 'timestamptz' })
  createdAt: Date = new Date();
}
