import type { EntityManager } from '@mikro-orm/postgresql';
import { z } from 'zod';
import { AgentVersion, type AgentComponent } from '../../../entities/agent-version.js';
import { Device, type OsType } from '../../../entities/device.js';
import type { RequestContext } from '../../auth/context.js';

/*
 * Agent builds as agents and rollouts name them (semantic versions, platforms), and the per-device
 * pinned upgrade target a staged rollout sets (`upgradeFor` in agent-versions.ts offers it). Apart from
 * agent-versions.ts, which reads maintenance (update deferral), so the devices api can publish these.
 */

const IDENT = String.raw`(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)`;
/** semver 2.0.0 (https://semver.org), without a leading `v` */
export const SEMVER = new RegExp(String.raw`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-(${IDENT}(?:\.${IDENT})*))?(?:\+[0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*)?$`);

/** A version as given (`v1.4.2` or `1.4.2`), kept without the `v`; idempotent, as adapters parse before services. */
export const versionInput = () =>
  z
    .string()
    .trim()
    .transform((v) => v.replace(/^v/, ''))
    .pipe(z.string().max(50).regex(SEMVER, 'must be a semantic version such as 1.4.2'))
    .describe('A semantic version such as 1.4.2 (a leading v is dropped).');

const ARCH_ALIASES: Record<string, string> = { x86_64: 'amd64', x64: 'amd64', aarch64: 'arm64', i386: '386', i686: '386', x86: '386', armv7l: 'arm', armv7: 'arm', armhf: 'arm' };
/** What agents and `uname -m` call an architecture, as release assets name it (amd64, arm64, 386, arm). */
export const normalizeArch = (arch: string) => {
  const lower = arch.trim().toLowerCase();
  return ARCH_ALIASES[lower] ?? lower;
};

/** What an agent is pointed at: the latest promotion of a component for one platform. */
export interface Target {
  version: string;
  component: AgentComponent;
  os: OsType;
  arch: string;
  assetName: string;
  url: string;
  checksum: string;
}
export const targetKey = (component: string, os: string, arch: string) => `${component}/${os}/${arch}`;

/** The registered agent builds of a version (prereleases too), by platform. */
export async function agentBuilds(em: EntityManager, version: string): Promise<Map<string, Target>> {
  const rows = await em.find(AgentVersion, { version, component: 'agent' }, { disableIdentityMap: true });
  return new Map(rows.map((r) => [targetKey(r.component, r.os, r.arch), { version: r.version, component: r.component, os: r.os, arch: r.arch, assetName: r.assetName, url: r.url, checksum: r.checksum }]));
}

/** Whether agent builds of the version are registered (for any platform). */
export async function agentVersionRegistered(ctx: RequestContext, version: string): Promise<boolean> {
  return (await ctx.em.count(AgentVersion, { version, component: 'agent' })) > 0;
}

/**
 * Pins the devices to a registered agent version (offered as `upgradeTo` on their heartbeats, see
 * `upgradeFor`); answers, by device, why those without a build for their platform were not pinned.
 */
export async function pinAgentVersion(tx: RequestContext, deviceIds: readonly string[], version: string): Promise<Map<string, string>> {
  const builds = await agentBuilds(tx.em as EntityManager, version);
  const devices = await tx.em.find(Device, { id: { $in: [...deviceIds] } }, { fields: ['id', 'osType', 'architecture'], disableIdentityMap: true });
  const missing = new Map<string, string>();
  const pinned: string[] = [];
  for (const device of devices) {
    if (device.osType && device.architecture && builds.has(targetKey('agent', device.osType, normalizeArch(device.architecture)))) pinned.push(device.id);
    else missing.set(device.id, `agent ${version} has no build for ${device.osType ?? 'an unknown OS'}/${device.architecture ?? 'an unknown architecture'}`);
  }
  if (pinned.length > 0) await tx.em.nativeUpdate(Device, { id: { $in: pinned } }, { pinnedAgentVersion: version });
  return missing;
}

/** Drops the devices' pins (they run their version, or their rollout let go of them): the promoted build applies again. */
export async function unpinAgentVersion(tx: RequestContext, deviceIds: readonly string[]): Promise<void> {
  if (deviceIds.length > 0) await tx.em.nativeUpdate(Device, { id: { $in: [...deviceIds] } }, { pinnedAgentVersion: null });
}
