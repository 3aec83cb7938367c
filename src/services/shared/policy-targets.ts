import { z } from 'zod';
import { uuid } from '../../validation.js';

/*
 * The devices a policy (patch, security) targets, as it is written, stored and shown: sites, groups
 * and devices of its organization; naming none, the whole organization.
 */

/** As stored: the selectors named (in the common target's normal form), null for the whole organization. */
export type StoredTargets = { siteIds?: string[]; groupIds?: string[]; deviceIds?: string[] } | null;

const Ids = z.array(uuid()).max(500);

/** A policy's targets input, its GraphQL input named `title`. */
export const policyTargetsInput = (title: string) =>
  z
    .strictObject({
      siteIds: Ids.optional().describe('devices of these sites'),
      groupIds: Ids.optional().describe('current members of these device groups'),
      deviceIds: Ids.optional().describe('these devices'),
    })
    .meta({ title, description: 'A device is targeted through its site, its groups or its id; none given: every device of the organization' });

/** A policy's targets as shown, its GraphQL type named `title`. */
export const policyTargetsView = (title: string) =>
  z
    .object({ siteIds: z.array(uuid()).describe('devices of these sites'), groupIds: z.array(uuid()).describe('members of these groups'), deviceIds: z.array(uuid()).describe('these devices') })
    .meta({ title, description: 'A device is targeted through its site, its groups or its id; all empty: every device of the organization' });

/** What to store of a normalized target (`toTarget` of the devices api): its named selectors, or null. */
export function storedTargets(target: { siteIds?: string[]; groupIds?: string[]; deviceIds?: string[] }): StoredTargets {
  const { siteIds, groupIds, deviceIds } = target;
  const named = { ...(siteIds && { siteIds }), ...(groupIds && { groupIds }), ...(deviceIds && { deviceIds }) };
  return Object.keys(named).length > 0 ? named : null;
}

/** The stored targets as shown: every list, empty where nothing is named. */
export const targetsView = (targets: StoredTargets) => ({ siteIds: targets?.siteIds ?? [], groupIds: targets?.groupIds ?? [], deviceIds: targets?.deviceIds ?? [] });
