import { Entity, Index, PrimaryKey, Property } from '@mikro-orm/core';
import { BaseEntity } from './base.js';

/*
 * The patching domain's platform-wide tables (no organization's): the third-party application catalog
 * platform administrators curate and test, and the vulnerability database's answers per package and
 * version, shared by every organization's patches.
 */

/** How an installed version is recognized on a device. */
export type CatalogDetection =
  | { type: 'registry'; key: string; valueName?: string; expectedValue?: string }
  | { type: 'file'; path: string; version?: string }
  | { type: 'package'; name: string };

export interface CatalogVersion {
  version: string;
  installerUrl: string;
  sha256: string;
  silentArgs?: string;
  detection: CatalogDetection;
}

export interface CatalogTestResult {
  version: string;
  deviceId: string;
  status: 'passed' | 'failed';
  testedAt: string;
}

/** A third-party application the service knows how to install, with its versions. */
@Entity()
@Index({ properties: ['createdAt', 'id'] })
export class ThirdPartyCatalogEntry extends BaseEntity<'serviceTested' | 'lastTest'> {
  @Property({ type: 'string', length: 200 })
  name!: string;

  @Property({ type: 'string', length: 200 })
  vendor!: string;

  @Property({ type: 'json' })
  versions!: CatalogVersion[];

  /** a test install on a device passed */
  @Property({ type: 'boolean' })
  serviceTested: boolean = false;

  @Property({ type: 'json', nullable: true })
  lastTest: CatalogTestResult | null = null;
}

/** What the vulnerability database answered for a package version (or that it failed, and when to ask again). */
@Entity()
@Index({ properties: ['retryAt'] })
export class VulnerabilityCache {
  @PrimaryKey({ type: 'string', length: 300 })
  packageName!: string;

  @PrimaryKey({ type: 'string', length: 200 })
  version!: string;

  /** null: the last lookup failed */
  @Property({ type: 'json', nullable: true })
  cveIds: string[] | null = null;

  @Property({ type: 'double', nullable: true })
  cvssScore: number | null = null;

  /** when the database last answered; null while it never has */
  @Property({ type: 'timestamptz', nullable: true })
  fetchedAt: Date | null = null;

  /** consecutive failed lookups, and when the next one may be tried */
  @Property({ type: 'integer' })
  failures: number = 0;

  @Property({ type: 'timestamptz', nullable: true })
  retryAt: Date | null = null;
}
