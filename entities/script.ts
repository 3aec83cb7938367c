import { Entity, Index, ManyToOne, Property, Unique } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Device } from './device.js';
import { DeviceCommand } from './device-command.js';
import type { OsType } from './device.js';
import { Organization } from './organization.js';

export const SCRIPT_LANGUAGES = ['powershell', 'bash', 'python', 'cmd'] as const;
export type ScriptLanguage = (typeof SCRIPT_LANGUAGES)[number];
export const SCRIPT_RUN_AS = ['system', 'user', 'elevated'] as const;
export type ScriptRunAs = (typeof SCRIPT_RUN_AS)[number];
export const SCRIPT_PARAMETER_TYPES = ['string', 'number', 'boolean', 'select'] as const;
export type ScriptParameterType = (typeof SCRIPT_PARAMETER_TYPES)[number];
export const EXECUTION_STATUSES = ['pending', 'queued', 'running', 'completed', 'failed', 'timeout', 'cancelled'] as const;
export type ExecutionStatus = (typeof EXECUTION_STATUSES)[number];
/** Statuses an execution never leaves. */
export const FINISHED_STATUSES: readonly ExecutionStatus[] = ['completed', 'failed', 'timeout', 'cancelled'];

/**
 * A declared parameter as stored. A secret parameter's default is kept only sealed (`defaultSealed`,
 * the runtime's SecretBox), never as `default`.
 */
export interface StoredScriptParameter {
  name: string;
  type: ScriptParameterType;
  required: boolean;
  default?: string | number | boolean;
  defaultSealed?: string;
  options?: string[];
  secret: boolean;
  description?: string;
}

/** A script of one organization; its content's history is in `script_version` (`version` is the current one). */
@Entity()
@Unique({ properties: ['orgId', 'name'] })
export class Script extends BaseEntity<'description' | 'parameters' | 'runAs' | 'timeoutSeconds' | 'osTypes' | 'category' | 'tags' | 'version' | 'createdBy' | 'importedFrom'> {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'text', nullable: true })
  description: string | null = null;

  @Property({ type: 'string', length: 20 })
  language!: ScriptLanguage;

  @Property({ type: 'text' })
  content!: string;

  @Property({ type: 'json' })
  parameters: StoredScriptParameter[] = [];

  @Property({ type: 'string', length: 20 })
  runAs: ScriptRunAs = 'system';

  @Property({ type: 'integer' })
  timeoutSeconds: number = 300;

  @Property({ type: 'json' })
  osTypes: OsType[] = [];

  /** the name of a library category (free text; the organization's categories list the usual ones) */
  @Property({ type: 'string', length: 100, nullable: true })
  category: string | null = null;

  @Property({ type: 'json' })
  tags: string[] = [];

  @Property({ type: 'integer' })
  version: number = 1;

  @Property({ type: 'uuid', nullable: true })
  createdBy: string | null = null;

  /** the system-library script this one was imported from */
  @Property({ type: 'string', length: 100, nullable: true })
  importedFrom: string | null = null;
}

/** One content of a script (append-only): version 1 is the first, each change or rollback adds one. */
@Entity()
@Unique({ properties: ['scriptId', 'version'] })
export class ScriptVersion extends BaseEntity<'note' | 'createdBy'> {
  @ManyToOne(() => Script, { mapToPk: true, fieldName: 'script_id', deleteRule: 'cascade' })
  scriptId!: string;

  @Property({ type: 'integer' })
  version!: number;

  @Property({ type: 'text' })
  content!: string;

  @Property({ type: 'text', nullable: true })
  note: string | null = null;

  @Property({ type: 'uuid', nullable: true })
  createdBy: string | null = null;
}

/**
 * One run of a script on one device, carried to the agent by one `run_script` device command.
 * Secret parameter values are stored sealed; output keeps the first 1 MiB of each stream.
 */
@Entity()
@Index({ properties: ['scriptId', 'createdAt', 'id'] })
@Index({ properties: ['status', 'deadlineAt'] })
export class ScriptExecution extends BaseEntity<
  'status' | 'commandId' | 'exitCode' | 'stdout' | 'stderr' | 'truncated' | 'parameters' | 'startedAt' | 'completedAt' | 'createdBy'
> {
  @Property({ type: 'uuid' })
  @Index()
  orgId!: string;

  @ManyToOne(() => Script, { mapToPk: true, fieldName: 'script_id', deleteRule: 'cascade' })
  scriptId!: string;

  @ManyToOne(() => Device, { mapToPk: true, fieldName: 'device_id', deleteRule: 'cascade' })
  @Index()
  deviceId!: string;

  @ManyToOne(() => DeviceCommand, { mapToPk: true, fieldName: 'command_id', deleteRule: 'set null', nullable: true })
  @Index()
  commandId: string | null = null;

  /** the script's version that ran */
  @Property({ type: 'integer' })
  scriptVersion!: number;

  @Property({ type: 'string', length: 20 })
  status: ExecutionStatus = 'pending';

  /** values by name; secret ones sealed as `{sealed}` */
  @Property({ type: 'json' })
  parameters: Record<string, unknown> = {};

  @Property({ type: 'integer' })
  timeoutSeconds!: number;

  /** when an unfinished execution turns `timeout` (moved when the agent takes it) */
  @Property({ type: 'timestamptz' })
  deadlineAt!: Date;

  @Property({ type: 'integer', nullable: true })
  exitCode: number | null = null;

  @Property({ type: 'text', nullable: true })
  stdout: string | null = null;

  @Property({ type: 'text', nullable: true })
  stderr: string | null = null;

  /** a stream was longer than 1 MiB and was cut */
  @Property({ type: 'boolean' })
  truncated: boolean = false;

  @Property({ type: 'timestamptz', nullable: true })
  startedAt: Date | null = null;

  @Property({ type: 'timestamptz', nullable: true })
  completedAt: Date | null = null;

  @Property({ type: 'uuid', nullable: true })
  createdBy: string | null = null;
}

/** A category of an organization's script library (names unique per organization). */
@Entity()
@Unique({ properties: ['orgId', 'name'] })
export class ScriptCategory extends BaseEntity<'description'> {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @Property({ type: 'string', length: 100 })
  name!: string;

  @Property({ type: 'text', nullable: true })
  description: string | null = null;
}

/** A tag of an organization's script library (names unique per organization). */
@Entity()
@Unique({ properties: ['orgId', 'name'] })
export class ScriptTag extends BaseEntity {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @Property({ type: 'string', length: 50 })
  name!: string;
}
