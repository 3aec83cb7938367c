import { Entity, Index, Property, Unique } from '@mikro-orm/core';
import { BaseEntity } from './base.js';
import type { OsType } from './device.js';

export const AGENT_COMPONENTS = ['agent', 'watchdog', 'helper'] as const;
export type AgentComponent = (typeof AGENT_COMPONENTS)[number];

/**
 * One binary of an agent release: a version of one component for one platform, registered from a
 * release's assets (`POST /agent-versions/sync-github`). A promoted row is an upgrade target: the
 * most recently promoted stable row of a component and platform is the one devices update to.
 */
@Entity()
@Unique({ properties: ['version', 'component', 'os', 'arch'] })
// The current targets: the latest promotion per component and platform.
@Index({ properties: ['component', 'os', 'arch', 'promotedAt'] })
@Index({ properties: ['publishedAt'] })
export class AgentVersion extends BaseEntity<'size' | 'prerelease' | 'publishedAt' | 'promotedAt'> {
  /** semver, without a leading `v` */
  @Property({ type: 'string', length: 50 })
  version!: string;

  @Property({ type: 'string', length: 20 })
  component!: AgentComponent;

  @Property({ type: 'string', length: 20 })
  os!: OsType;

  /** normalized: amd64, arm64, 386, arm, … */
  @Property({ type: 'string', length: 20 })
  arch!: string;

  /** the release asset's file name, e.g. `rmm-agent-linux-amd64` */
  @Property({ type: 'string', length: 255 })
  assetName!: string;

  /** where the release hosting service serves the asset */
  @Property({ type: 'text' })
  url!: string;

  /** SHA-256 of the binary, lowercase hex */
  @Property({ type: 'string', length: 64 })
  checksum!: string;

  @Property({ type: 'integer', nullable: true })
  size: number | null = null;

  /** `-rc.1` and the like, or marked so by the release: never promoted nor latest automatically */
  @Property({ type: 'boolean' })
  prerelease = false;

  @Property({ type: 'timestamptz' })
  publishedAt: Date = new Date();

  @Property({ type: 'timestamptz', nullable: true })
  promotedAt: Date | null = null;
}
