import DataLoader from 'dataloader';
import type { z } from 'zod';
import { DeviceCommand } from '../../entities/device-command.js';
import type { RequestContext } from '../auth/context.js';
import type { Loaders } from '../auth/loaders.js';
import { authorize, visibleSiteIds } from '../auth/policy.js';
import { notFound } from '../errors.js';
import { toPage, type Page } from '../pagination.js';
import { parseInput } from '../validation.js';
import { CommandListQuery, commandView, type CommandListInput, type CommandView } from './device-commands.js';
import type { DeviceView } from './devices.js';

type CommandQuery = z.output<typeof CommandListQuery>;

/** Per request (its Loaders), one batching loader per page shape (page, limit, status). */
const loaders = new WeakMap<Loaders, Map<string, DataLoader<string, Page<CommandView>>>>();

/**
 * A device's commands, newest first, paged like `GET /devices/:id/commands`, for a device the caller
 * has already been shown (GraphQL `Device.commands`). The devices of one list are read together: a
 * request-scoped DataLoader turns every device's page into three queries, however many devices.
 */
export async function deviceCommandPage(ctx: RequestContext, device: Pick<DeviceView, 'id' | 'orgId' | 'siteId'>, rawQuery: CommandListInput): Promise<Page<CommandView>> {
  const query = parseInput(CommandListQuery, rawQuery);
  // Queued before the decision so that every device of a list joins one batch (the decision may wait
  // on a query); nothing is answered unless the decision allows it.
  const page = loaderFor(ctx, query).load(device.id);
  page.catch(() => {});
  await authorize(ctx, 'devices:read', { orgId: device.orgId, resource: 'Device' });
  const sites = visibleSiteIds(ctx, device.orgId);
  if (sites && (device.siteId === null || !sites.includes(device.siteId))) throw notFound('Device');
  return page;
}

function loaderFor(ctx: RequestContext, query: CommandQuery): DataLoader<string, Page<CommandView>> {
  let byShape = loaders.get(ctx.loaders);
  if (!byShape) loaders.set(ctx.loaders, (byShape = new Map()));
  const shape = JSON.stringify([query.page, query.limit, query.status ?? null]);
  let loader = byShape.get(shape);
  // No cache: a later mutation in the same request must not be answered from an earlier read.
  if (!loader) byShape.set(shape, (loader = new DataLoader((deviceIds) => commandPages(ctx, query, deviceIds), { cache: false })));
  return loader;
}

/** The page `query` asks for of each device: totals, the ids ranked per device, then the rows. */
async function commandPages(ctx: RequestContext, query: CommandQuery, deviceIds: readonly string[]): Promise<Page<CommandView>[]> {
  const ids = [...new Set(deviceIds)];
  const where = `device_id in (${ids.map(() => '?').join(', ')})${query.status ? ' and status = ?' : ''}`;
  const params: unknown[] = [...ids, ...(query.status ? [query.status] : [])];
  const offset = (query.page - 1) * query.limit;
  const [totals, ranked] = await Promise.all([
    ctx.em.execute(`select device_id, count(*)::int as total from device_command where ${where} group by device_id`, params) as Promise<{ device_id: string; total: number }[]>,
    ctx.em.execute(
      `select id from (select id, row_number() over (partition by device_id order by created_at desc, id desc) as n from device_command where ${where}) ranked
        where n > ? and n <= ?`,
      [...params, offset, offset + query.limit],
    ) as Promise<{ id: string }[]>,
  ]);
  const rows = ranked.length === 0 ? [] : await ctx.em.find(DeviceCommand, { id: { $in: ranked.map((r) => r.id) } }, { orderBy: { createdAt: 'desc', id: 'desc' } });
  const total = new Map(totals.map((t) => [t.device_id, t.total]));
  return deviceIds.map((deviceId) =>
    toPage(
      rows.filter((row) => row.deviceId === deviceId).map(commandView),
      total.get(deviceId) ?? 0,
      query,
    ),
  );
}
