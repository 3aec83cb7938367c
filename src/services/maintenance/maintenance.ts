import { LockMode, type FilterQuery } from '@mikro-orm/core';
import { z } from 'zod';
import {
  MAINTENANCE_WINDOW_STATUSES,
  MaintenanceOccurrence,
  MaintenanceWindow,
  OCCURRENCE_STATUSES,
  RECURRENCE_TYPES,
  type OccurrenceStatus,
  type Recurrence,
} from '../../../entities/maintenance.js';
import type { RequestContext } from '../../auth/context.js';
import type { Permission } from '../../auth/permissions.js';
import { authorize, isUuid, loadOwned, targetOrgId, tenantWhere, visibleSiteIds } from '../../auth/policy.js';
import { withTransaction } from '../../db/transaction.js';
import { badRequest, conflict, forbidden, notFound } from '../../errors.js';
import { DEFAULT_LIMIT, MAX_LIMIT, encodeCursor, keysetWhere, listSchema, pageInfoOf, type Connection } from '../../pagination.js';
import { enumValues, isoDateTime, parseInput, timestamp, uuid } from '../../validation.js';
import { recordAudit } from '../audit/api.js';
import { checkTargets, toTarget } from '../devices/api.js';
import { applyChanges, providedFields } from '../shared/changes.js';
import { formatLocal, isTimeZone, parseLocal, toInstant } from '../shared/schedule.js';
import {
  DAY_MS,
  computedOccurrences,
  insertComputed,
  lockOccurrence,
  reconcileDeviceStatuses,
  scheduleAhead,
  windowNamedBy,
  type ComputedOccurrence,
  type WindowSchedule,
} from './maintenance-occurrences.js';

/*
 * Maintenance windows: periods during which targeted devices show `maintenance`, their alerts are
 * suppressed, and their agent updates and patching deferred, as each window says. A window's
 * occurrences are rows made ahead by the due-work tick for the scheduling horizon (and one started by
 * hand); each row's start and end are Agenda jobs, and the tick catches up whatever a job missed.
 * Beyond the rows, occurrences are computed from the schedule when read, never written by a read:
 * each has the id its row will have (`occurrenceId`), so it can be read and started by that id.
 * This module holds the windows and the API over occurrences; maintenance-occurrences.ts the
 * occurrences' rows, jobs and tick, and which devices an active one covers.
 */

const WINDOW = 'Maintenance window';
const OCCURRENCE = 'Maintenance occurrence';

/** a listed range spans at most this much */
const MAX_RANGE_DAYS = 366;
/** how far from now a listed range may reach (ten years either side) */
const RANGE_REACH_DAYS = 3653;
const MAX_DURATION_MINUTES = 7 * 24 * 60;

// ── schemas ─────────────────────────────────────────────────────────────────────────────────────

const RecurrenceTypeSchema = z
  .enum(RECURRENCE_TYPES)
  .meta({ title: 'MaintenanceRecurrenceType', description: 'How a maintenance window repeats' })
  .register(enumValues, {
    once: 'A single occurrence, at `startsAt`.',
    daily: 'Every day, at the local time of `startsAt`.',
    weekly: 'On the days of `daysOfWeek`, at the local time of `startsAt`.',
    monthly: 'On `dayOfMonth` of every month that has that day, at the local time of `startsAt`.',
  });
const WindowStatusSchema = z
  .enum(MAINTENANCE_WINDOW_STATUSES)
  .meta({ title: 'MaintenanceWindowStatus', description: 'active: its occurrences are scheduled; cancelled: no more occurrences' })
  .register(enumValues, {
    active: 'In force: its occurrences are scheduled and take place.',
    cancelled: 'No more occurrences: those not begun are cancelled, one under way runs to its end; it can no longer be changed.',
  });
const OccurrenceStatusSchema = z
  .enum(OCCURRENCE_STATUSES)
  .meta({ title: 'MaintenanceOccurrenceStatus', description: 'scheduled (not begun), active (under way), completed (ended), cancelled (will not happen)' })
  .register(enumValues, {
    scheduled: 'Not begun yet.',
    active: 'Under way: the devices it covers are in maintenance.',
    completed: 'Ended, at its scheduled end or by hand.',
    cancelled: 'Will not happen: its window was cancelled before it began.',
  });

const LOCAL_DATE = /^\d{4}-\d{2}-\d{2}$/;
const idList = (what: string) => z.array(uuid()).max(MAX_LIMIT).describe(`${what} of the window's organization, at most ${MAX_LIMIT}`);

const recurrenceShape = {
  type: RecurrenceTypeSchema.describe('once, daily, weekly or monthly'),
  daysOfWeek: z.array(z.number().int().min(0).max(6)).min(1).max(7).describe('weekly: the days it starts on, 0–6 with Sunday 0 (the start date’s day by default)'),
  dayOfMonth: z.number().int().min(1).max(31).describe('monthly: the day of the month it starts on (the start date’s by default); months without that day are skipped'),
  until: z.string().regex(LOCAL_DATE, { message: 'must be a date, YYYY-MM-DD' }).describe('a local date in the window’s time zone: no occurrence starts after that day'),
};

const RecurrenceInputSchema = z
  .strictObject({ type: recurrenceShape.type, daysOfWeek: recurrenceShape.daysOfWeek.optional(), dayOfMonth: recurrenceShape.dayOfMonth.optional(), until: recurrenceShape.until.optional() })
  .meta({ title: 'MaintenanceRecurrenceInput', description: 'How a window repeats, in its time zone' });

const RecurrenceViewSchema = z
  .object({ type: recurrenceShape.type, daysOfWeek: recurrenceShape.daysOfWeek.nullable(), dayOfMonth: recurrenceShape.dayOfMonth.nullable(), until: recurrenceShape.until.nullable() })
  .meta({ title: 'MaintenanceRecurrence', description: 'How a window repeats, in its time zone' });

const TargetsInputSchema = z
  .strictObject({ siteIds: idList('sites').optional(), groupIds: idList('device groups').optional(), deviceIds: idList('devices').optional() })
  .meta({ title: 'MaintenanceTargetsInput', description: 'The devices a window covers: those of the sites, the members of the groups and the devices listed; none at all means the whole organization' });

const TargetsViewSchema = z
  .object({ siteIds: idList('sites'), groupIds: idList('device groups'), deviceIds: idList('devices') })
  .meta({ title: 'MaintenanceTargets', description: 'The devices a window covers: those of the sites, the members of the groups and the devices listed; none at all means the whole organization' });

const windowFields = {
  name: z.string().trim().min(1).max(255).describe('a name for people'),
  timezone: z.string().trim().min(1).max(64).describe('an IANA time zone, e.g. America/New_York: occurrences follow its daylight-saving changes'),
  startsAt: z
    .string()
    .trim()
    .describe(
      'the first occurrence’s local start in `timezone`, YYYY-MM-DDTHH:mm[:ss] (no offset). A local time a spring-forward change skips begins at the first valid instant after it; one a fall-back change repeats begins at the first of the two',
    ),
  durationMinutes: z.number().int().min(1).max(MAX_DURATION_MINUTES).describe(`how long each occurrence lasts, 1 to ${MAX_DURATION_MINUTES} minutes`),
  suppressAlerts: z.boolean().describe('no alerts fire for covered devices while an occurrence is active'),
  deferUpdates: z.boolean().describe('covered devices get no agent upgrade (`upgradeTo`) while an occurrence is active'),
  deferPatching: z.boolean().describe('covered devices are not patched while an occurrence is active'),
};

export const CreateWindowSchema = z.strictObject({
  orgId: uuid().optional().describe('organization users: their own organization by default; others: required'),
  name: windowFields.name,
  timezone: windowFields.timezone,
  startsAt: windowFields.startsAt,
  durationMinutes: windowFields.durationMinutes,
  recurrence: RecurrenceInputSchema,
  targets: TargetsInputSchema.default({}).describe('the devices covered; none means the whole organization'),
  suppressAlerts: windowFields.suppressAlerts.default(true),
  deferUpdates: windowFields.deferUpdates.default(false),
  deferPatching: windowFields.deferPatching.default(false),
}).describe('A new maintenance window of an organization; its occurrences are scheduled from its start and recurrence.');
export type CreateWindowInput = z.input<typeof CreateWindowSchema>;

export const UpdateWindowSchema = z.strictObject({
  name: windowFields.name.optional(),
  timezone: windowFields.timezone.optional(),
  startsAt: windowFields.startsAt.optional(),
  durationMinutes: windowFields.durationMinutes.optional(),
  recurrence: RecurrenceInputSchema.optional(),
  targets: TargetsInputSchema.optional().describe('replaces the targets (lists not given become empty)'),
  suppressAlerts: windowFields.suppressAlerts.optional(),
  deferUpdates: windowFields.deferUpdates.optional(),
  deferPatching: windowFields.deferPatching.optional(),
}).describe('Changes to an active maintenance window; a field left out keeps its value. A new schedule replaces the occurrences not begun; targets and flags apply at once.');
export type UpdateWindowInput = z.input<typeof UpdateWindowSchema>;

export const MaintenanceWindowViewSchema = z
  .object({
    id: uuid().describe('the window’s id'),
    orgId: uuid().describe('the organization it belongs to'),
    siteId: uuid().nullable().describe('the one site every target lies in, if any (users limited to some sites see only their sites’ windows)'),
    name: windowFields.name,
    timezone: windowFields.timezone,
    startsAt: z.string().describe('the first occurrence’s local start in `timezone`, YYYY-MM-DDTHH:mm:ss'),
    durationMinutes: z.number().int().describe('how long each occurrence lasts, in minutes'),
    recurrence: RecurrenceViewSchema.describe('how it repeats'),
    targets: TargetsViewSchema.describe('the devices covered; all lists empty: the whole organization'),
    suppressAlerts: windowFields.suppressAlerts,
    deferUpdates: windowFields.deferUpdates,
    deferPatching: windowFields.deferPatching,
    status: WindowStatusSchema.describe('active, or cancelled (no more occurrences)'),
    cancelledAt: timestamp().nullable().describe('when it was cancelled'),
    createdAt: timestamp().describe('when it was created'),
    updatedAt: timestamp().describe('when it last changed'),
  })
  .meta({ title: 'MaintenanceWindow', description: 'A recurring period during which targeted devices are under maintenance' });
export type MaintenanceWindowView = z.output<typeof MaintenanceWindowViewSchema>;

export const OccurrenceViewSchema = z
  .object({
    id: uuid().describe('the occurrence’s id (the start, end and get routes take it)'),
    windowId: uuid().describe('the window it belongs to'),
    orgId: uuid().describe('the window’s organization'),
    startsAt: timestamp().describe('its scheduled start, a UTC instant'),
    endsAt: timestamp().describe('its scheduled end, a UTC instant'),
    status: OccurrenceStatusSchema.describe('scheduled, active, completed or cancelled'),
    startedAt: timestamp().nullable().describe('when it actually began (by its schedule or by hand)'),
    endedAt: timestamp().nullable().describe('when it actually ended (by its schedule or by hand)'),
  })
  .meta({ title: 'MaintenanceOccurrence', description: 'One period of a maintenance window' });
export type OccurrenceView = z.output<typeof OccurrenceViewSchema>;

const cursorPage = <T extends z.ZodType>(item: T, title: string) =>
  z
    .object({ data: z.array(item).describe('this page'), nextCursor: z.string().nullable().describe('pass it back as `cursor` for the next page; null on the last') })
    .meta({ title, description: 'A page of a cursor-paged list' });
export const WindowPageSchema = cursorPage(MaintenanceWindowViewSchema, 'MaintenanceWindowPage');
export const OccurrencePageSchema = cursorPage(OccurrenceViewSchema, 'MaintenanceOccurrencePage');
export const OccurrenceListSchema = listSchema(OccurrenceViewSchema, 'MaintenanceOccurrenceList');
type CursorPage<T> = { data: T[]; nextCursor: string | null };

const limit = z.coerce.number().int().min(1).max(MAX_LIMIT).default(DEFAULT_LIMIT).describe(`1 to ${MAX_LIMIT}`);
const windowFilters = {
  orgId: uuid().optional().describe('only this organization’s'),
  status: WindowStatusSchema.optional().describe('only windows with this status'),
};
export const WindowListQuery = z.strictObject({ ...windowFilters, cursor: z.string().optional().describe('`nextCursor` of the previous page'), limit });
export type WindowListInput = z.input<typeof WindowListQuery>;
export const WindowConnectionArgs = z.strictObject({ ...windowFilters, first: limit, after: z.string().optional().describe('`endCursor` of the previous page') });
export type WindowConnectionInput = z.input<typeof WindowConnectionArgs>;

const occurrenceFilters = {
  orgId: uuid().optional().describe('only this organization’s'),
  windowId: uuid().optional().describe('only this window’s'),
  status: OccurrenceStatusSchema.optional().describe('only occurrences with this status'),
  from: isoDateTime().optional().describe('only occurrences ending after this instant'),
  to: isoDateTime().optional().describe('only occurrences starting before this instant'),
};
export const OccurrenceListQuery = z.strictObject({ ...occurrenceFilters, cursor: z.string().optional().describe('`nextCursor` of the previous page'), limit });
export type OccurrenceListInput = z.input<typeof OccurrenceListQuery>;
export const OccurrenceConnectionArgs = z.strictObject({ ...occurrenceFilters, first: limit, after: z.string().optional().describe('`endCursor` of the previous page') });
export type OccurrenceConnectionInput = z.input<typeof OccurrenceConnectionArgs>;

export const WindowOccurrencesQuery = z.strictObject({
  from: isoDateTime().optional().describe('start of the range (now by default; a one-off window without a range lists its one occurrence)'),
  to: isoDateTime().optional().describe(`end of the range (30 days after \`from\` by default); a range spans at most ${MAX_RANGE_DAYS} days and lies within ${RANGE_REACH_DAYS} days of now`),
});
export type WindowOccurrencesInput = z.input<typeof WindowOccurrencesQuery>;

export const ActiveQuery = z.strictObject({ orgId: uuid().optional().describe('only this organization’s') });
export type ActiveInput = z.input<typeof ActiveQuery>;

// ── views ───────────────────────────────────────────────────────────────────────────────────────

const iso = (date: Date | null) => date?.toISOString() ?? null;

function windowView(w: MaintenanceWindow): MaintenanceWindowView {
  return {
    id: w.id,
    orgId: w.orgId,
    siteId: w.siteId,
    name: w.name,
    timezone: w.timezone,
    startsAt: w.startsAt,
    durationMinutes: w.durationMinutes,
    recurrence: { type: w.recurrence.type, daysOfWeek: w.recurrence.daysOfWeek ?? null, dayOfMonth: w.recurrence.dayOfMonth ?? null, until: w.recurrence.until ?? null },
    targets: { siteIds: w.targetSiteIds, groupIds: w.targetGroupIds, deviceIds: w.targetDeviceIds },
    suppressAlerts: w.suppressAlerts,
    deferUpdates: w.deferUpdates,
    deferPatching: w.deferPatching,
    status: w.status,
    cancelledAt: iso(w.cancelledAt),
    createdAt: w.createdAt.toISOString(),
    updatedAt: w.updatedAt.toISOString(),
  };
}

function occurrenceView(o: MaintenanceOccurrence | ComputedOccurrence): OccurrenceView {
  return {
    id: o.id,
    windowId: o.windowId,
    orgId: o.orgId,
    startsAt: o.startsAt.toISOString(),
    endsAt: o.endsAt.toISOString(),
    status: o.status,
    startedAt: iso(o.startedAt),
    endedAt: iso(o.endedAt),
  };
}

function accessibleWindow(ctx: RequestContext, id: string, permission: Permission): Promise<MaintenanceWindow> {
  return loadOwned(ctx, MaintenanceWindow, id, permission, { resource: WINDOW });
}

/**
 * An occurrence the caller may act on with `permission`: its row, or, not made yet, the one its id
 * names, computed (its window's access decides; another tenant's, or a start its window does not
 * have, is 404).
 */
async function accessibleOccurrence(ctx: RequestContext, id: string, permission: Permission): Promise<MaintenanceOccurrence | ComputedOccurrence> {
  const named = isUuid(id) && !(await ctx.em.findOne(MaintenanceOccurrence, { id })) ? await windowNamedBy(ctx, id) : null;
  if (!named) return loadOwned(ctx, MaintenanceOccurrence, id, permission, { resource: OCCURRENCE });
  const window = await loadOwned(ctx, MaintenanceWindow, named.id, permission, { resource: OCCURRENCE });
  const near = new Date(named.startsAt.getTime() + 1000);
  const computed = computedOccurrences(window, named.startsAt, near, ctx.runtime.clock.now()).find((o) => o.id === id.toLowerCase());
  // A row made at that start under another id (before ids named their start) is that occurrence: this id is none.
  if (!computed || (await ctx.em.count(MaintenanceOccurrence, { windowId: window.id, startsAt: computed.startsAt }))) throw notFound(OCCURRENCE);
  return computed;
}

// ── validation ──────────────────────────────────────────────────────────────────────────────────

function invalid(path: string, message: string) {
  return badRequest(`${path}: ${message}`, [{ path, message }]);
}

type RecurrenceInput = z.output<typeof RecurrenceInputSchema>;

/** The schedule's rules beyond each field's shape: a real zone and local date-time, and a recurrence whose parts fit its type. */
function checkSchedule(schedule: { timezone: string; startsAt: string; durationMinutes: number; recurrence: RecurrenceInput }): WindowSchedule {
  if (!isTimeZone(schedule.timezone)) throw invalid('timezone', `"${schedule.timezone}" is not a known IANA time zone (e.g. America/New_York)`);
  const local = parseLocal(schedule.startsAt);
  if (!local) throw invalid('startsAt', 'must be a local date-time without an offset, YYYY-MM-DDTHH:mm[:ss]');
  const { type, daysOfWeek, dayOfMonth, until } = schedule.recurrence;
  if (daysOfWeek && type !== 'weekly') throw invalid('recurrence.daysOfWeek', 'applies to weekly recurrences only');
  if (dayOfMonth !== undefined && type !== 'monthly') throw invalid('recurrence.dayOfMonth', 'applies to monthly recurrences only');
  if (until !== undefined) {
    if (type === 'once') throw invalid('recurrence.until', 'applies to repeating recurrences only');
    if (!parseLocal(`${until}T00:00`)) throw invalid('recurrence.until', 'must be a real date, YYYY-MM-DD');
    if (until < schedule.startsAt.slice(0, 10)) throw invalid('recurrence.until', 'must not be before the start date');
  }
  if (type === 'daily' && schedule.durationMinutes > 24 * 60) throw invalid('durationMinutes', 'a daily window lasts at most 1440 minutes (its occurrences would overlap)');
  const recurrence: Recurrence = { type, ...(daysOfWeek ? { daysOfWeek: [...new Set(daysOfWeek)].sort() } : {}), ...(dayOfMonth !== undefined ? { dayOfMonth } : {}), ...(until ? { until } : {}) };
  return { timezone: schedule.timezone, startsAt: formatLocal(local), durationMinutes: schedule.durationMinutes, recurrence };
}

interface Targets {
  targetSiteIds: string[];
  targetGroupIds: string[];
  targetDeviceIds: string[];
  /** the one site every target lies in, or null */
  siteId: string | null;
}

/**
 * The targets as the caller may give them (`checkTargets`: 404 for what it cannot see), in their
 * stored form. A user limited to some sites must also keep the window to one of their sites, which
 * then shows it.
 */
async function checkWindowTargets(ctx: RequestContext, orgId: string, input: z.output<typeof TargetsInputSchema>): Promise<Targets> {
  const target = toTarget({ orgId, ...input });
  const { siteId } = await checkTargets(ctx, target);
  if (visibleSiteIds(ctx, orgId) && !siteId) throw forbidden('Users limited to some sites must target devices of one of their sites');
  return { targetSiteIds: target.siteIds ?? [], targetGroupIds: target.groupIds ?? [], targetDeviceIds: target.deviceIds ?? [], siteId };
}

// ── windows ─────────────────────────────────────────────────────────────────────────────────────

export async function createWindow(ctx: RequestContext, rawInput: CreateWindowInput): Promise<MaintenanceWindowView> {
  const input = parseInput(CreateWindowSchema, rawInput);
  const orgId = await targetOrgId(ctx, input.orgId);
  const principal = await authorize(ctx, 'maintenance:write', { orgId, resource: 'Organization' });
  const schedule = checkSchedule(input);
  const targets = await checkWindowTargets(ctx, orgId, input.targets);
  return withTransaction(ctx, async (tx) => {
    const window = tx.em.create(MaintenanceWindow, {
      orgId,
      name: input.name,
      ...schedule,
      ...targets,
      suppressAlerts: input.suppressAlerts,
      deferUpdates: input.deferUpdates,
      deferPatching: input.deferPatching,
      createdBy: principal.userId,
      createdAt: tx.runtime.clock.now(),
    });
    await tx.em.flush();
    await scheduleAhead(tx, window);
    await recordAudit(tx, { action: 'maintenance_window.create', resourceType: 'maintenance_window', resourceId: window.id, orgId, changes: providedFields({ ...input, orgId }), details: { name: window.name } });
    return windowView(window);
  });
}

export async function getWindow(ctx: RequestContext, id: string): Promise<MaintenanceWindowView> {
  return windowView(await accessibleWindow(ctx, id, 'maintenance:read'));
}

async function windowFilter(ctx: RequestContext, query: { orgId?: string; status?: MaintenanceWindow['status'] }): Promise<FilterQuery<MaintenanceWindow>> {
  await authorize(ctx, 'maintenance:read');
  const where: FilterQuery<MaintenanceWindow>[] = [(await tenantWhere<MaintenanceWindow>(ctx, { org: 'orgId', site: 'siteId', requestedOrgId: query.orgId })) ?? {}];
  if (query.status) where.push({ status: query.status });
  return { $and: where } as FilterQuery<MaintenanceWindow>;
}

/** Keyset pages by creation (oldest first): `limit + 1` rows tell whether another page follows. */
async function windowPage(ctx: RequestContext, where: FilterQuery<MaintenanceWindow>, cursor: string | undefined, limit: number) {
  const keyset = keysetWhere('createdAt', 'date', 'asc', cursor);
  const rows = await ctx.em.find(MaintenanceWindow, { $and: [where, keyset.where] } as FilterQuery<MaintenanceWindow>, { orderBy: keyset.orderBy, limit: limit + 1 });
  const items = rows.slice(0, limit);
  const cursorOf = (w: MaintenanceWindow) => encodeCursor({ value: w.createdAt.toISOString(), id: w.id });
  return { items, cursorOf, hasMore: rows.length > limit };
}

/** The windows the caller can see (users limited to some sites: their sites’), oldest first. */
export async function listWindows(ctx: RequestContext, rawQuery: WindowListInput): Promise<CursorPage<MaintenanceWindowView>> {
  const query = parseInput(WindowListQuery, rawQuery);
  const page = await windowPage(ctx, await windowFilter(ctx, query), query.cursor, query.limit);
  const last = page.items.at(-1);
  return { data: page.items.map(windowView), nextCursor: page.hasMore && last ? page.cursorOf(last) : null };
}

export async function windowsConnection(ctx: RequestContext, rawArgs: WindowConnectionInput): Promise<Connection<MaintenanceWindowView>> {
  const args = parseInput(WindowConnectionArgs, rawArgs);
  const where = await windowFilter(ctx, args);
  const page = await windowPage(ctx, where, args.after, args.first);
  const edges = page.items.map((w) => ({ node: windowView(w), cursor: page.cursorOf(w) }));
  return { edges, pageInfo: pageInfoOf(edges, page.hasMore, args.after != null), totalCount: () => ctx.em.count(MaintenanceWindow, where) };
}

function lockWindow(tx: RequestContext, id: string): Promise<MaintenanceWindow> {
  return tx.em.findOneOrFail(MaintenanceWindow, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
}

const SCHEDULE_FIELDS = ['timezone', 'startsAt', 'durationMinutes', 'recurrence'];
const TARGET_FIELDS = ['targetSiteIds', 'targetGroupIds', 'targetDeviceIds', 'siteId', 'suppressAlerts', 'deferUpdates', 'deferPatching'];

/**
 * Changes a window. A new schedule replaces the occurrences not begun yet; new targets or flags take
 * effect at once, on an occurrence under way too. A cancelled window takes no changes (409).
 */
export async function updateWindow(ctx: RequestContext, id: string, rawInput: UpdateWindowInput): Promise<MaintenanceWindowView> {
  const input = parseInput(UpdateWindowSchema, rawInput);
  const current = await accessibleWindow(ctx, id, 'maintenance:write');
  if (current.status === 'cancelled') throw conflict('The maintenance window is cancelled');
  const schedule =
    input.timezone !== undefined || input.startsAt !== undefined || input.durationMinutes !== undefined || input.recurrence !== undefined
      ? checkSchedule({
          timezone: input.timezone ?? current.timezone,
          startsAt: input.startsAt ?? current.startsAt,
          durationMinutes: input.durationMinutes ?? current.durationMinutes,
          recurrence: input.recurrence ?? current.recurrence,
        })
      : {};
  const targets = input.targets ? await checkWindowTargets(ctx, current.orgId, input.targets) : {};
  return withTransaction(ctx, async (tx) => {
    const window = await lockWindow(tx, id);
    if (window.status === 'cancelled') throw conflict('The maintenance window is cancelled');
    const changes = applyChanges(window, { name: input.name, ...schedule, ...targets, suppressAlerts: input.suppressAlerts, deferUpdates: input.deferUpdates, deferPatching: input.deferPatching });
    if (changes.length === 0) return windowView(window);
    await tx.em.flush();
    if (changes.includes('siteId')) await tx.em.nativeUpdate(MaintenanceOccurrence, { windowId: id }, { siteId: window.siteId });
    if (changes.some((c) => SCHEDULE_FIELDS.includes(c))) {
      await tx.em.nativeDelete(MaintenanceOccurrence, { windowId: id, status: 'scheduled' });
      window.scheduledThrough = null;
      await scheduleAhead(tx, window);
    }
    if (changes.some((c) => TARGET_FIELDS.includes(c))) await reconcileDeviceStatuses(tx, window.orgId);
    await recordAudit(tx, { action: 'maintenance_window.update', resourceType: 'maintenance_window', resourceId: id, orgId: window.orgId, changes, details: { name: window.name } });
    return windowView(window);
  });
}

/** The window and its occurrences go; devices it held in maintenance return to online or offline. */
export async function deleteWindow(ctx: RequestContext, id: string): Promise<void> {
  const window = await accessibleWindow(ctx, id, 'maintenance:write');
  await withTransaction(ctx, async (tx) => {
    await lockWindow(tx, id);
    await tx.em.nativeDelete(MaintenanceWindow, { id });
    await reconcileDeviceStatuses(tx, window.orgId);
    await recordAudit(tx, { action: 'maintenance_window.delete', resourceType: 'maintenance_window', resourceId: id, orgId: window.orgId, details: { name: window.name } });
  });
}

/** No more occurrences: those not begun are cancelled; one under way runs to its end (or is ended by hand). Cancelling again changes nothing. */
export async function cancelWindow(ctx: RequestContext, id: string): Promise<MaintenanceWindowView> {
  await accessibleWindow(ctx, id, 'maintenance:write');
  return withTransaction(ctx, async (tx) => {
    const window = await lockWindow(tx, id);
    if (window.status === 'cancelled') return windowView(window);
    window.status = 'cancelled';
    window.cancelledAt = tx.runtime.clock.now();
    await tx.em.flush();
    const cancelled = await tx.em.nativeUpdate(MaintenanceOccurrence, { windowId: id, status: 'scheduled' }, { status: 'cancelled' });
    await recordAudit(tx, { action: 'maintenance_window.cancel', resourceType: 'maintenance_window', resourceId: id, orgId: window.orgId, details: { name: window.name, cancelledOccurrences: cancelled } });
    return windowView(window);
  });
}

// ── occurrences ─────────────────────────────────────────────────────────────────────────────────

function range(from: string | undefined, to: string | undefined, now: Date): { from: Date; to: Date } {
  const start = from ? new Date(from) : now;
  const end = to ? new Date(to) : new Date(start.getTime() + 30 * DAY_MS);
  if (end <= start) throw invalid('to', 'must be after `from`');
  if (end.getTime() - start.getTime() > MAX_RANGE_DAYS * DAY_MS) throw invalid('to', `a range spans at most ${MAX_RANGE_DAYS} days`);
  const beyond = (instant: Date) => Math.abs(instant.getTime() - now.getTime()) > RANGE_REACH_DAYS * DAY_MS;
  if (beyond(start) || beyond(end)) throw invalid(from && beyond(start) ? 'from' : 'to', `must be within ${RANGE_REACH_DAYS} days of now`);
  return { from: start, to: end };
}

function onlyOccurrence(window: MaintenanceWindow): { from: Date; to: Date } {
  const from = toInstant(parseLocal(window.startsAt)!, window.timezone);
  return { from, to: new Date(from.getTime() + window.durationMinutes * 60_000) };
}

/**
 * The window's occurrences overlapping the range, by start: its rows, and beyond them the ones its
 * schedule computes, each with the id its row will have. Writes nothing.
 */
export async function listWindowOccurrences(ctx: RequestContext, id: string, rawQuery: WindowOccurrencesInput): Promise<{ data: OccurrenceView[] }> {
  const query = parseInput(WindowOccurrencesQuery, rawQuery);
  const window = await accessibleWindow(ctx, id, 'maintenance:read');
  const now = ctx.runtime.clock.now();
  // A one-off window without a range: its one occurrence, whenever it is.
  const { from, to } = window.recurrence.type === 'once' && !query.from && !query.to ? onlyOccurrence(window) : range(query.from, query.to, now);
  const rows = await ctx.em.find(MaintenanceOccurrence, { windowId: window.id, endsAt: { $gt: from }, startsAt: { $lt: to } }, { orderBy: { startsAt: 'asc' } });
  const made = new Set(rows.map((r) => r.startsAt.getTime()));
  const computed = computedOccurrences(window, from, to, now).filter((o) => !made.has(o.startsAt.getTime()));
  return { data: [...rows, ...computed].sort((a, b) => a.startsAt.getTime() - b.startsAt.getTime()).map(occurrenceView) };
}

async function occurrenceFilter(ctx: RequestContext, query: z.output<typeof OccurrenceListQuery> | z.output<typeof OccurrenceConnectionArgs>): Promise<FilterQuery<MaintenanceOccurrence>> {
  await authorize(ctx, 'maintenance:read');
  const where: FilterQuery<MaintenanceOccurrence>[] = [(await tenantWhere<MaintenanceOccurrence>(ctx, { org: 'orgId', site: 'siteId', requestedOrgId: query.orgId })) ?? {}];
  if (query.windowId) where.push({ windowId: query.windowId });
  if (query.status) where.push({ status: query.status });
  if (query.from) where.push({ endsAt: { $gt: new Date(query.from) } });
  if (query.to) where.push({ startsAt: { $lt: new Date(query.to) } });
  return { $and: where } as FilterQuery<MaintenanceOccurrence>;
}

async function occurrencePage(ctx: RequestContext, where: FilterQuery<MaintenanceOccurrence>, cursor: string | undefined, limit: number) {
  const keyset = keysetWhere('startsAt', 'date', 'asc', cursor);
  const rows = await ctx.em.find(MaintenanceOccurrence, { $and: [where, keyset.where] } as FilterQuery<MaintenanceOccurrence>, { orderBy: keyset.orderBy, limit: limit + 1 });
  const cursorOf = (o: MaintenanceOccurrence) => encodeCursor({ value: o.startsAt.toISOString(), id: o.id });
  return { items: rows.slice(0, limit), cursorOf, hasMore: rows.length > limit };
}

/** The occurrences that are rows (the scheduling horizon's, those begun and the past) the caller can see, by start. */
export async function listOccurrences(ctx: RequestContext, rawQuery: OccurrenceListInput): Promise<CursorPage<OccurrenceView>> {
  const query = parseInput(OccurrenceListQuery, rawQuery);
  const page = await occurrencePage(ctx, await occurrenceFilter(ctx, query), query.cursor, query.limit);
  const last = page.items.at(-1);
  return { data: page.items.map(occurrenceView), nextCursor: page.hasMore && last ? page.cursorOf(last) : null };
}

export async function occurrencesConnection(ctx: RequestContext, rawArgs: OccurrenceConnectionInput): Promise<Connection<OccurrenceView>> {
  const args = parseInput(OccurrenceConnectionArgs, rawArgs);
  const where = await occurrenceFilter(ctx, args);
  const page = await occurrencePage(ctx, where, args.after, args.first);
  const edges = page.items.map((o) => ({ node: occurrenceView(o), cursor: page.cursorOf(o) }));
  return { edges, pageInfo: pageInfoOf(edges, page.hasMore, args.after != null), totalCount: () => ctx.em.count(MaintenanceOccurrence, where) };
}

export async function getOccurrence(ctx: RequestContext, id: string): Promise<OccurrenceView> {
  return occurrenceView(await accessibleOccurrence(ctx, id, 'maintenance:read'));
}

/** What is under way now: the active occurrences the caller can see (at most MAX_LIMIT), by start. */
export async function listActive(ctx: RequestContext, rawQuery: ActiveInput): Promise<{ data: OccurrenceView[] }> {
  const query = parseInput(ActiveQuery, rawQuery);
  const where = await occurrenceFilter(ctx, { ...query, status: 'active', limit: MAX_LIMIT });
  const rows = await ctx.em.find(MaintenanceOccurrence, where, { orderBy: { startsAt: 'asc', id: 'asc' }, limit: MAX_LIMIT });
  return { data: rows.map(occurrenceView) };
}

async function changeByHand(ctx: RequestContext, id: string, from: OccurrenceStatus, to: OccurrenceStatus, verb: 'start' | 'end'): Promise<OccurrenceView> {
  const found = await accessibleOccurrence(ctx, id, 'maintenance:write');
  const refused = (status: OccurrenceStatus) => conflict(`Only ${from} occurrences can be ${verb === 'start' ? 'started' : 'ended'}; this one is ${status}`);
  return withTransaction(ctx, async (tx) => {
    if (!(found instanceof MaintenanceOccurrence)) {
      // One beyond the rows becomes its row first (with its jobs, as the horizon's).
      if (found.status !== from) throw refused(found.status);
      await insertComputed(tx, found);
    }
    const occurrence = await lockOccurrence(tx, id);
    if (!occurrence) throw notFound(OCCURRENCE);
    if (occurrence.status !== from) throw refused(occurrence.status);
    const now = tx.runtime.clock.now();
    if (verb === 'start' && occurrence.endsAt <= now) throw conflict('The occurrence’s scheduled end has passed');
    occurrence.status = to;
    if (verb === 'start') occurrence.startedAt = now;
    else occurrence.endedAt = now;
    await tx.em.flush();
    await reconcileDeviceStatuses(tx, occurrence.orgId);
    await recordAudit(tx, { action: `maintenance_occurrence.${verb}`, resourceType: 'maintenance_occurrence', resourceId: id, orgId: occurrence.orgId, details: { windowId: occurrence.windowId } });
    return occurrenceView(occurrence);
  });
}

/** Begins a scheduled occurrence now, ahead of its schedule; it still ends at its scheduled end. */
export function startOccurrence(ctx: RequestContext, id: string): Promise<OccurrenceView> {
  return changeByHand(ctx, id, 'scheduled', 'active', 'start');
}

/** Ends an active occurrence now: its devices return to online or offline. */
export function endOccurrence(ctx: RequestContext, id: string): Promise<OccurrenceView> {
  return changeByHand(ctx, id, 'active', 'completed', 'end');
}
