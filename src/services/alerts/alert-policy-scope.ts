import type { FilterQuery } from '@mikro-orm/core';
import type { AlertPolicyTargets } from '../../../entities/alert-policy.js';
import { Device } from '../../../entities/device.js';
import { DeviceGroup } from '../../../entities/device-group.js';
import { Site } from '../../../entities/site.js';
import type { RequestContext } from '../../auth/context.js';
import { visibleSiteIds } from '../../auth/policy.js';
import { forbidden, notFound } from '../../errors.js';

// Apart from alert-policies.ts so that alert-channels.ts, which it imports, can hold channels to the same limit.

export async function allFound<T extends object>(ctx: RequestContext, entity: new () => T, ids: string[] | undefined, where: FilterQuery<T>, resource: string): Promise<void> {
  if (!ids || ids.length === 0) return;
  const found = await ctx.em.count(entity, { $and: [{ id: { $in: ids } }, where] } as FilterQuery<T>);
  if (found !== ids.length) throw notFound(resource);
}

/**
 * Users limited to some sites manage only policies whose targets lie within their sites: a policy
 * of the whole organization, or of other sites, would send their channels other sites' alerts.
 */
export async function checkSiteLimit(ctx: RequestContext, orgId: string, targets: AlertPolicyTargets | null): Promise<void> {
  const sites = visibleSiteIds(ctx, orgId);
  if (!sites) return;
  if (!targets) throw forbidden('Users limited to some sites must target sites, groups or devices of their sites');
  await allFound(ctx, Site, targets.siteIds, { orgId, id: { $in: sites } }, 'Site');
  await allFound(ctx, DeviceGroup, targets.groupIds, { orgId, siteId: { $in: sites } }, 'Group');
  await allFound(ctx, Device, targets.deviceIds, { orgId, siteId: { $in: sites } }, 'Device');
}
