import { SoftwareCatalog, SoftwareVersion, type SoftwareInstaller } from '../../../entities/software.js';
import type { RequestContext } from '../../auth/context.js';
import type { Permission } from '../../auth/permissions.js';
import { isUuid, loadOwned } from '../../auth/policy.js';
import { notFound } from '../../errors.js';

/*
 * The commands that install or uninstall a catalog version on a device, for every domain that sends them
 * (software deployments, configuration policies' remediation, staged rollouts): one payload shape.
 */

export const INSTALL_SOFTWARE = 'install_software';
export const UNINSTALL_SOFTWARE = 'uninstall_software';

/** A catalog version as its commands need it. */
export interface SoftwarePackage {
  orgId: string;
  catalogId: string;
  versionId: string;
  name: string;
  version: string;
  installers: SoftwareInstaller[];
}

/** The version of a package the caller holds `permission` on in the package's organization; else 404. */
export async function softwarePackage(ctx: RequestContext, catalogId: string, versionId: string, permission: Permission): Promise<SoftwarePackage> {
  const entry = await loadOwned(ctx, SoftwareCatalog, catalogId, permission, { resource: 'Software package' });
  const version = isUuid(versionId) ? await ctx.em.findOne(SoftwareVersion, { id: versionId, catalogId: entry.id }) : null;
  if (!version) throw notFound('Software version');
  return { orgId: entry.orgId, catalogId: entry.id, versionId: version.id, name: entry.name, version: version.version, installers: version.installers };
}

export type SoftwareCommand = { type: string; payload: Record<string, unknown> } | { skipped: string };

/**
 * The command a device of `osType` gets for the package (`extra` names who sent it: `deploymentId`,
 * `policyId`), or why it gets none: no installer for its operating system.
 */
export function softwareCommandFor(pkg: SoftwarePackage, action: 'install' | 'uninstall', osType: string | null, extra: Record<string, unknown>): SoftwareCommand {
  const installer = pkg.installers.find((candidate) => candidate.osType === osType);
  if (!installer) return { skipped: `${pkg.name} ${pkg.version} has no installer for ${osType ?? 'an unknown operating system'}` };
  return {
    type: action === 'install' ? INSTALL_SOFTWARE : UNINSTALL_SOFTWARE,
    payload: {
      ...extra,
      name: pkg.name,
      version: pkg.version,
      url: installer.url,
      sha256: installer.sha256,
      silentArgs: installer.silentArgs,
      uninstallArgs: installer.uninstallArgs,
      detection: installer.detection,
    },
  };
}
