import { Entity, Index, ManyToOne, Property } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Device } from './device.js';

export const COMMAND_STATUSES = ['pending', 'sent', 'completed', 'failed', 'timeout', 'cancelled'] as const;
export type CommandStatus = (typeof COMMAND_STATUSES)[number];

/** Work for an agent: handed out once (pending → sent), answered with a result, or timed out by a job. */
@Entity()
@Index({ properties: ['deviceId', 'status', 'createdAt'] })
@Index({ properties: ['status', 'timeoutAt'] })
export class DeviceCommand extends BaseEntity<'payload' | 'status' | 'createdBy' | 'sentAt' | 'completedAt' | 'exitCode' | 'stdout' | 'stderr' | 'result'> {
  @ManyToOne(() => Device, { mapToPk: true, fieldName: 'device_id', deleteRule: 'cascade' })
  deviceId!: string;

  @Property({ type: 'uuid' })
  orgId!: string;

  @Property({ type: 'string', length: 100 })
  type!: string;

  @Property({ type: 'json' })
  payload: Record<string, unknown> = {};

  @Property({ type: 'string', length: 20 })
  status: CommandStatus = 'pending';

  @Property({ type: 'uuid', nullable: true })
  createdBy: string | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  sentAt: Date | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  completedAt: Date | null = null;

  /** when an unanswered command times out */
  @Property({ type: 'timestamptz' })
  timeoutAt!: Date;

  @Property({ type: 'integer', nullable: true })
  exitCode: number | null = null;

  @Property({ type: 'text', nullable: true })
  stdout: string | null = null;

  @Property({ type: 'text', nullable: true })
  stderr: string | null = null;

  @Property({ type: 'json', nullable: true })
  result: Record<string, unknown> | null = null;
}
