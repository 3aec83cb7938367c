import { randomUUID } from 'node:crypto';
import { Entity, Index, ManyToOne, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import { Device } from './device.js';
import { Organization } from './organization.js';

/*
 * The software domain's tables: an organization's catalog of packages with their versions and per-OS
 * installers, and the applications each device's agent reported installed (the inventory's `software` part).
 */

/** One installer of a version, for one operating system. */
export interface SoftwareInstaller {
  osType: 'windows' | 'macos' | 'linux';
  url: string;
  sha256: string;
  silentArgs: string | null;
  uninstallArgs: string | null;
  detection: Record<string, unknown> | null;
}

/** A package of an organization's software catalog. */
@Entity()
@Unique({ properties: ['orgId', 'name'] })
@Index({ properties: ['orgId', 'createdAt', 'id'] })
export class SoftwareCatalog extends BaseEntity<'description' | 'latestVersion'> {
  @ManyToOne(() => Organization, { mapToPk: true, fieldName: 'org_id', deleteRule: 'cascade' })
  orgId!: string;

  @Property({ type: 'string', length: 255 })
  name!: string;

  @Property({ type: 'string', length: 255 })
  vendor!: string;

  @Property({ type: 'string', length: 100 })
  category!: string;

  @Property({ type: 'text', nullable: true })
  description: string | null = null;

  /** the newest of its versions by dotted-number comparison (kept as versions are added); null before any */
  @Property({ type: 'string', length: 100, nullable: true })
  latestVersion: string | null = null;
}

/** A version of a catalog package, with its installers. */
@Entity()
@Unique({ properties: ['catalogId', 'version'] })
@Index({ properties: ['catalogId', 'createdAt', 'id'] })
export class SoftwareVersion {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => SoftwareCatalog, { mapToPk: true, fieldName: 'catalog_id', deleteRule: 'cascade' })
  catalogId!: string;

  @Property({ type: 'string', length: 100 })
  version!: string;

  @Property({ type: 'json' })
  installers: SoftwareInstaller[] = [];

  @Property({ type: 'text', nullable: true })
  releaseNotes: string | null = null;

  @Property({ type: 'timestamptz' })
  createdAt!: Date;
}

/** An installed application, as the device's last software report listed it (each report replaces the device's rows). */
@Entity()
@Index({ properties: ['deviceId'] })
export class DeviceSoftware {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne(() => Device, { mapToPk: true, fieldName: 'device_id', deleteRule: 'cascade' })
  deviceId!: string;

  @Property({ type: 'string', length: 500 })
  name!: string;

  @Property({ type: 'string', length: 200, nullable: true })
  version: string | null = null;

  /** reported as `vendor` (or `publisher`, the inventory's older name, still the column's) */
  @Property({ type: 'string', length: 500, nullable: true, fieldName: 'publisher' })
  vendor: string | null = null;

  /** a calendar date, `YYYY-MM-DD` */
  @Property({ type: 'date', nullable: true })
  installDate: string | null = null;

  @Property({ type: 'timestamptz' })
  reportedAt!: Date;
}
