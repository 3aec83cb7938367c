import { raw, type FilterQuery, type QBFilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import { Device } from '../../../entities/device.js';
import type { RequestContext } from '../../auth/context.js';
import { authorize, tenantWhere } from '../../auth/policy.js';
import { containsPattern } from '../../db/like.js';
import { badRequest } from '../../errors.js';
import { MAX_LIMIT, PageQuery, pageOptions, pageSchema, toPage, type Page } from '../../pagination.js';
import { parseInput, uuid } from '../../validation.js';
import { deviceViews, type DeviceView } from '../devices/api.js';

/*
 * Tags are the free-form labels set on devices (`PATCH /devices/:id {tags}`): there is no tag table,
 * a tag exists while a device the caller can see carries it. Decommissioned devices do not count.
 */

/** One tag as a filter names it (devices' tags are set by `PATCH /devices/:id`). */
export const TagSchema = z.string().trim().min(1).max(100);

const TagViewSchema = z.object({ tag: z.string().describe('The tag text.'), deviceCount: z.number().int().describe('devices you can see that carry it') }).meta({ title: 'Tag', description: 'A device tag in use, with how many devices carry it.' });
export type TagView = z.output<typeof TagViewSchema>;
export const TagPageSchema = pageSchema(TagViewSchema, 'TagPage');

export const TagListQuery = PageQuery.extend({
  orgId: uuid().optional().describe('Only tags on devices of this organization.'),
  search: z.string().trim().min(1).max(100).optional().describe('part of the tag, case-insensitive'),
}).strict();
export type TagListInput = z.input<typeof TagListQuery>;

/** The devices a tag query reads: the caller's (within `orgId` when given), not decommissioned. */
async function visibleDevices(ctx: RequestContext, orgId: string | undefined): Promise<FilterQuery<Device>> {
  const tenant = (await tenantWhere<Device>(ctx, { org: 'orgId', site: 'siteId', requestedOrgId: orgId })) ?? {};
  return { $and: [tenant, { status: { $ne: 'decommissioned' } }] } as FilterQuery<Device>;
}

/** Every tag in use on the devices the caller can see, with how many carry it, by tag. */
export async function listTags(ctx: RequestContext, rawQuery: TagListInput): Promise<Page<TagView>> {
  const query = parseInput(TagListQuery, rawQuery);
  await authorize(ctx, 'devices:read');
  const knex = ctx.em.getKnex();
  // A device's tags are deduplicated when set, so each (device, tag) pair appears once.
  const perDevice = ctx.em
    .createQueryBuilder(Device, 'd')
    .select(raw('jsonb_array_elements_text(d.tags) as tag'))
    .where((await visibleDevices(ctx, query.orgId)) as QBFilterQuery<Device>)
    .getKnexQuery();
  const tags = knex.from(perDevice.as('t')).select('tag').count({ deviceCount: '*' }).groupBy('tag');
  if (query.search) tags.where('tag', 'ilike', containsPattern(query.search));
  const { limit, offset } = pageOptions(query);
  const [rows, [counted]] = await Promise.all([
    ctx.em.execute(tags.clone().orderBy('tag').limit(limit).offset(offset)) as Promise<{ tag: string; deviceCount: string | number }[]>,
    ctx.em.execute(knex.from(tags.as('g')).count({ total: '*' })) as Promise<{ total: string | number }[]>,
  ]);
  return toPage(
    rows.map((r) => ({ tag: r.tag, deviceCount: Number(r.deviceCount) })),
    Number(counted?.total ?? 0),
    query,
  );
}

// Idempotent (a list parses as itself), as the adapters parse before the service does.
const tagList = z
  .array(TagSchema)
  .max(MAX_LIMIT)
  .or(
    z
      .string()
      .max(20_000)
      .transform((text) => text.split(',').map((s) => s.trim()).filter(Boolean))
      .pipe(z.array(TagSchema).max(MAX_LIMIT)),
  )
  .describe('comma-separated tags');

export const TagDevicesQuery = PageQuery.extend({
  tag: TagSchema.optional().describe('devices carrying this tag (this or `tags` is required)'),
  tags: tagList.optional().describe('devices carrying any of these tags, comma-separated'),
  orgId: uuid().optional(),
}).strict();
export type TagDevicesInput = z.input<typeof TagDevicesQuery>;

/** Devices the caller can see that carry `tag` or any of `tags`, by hostname. */
export async function listTaggedDevices(ctx: RequestContext, rawQuery: TagDevicesInput): Promise<Page<DeviceView>> {
  const query = parseInput(TagDevicesQuery, rawQuery);
  const wanted = [...new Set([...(query.tag ? [query.tag] : []), ...(query.tags ?? [])])];
  if (wanted.length === 0) throw badRequest('tag: give a tag (or tags)', [{ path: 'tag', message: 'give a tag (or tags)' }]);
  await authorize(ctx, 'devices:read');
  const carries = { $or: wanted.map((tag) => ({ tags: { $contains: [tag] } })) } as FilterQuery<Device>;
  const [rows, total] = await ctx.em.findAndCount(Device, { $and: [await visibleDevices(ctx, query.orgId), carries] }, { orderBy: { hostname: 'asc', id: 'asc' }, ...pageOptions(query) });
  return toPage(await deviceViews(ctx, rows), total, query);
}
