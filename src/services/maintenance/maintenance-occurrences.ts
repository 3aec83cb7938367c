import { LockMode } from '@mikro-orm/core';
import { MaintenanceOccurrence, MaintenanceWindow, type OccurrenceStatus } from '../../../entities/maintenance.js';
import type { RequestContext } from '../../auth/context.js';
import { requestRows, statement, type PreparedStatement } from '../../db/prepared.js';
import { withTransaction } from '../../db/transaction.js';
import { changeStatus, findDevices } from '../devices/api.js';
import { startsBetween, type RecurringSchedule } from '../shared/schedule.js';

/*
 * Maintenance occurrences and what they do to devices: which devices an active occurrence covers,
 * occurrences computed from a window's schedule, their rows made ahead with their start and end jobs,
 * and the due-work tick that catches up whatever a job missed. The windows and the API over
 * occurrences are in maintenance.ts.
 */

export const START_JOB = 'maintenance.occurrence-start';
export const END_JOB = 'maintenance.occurrence-end';

export const DAY_MS = 86_400_000;
/** occurrences exist as rows (with their jobs) this far ahead */
const HORIZON_MS = 14 * DAY_MS;
/** Agenda may fire a job a moment before its due time; within this margin it is due. */
const EARLY_TOLERANCE_MS = 1000;
/** occurrences the tick moves on per run (the rest on the next) */
const TICK_BATCH = 200;

// ── who is under maintenance ────────────────────────────────────────────────────────────────────

/** Whether device `d` is a target of window `w`: empty targets mean the whole organization. */
const TARGETED = `(w.org_id = d.org_id and (
    (cardinality(w.target_site_ids) = 0 and cardinality(w.target_group_ids) = 0 and cardinality(w.target_device_ids) = 0)
    or d.id = any(w.target_device_ids)
    or d.site_id = any(w.target_site_ids)
    or exists (select 1 from device_group_member m where m.device_id = d.id and m.source is not null and m.group_id = any(w.target_group_ids))))`;

/** An active occurrence of a window (with the given flag) covers device `d`. */
const UNDER_MAINTENANCE = (flag?: 'suppress_alerts' | 'defer_updates' | 'defer_patching') =>
  `exists (select 1 from maintenance_occurrence o join maintenance_window w on w.id = o.window_id
    where o.org_id = d.org_id and o.status = 'active'${flag ? ` and w.${flag}` : ''} and ${TARGETED})`;

const COVERED = (flag: 'suppress_alerts' | 'defer_updates' | 'defer_patching') => statement(`select d.id from device d where d.id = any(?::uuid[]) and ${UNDER_MAINTENANCE(flag)}`);
const SUPPRESSED = COVERED('suppress_alerts');
const UPDATES_DEFERRED = COVERED('defer_updates');
const PATCHING_DEFERRED = COVERED('defer_patching');

async function covered(ctx: RequestContext, prepared: PreparedStatement, deviceIds: string[]): Promise<Set<string>> {
  if (deviceIds.length === 0) return new Set();
  const rows = await requestRows<{ id: string }>(ctx.em, prepared, [deviceIds]);
  return new Set(rows.map((r) => r.id));
}

/**
 * The ids among `deviceIds` under an active occurrence of a window that suppresses alerts (one
 * statement; the alert domain asks it when an alert would fire). Makes no access decision: the caller
 * already acts on these devices.
 */
export function suppressedDeviceIds(ctx: RequestContext, deviceIds: string[]): Promise<Set<string>> {
  return covered(ctx, SUPPRESSED, deviceIds);
}

/** The ids among `deviceIds` whose agent updates an active occurrence defers (no `upgradeTo` in heartbeats). */
export function updatesDeferredDeviceIds(ctx: RequestContext, deviceIds: string[]): Promise<Set<string>> {
  return covered(ctx, UPDATES_DEFERRED, deviceIds);
}

/** The ids among `deviceIds` whose patching an active occurrence defers (for the patch domain). */
export function patchingDeferredDeviceIds(ctx: RequestContext, deviceIds: string[]): Promise<Set<string>> {
  return covered(ctx, PATCHING_DEFERRED, deviceIds);
}

/**
 * Brings the organization's device statuses in line with its active occurrences: online and offline
 * devices an active occurrence covers show `maintenance` (an updating one once its update is over);
 * the others that show it return to online or offline by when they were last seen. Each change goes through `changeStatus` (its event), under the device's lock.
 */
export async function reconcileDeviceStatuses(tx: RequestContext, orgId: string): Promise<void> {
  // Only the devices whose status is wrong: the tick runs this every few seconds, and a device locked for nothing would hold up its heartbeat.
  const rows = (await tx.em.execute(
    `select id, covered from (
        select d.id, d.status, ${UNDER_MAINTENANCE()} as covered from device d where d.org_id = ? and d.status in ('online', 'offline', 'maintenance')
      ) as standing
      where covered <> (status = 'maintenance')
      order by id`,
    [orgId],
  )) as { id: string; covered: boolean }[];
  if (rows.length === 0) return;
  const entering = new Set(rows.filter((r) => r.covered).map((r) => r.id));
  const now = tx.runtime.clock.now();
  const silentSince = now.getTime() - tx.runtime.config.devices.offlineAfterSeconds * 1000;
  const devices = await findDevices(tx, { ids: rows.map((r) => r.id) }, { scope: 'all', orderBy: 'id', lock: true });
  for (const device of devices) {
    if (entering.has(device.id)) {
      if (device.status === 'online' || device.status === 'offline') await changeStatus(tx, device, 'maintenance');
    } else if (device.status === 'maintenance') {
      await changeStatus(tx, device, device.lastSeenAt.getTime() > silentSince ? 'online' : 'offline');
    }
  }
}


// ── occurrences computed ────────────────────────────────────────────────────────────────────────

export type WindowSchedule = RecurringSchedule & { durationMinutes: number };

interface Occurrence {
  startsAt: Date;
  endsAt: Date;
}

/** An occurrence that is no row (yet): computed from its window's schedule when read. */
export interface ComputedOccurrence extends Occurrence {
  id: string;
  windowId: string;
  orgId: string;
  status: OccurrenceStatus;
  startedAt: null;
  endedAt: null;
}

/** The occurrences that overlap [from, to), by start: each starts at a start of the schedule and lasts `durationMinutes`. */
function occurrencesBetween(window: WindowSchedule, from: Date, to: Date): Occurrence[] {
  const duration = window.durationMinutes * 60_000;
  return startsBetween(window, new Date(from.getTime() - duration), to)
    .map((startsAt) => ({ startsAt, endsAt: new Date(startsAt.getTime() + duration) }))
    .filter((o) => o.endsAt > from);
}

const ID_TIME_RANGE = 2 ** 48;

/**
 * An occurrence's id: its window's id with the last group (48 bits) replaced by its start in epoch
 * seconds (two's complement). A computed occurrence and its row share it, so an id listed before the
 * tick made the row still names it; and the id names its window and start, so a computed one is
 * found by it.
 */
function occurrenceId(windowId: string, startsAt: Date): string {
  const seconds = Math.floor(startsAt.getTime() / 1000);
  return `${windowId.slice(0, 24).toLowerCase()}${(seconds < 0 ? seconds + ID_TIME_RANGE : seconds).toString(16).padStart(12, '0')}`;
}

/** The window an occurrence id names (by its first four groups; no access decision) and the start it names. */
export async function windowNamedBy(ctx: RequestContext, id: string): Promise<{ id: string; startsAt: Date } | null> {
  const prefix = id.slice(0, 24).toLowerCase();
  const window = await ctx.em.findOne(MaintenanceWindow, { id: { $gte: `${prefix}000000000000`, $lte: `${prefix}ffffffffffff` } });
  if (!window) return null;
  const value = Number.parseInt(id.slice(24), 16);
  return { id: window.id, startsAt: new Date((value >= ID_TIME_RANGE / 2 ? value - ID_TIME_RANGE : value) * 1000) };
}

/**
 * The window's occurrences overlapping [from, to) as they stand without rows: over (never run) once
 * their end has passed, cancelled when their window was cancelled before their end, else scheduled.
 */
export function computedOccurrences(window: MaintenanceWindow, from: Date, to: Date, now: Date): ComputedOccurrence[] {
  const cutoff = window.cancelledAt && window.cancelledAt < now ? window.cancelledAt : now;
  return occurrencesBetween(window, from, to).map((o) => ({
    ...o,
    id: occurrenceId(window.id, o.startsAt),
    windowId: window.id,
    orgId: window.orgId,
    status: o.endsAt <= cutoff ? 'completed' : window.status === 'cancelled' ? 'cancelled' : 'scheduled',
    startedAt: null,
    endedAt: null,
  }));
}

// ── occurrences as rows ─────────────────────────────────────────────────────────────────────────

/**
 * Queues an occurrence's start and end. Agenda runs on the real clock; the service's clock may be
 * another (tests move it), so each job is due as far from real now as its instant is from the
 * service's now.
 */
function scheduleJobs(tx: RequestContext, occurrences: { id: string; startsAt: Date; endsAt: Date }[]): void {
  if (occurrences.length === 0) return;
  const shift = Date.now() - tx.runtime.clock.now().getTime();
  const at = (instant: Date) => new Date(instant.getTime() + shift);
  tx.afterCommit(async () => {
    for (const o of occurrences) {
      await tx.runtime.jobs.schedule(START_JOB, { occurrenceId: o.id }, at(o.startsAt));
      await tx.runtime.jobs.schedule(END_JOB, { occurrenceId: o.id }, at(o.endsAt));
    }
  });
}

/**
 * Makes the rows of a window's occurrences that did not exist yet, each with its id, and queues their
 * jobs. One whose end has already passed is made `completed` (its `startedAt` null: it never ran).
 */
async function insertOccurrences(tx: RequestContext, window: MaintenanceWindow, wanted: Occurrence[]): Promise<void> {
  if (window.status !== 'active' || wanted.length === 0) return;
  const rows = (await tx.em.execute(
    `insert into maintenance_occurrence (id, created_at, updated_at, window_id, org_id, site_id, starts_at, ends_at, status)
      select i, now(), now(), ?, ?, ?, s, e, case when e <= ? then 'completed' else 'scheduled' end
        from unnest(?::uuid[], ?::timestamptz[], ?::timestamptz[]) as t(i, s, e)
      on conflict do nothing
      returning id, starts_at, ends_at, status`,
    [
      window.id,
      window.orgId,
      window.siteId,
      tx.runtime.clock.now(),
      pgArray(wanted.map((o) => occurrenceId(window.id, o.startsAt))),
      pgArray(wanted.map((o) => o.startsAt.toISOString())),
      pgArray(wanted.map((o) => o.endsAt.toISOString())),
    ],
  )) as { id: string; starts_at: Date | string; ends_at: Date | string; status: OccurrenceStatus }[];
  scheduleJobs(
    tx,
    rows.filter((r) => r.status === 'scheduled').map((r) => ({ id: r.id, startsAt: new Date(r.starts_at), endsAt: new Date(r.ends_at) })),
  );
}

/** An array parameter as PostgreSQL's literal: the ORM's raw statements would spread a JavaScript array into a list. */
const pgArray = (values: string[]) => `{${values.join(',')}}`;

/** Occurrences up to the horizon: made when a window is created or rescheduled, and extended by the tick. */
export async function scheduleAhead(tx: RequestContext, window: MaintenanceWindow): Promise<void> {
  const now = tx.runtime.clock.now();
  const through = new Date(now.getTime() + HORIZON_MS);
  await insertOccurrences(tx, window, occurrencesBetween(window, window.scheduledThrough ?? now, through));
  window.scheduledThrough = through;
  await tx.em.flush();
}

/** Makes a computed occurrence its row (started by hand), under its window's lock, if the window still has it. */
export async function insertComputed(tx: RequestContext, computed: ComputedOccurrence): Promise<void> {
  const window = await tx.em.findOne(MaintenanceWindow, { id: computed.windowId }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
  if (!window) return;
  const after = new Date(computed.startsAt.getTime() + 1);
  await insertOccurrences(tx, window, occurrencesBetween(window, computed.startsAt, after).filter((o) => o.startsAt.getTime() === computed.startsAt.getTime()));
}

/**
 * Moves an occurrence on by the clock: a scheduled one whose start has come begins (or, its end
 * passed too, is completed without having run); an active one whose end has come ends. Answers
 * whether it changed.
 */
async function advance(tx: RequestContext, occurrence: MaintenanceOccurrence): Promise<boolean> {
  const now = tx.runtime.clock.now();
  const due = now.getTime() + EARLY_TOLERANCE_MS;
  if (occurrence.status === 'scheduled' && occurrence.startsAt.getTime() <= due) {
    if (occurrence.endsAt.getTime() <= now.getTime()) {
      occurrence.status = 'completed';
    } else {
      occurrence.status = 'active';
      occurrence.startedAt = now;
    }
  } else if (occurrence.status === 'active' && occurrence.endsAt.getTime() <= due) {
    occurrence.status = 'completed';
    occurrence.endedAt = now;
  } else {
    return false;
  }
  await tx.em.flush();
  await reconcileDeviceStatuses(tx, occurrence.orgId);
  return true;
}

export function lockOccurrence(tx: RequestContext, id: string): Promise<MaintenanceOccurrence | null> {
  return tx.em.findOne(MaintenanceOccurrence, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
}

/** An occurrence's start or end job: moves it on if its time has come (a job for a cancelled or ended one does nothing). */
export async function runOccurrenceJob(ctx: RequestContext, occurrenceId: string): Promise<void> {
  await withTransaction(ctx, async (tx) => {
    const occurrence = await lockOccurrence(tx, occurrenceId);
    if (occurrence) await advance(tx, occurrence);
  });
}

/**
 * The recurring catch-up: occurrences whose start or end has passed without their job (a crash, a
 * clock moved) move on, device statuses follow target changes during an occurrence, and windows get
 * their occurrences up to the horizon. Answers how many occurrences moved.
 */
export async function maintenanceTick(ctx: RequestContext, now: Date): Promise<number> {
  const due = await ctx.em.find(
    MaintenanceOccurrence,
    { $or: [{ status: 'scheduled', startsAt: { $lte: now } }, { status: 'active', endsAt: { $lte: now } }] },
    { fields: ['id'], orderBy: { startsAt: 'asc' }, limit: TICK_BATCH },
  );
  let moved = 0;
  for (const { id } of due) {
    await withTransaction(ctx, async (tx) => {
      const occurrence = await lockOccurrence(tx, id);
      if (occurrence && (await advance(tx, occurrence))) moved += 1;
    });
  }
  // Devices that joined a target (enrolled, moved, a group's new member) or left one while an occurrence is under way.
  const orgs = (await ctx.em.execute(`select distinct org_id from maintenance_occurrence where status = 'active' limit ?`, [TICK_BATCH])) as { org_id: string }[];
  for (const { org_id: orgId } of orgs) await withTransaction(ctx, (tx) => reconcileDeviceStatuses(tx, orgId));
  const refill = new Date(now.getTime() + HORIZON_MS - DAY_MS);
  const windows = await ctx.em.find(MaintenanceWindow, { status: 'active', $or: [{ scheduledThrough: null }, { scheduledThrough: { $lt: refill } }] }, { fields: ['id'], limit: TICK_BATCH });
  for (const { id } of windows) {
    await withTransaction(ctx, async (tx) => {
      const window = await tx.em.findOne(MaintenanceWindow, { id }, { lockMode: LockMode.PESSIMISTIC_WRITE, refresh: true });
      if (window?.status === 'active') await scheduleAhead(tx, window);
    });
  }
  return moved;
}

