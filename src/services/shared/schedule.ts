import { CronExpressionParser } from 'cron-parser';
import { DateTime, IANAZone } from 'luxon';

/*
 * The one schedule engine: a five-field cron expression or a calendar recurrence, read in an IANA
 * time zone, and its starts as UTC instants (next, previous, between). Pure: no entities, no
 * database, so every domain that schedules (automations, maintenance, and what comes) uses it.
 *
 * Both kinds name local wall-clock times. The arithmetic runs on the wall-clock timeline (local
 * times written as if they were UTC, where no day has a gap or an overlap), then each local time
 * becomes one instant: one that does not exist (a spring-forward gap) is the first instant after
 * it, the end of the gap; one that occurs twice (a fall-back overlap) is the first of the two. So a
 * schedule fires once per local time: `30 2 * * *` fires at 03:00 on the day 02:30 is skipped, and
 * `*\/20 * * * *` pauses through the repeated hour instead of firing twice for each local time.
 */

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;
/** The longest wait between two starts of a repeating recurrence (the 31st: January to March) with margin. */
const LONGEST_GAP_MS = 70 * DAY_MS;
/** Starts `startsBetween` answers at most (a minute cron over a year would be half a million). */
const MAX_STARTS = 10_000;

export const RECURRENCE_KINDS = ['once', 'daily', 'weekly', 'monthly'] as const;

/** How a recurring schedule repeats, in its time zone. */
export interface Recurrence {
  type: (typeof RECURRENCE_KINDS)[number];
  /** weekly: 0–6, Sunday 0 (the first start's day by default) */
  daysOfWeek?: number[];
  /** monthly: 1–31 (the first start's by default); months without that day are skipped */
  dayOfMonth?: number;
  /** a local date (YYYY-MM-DD): no start after that day */
  until?: string;
}

/** Fires at the local times a five-field cron expression (minute hour day-of-month month day-of-week) names. */
export interface CronSchedule {
  cron: string;
  timezone: string;
}

/** Fires at the local time of `startsAt` on the days its recurrence names, from that day on. */
export interface RecurringSchedule {
  timezone: string;
  /** the first start, local `YYYY-MM-DDTHH:mm[:ss]` */
  startsAt: string;
  recurrence: Recurrence;
}

export type Schedule = CronSchedule | RecurringSchedule;

export interface LocalDateTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

// ── zones and local times ───────────────────────────────────────────────────────────────────────

/** A zone the runtime's Intl knows (IANA names such as Europe/Berlin, or UTC). */
export function isTimeZone(zone: string): boolean {
  return IANAZone.isValidZone(zone);
}

const LOCAL = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/;

/** `YYYY-MM-DDTHH:mm[:ss]` as a real calendar date-time (no offset), or null. */
export function parseLocal(text: string): LocalDateTime | null {
  const match = LOCAL.exec(text);
  if (!match) return null;
  const [year, month, day, hour, minute, second] = match.slice(1).map((part) => Number(part ?? 0)) as [number, number, number, number, number, number];
  const check = DateTime.fromObject({ year, month, day, hour, minute, second }, { zone: 'utc' });
  return check.isValid ? { year, month, day, hour, minute, second } : null;
}

/** The canonical stored form, `YYYY-MM-DDTHH:mm:ss`. */
export function formatLocal(local: LocalDateTime): string {
  return DateTime.fromObject(local, { zone: 'utc' }).toFormat("yyyy-MM-dd'T'HH:mm:ss");
}

/** The local wall-clock time as if it were UTC: the arithmetic's timeline of local times. */
function wallMillis(local: LocalDateTime): number {
  return Date.UTC(local.year, local.month - 1, local.day, local.hour, local.minute, local.second);
}

/** What a clock in `zone` reads at `instant`, on the wall-clock timeline. */
function wallOf(instant: number, zone: IANAZone): number {
  return instant + zone.offset(instant) * MINUTE_MS;
}

/**
 * The instant of a wall-clock time in `zone`. The zone's offsets a day either side are the only
 * candidates (no zone changes its offset twice within two days); a candidate is real when the zone
 * has that offset at that instant, and the first real one wins (an overlap). None real: the time fell
 * in a gap, which ends at the transition.
 */
function instantOfWall(wall: number, tz: IANAZone): number {
  const offsets = [...new Set([tz.offset(wall - DAY_MS), tz.offset(wall + DAY_MS)])];
  const real = offsets.map((offset) => wall - offset * MINUTE_MS).filter((instant) => tz.offset(instant) * MINUTE_MS === wall - instant);
  if (real.length > 0) return Math.min(...real);
  // The gap: before it the zone is behind (earlier offset), after it ahead. The transition lies between
  // the two readings of the wall time; find it to the millisecond.
  const before = tz.offset(wall - DAY_MS);
  let low = wall - Math.max(...offsets) * MINUTE_MS;
  let high = wall - Math.min(...offsets) * MINUTE_MS;
  while (high - low > 1) {
    const middle = Math.floor((low + high) / 2);
    if (tz.offset(middle) === before) low = middle;
    else high = middle;
  }
  return high;
}

/** The UTC instant of a local date-time in `zone` (gaps and overlaps resolved as above). */
export function toInstant(local: LocalDateTime, zone: string): Date {
  return new Date(instantOfWall(wallMillis(local), IANAZone.create(zone)));
}

/** The local calendar day of an instant, as a wall-clock day (UTC midnight on the wall-clock timeline). */
function localDay(instant: number, tz: IANAZone): number {
  const wall = wallOf(instant, tz);
  return wall - (((wall % DAY_MS) + DAY_MS) % DAY_MS);
}

// ── cron ────────────────────────────────────────────────────────────────────────────────────────

/** Five fields (minute precision); cron-parser would also take seconds. Read on the wall-clock timeline. */
function cronOnWall(cron: string, wall: number) {
  if (cron.trim().split(/\s+/).length !== 5) throw new Error('must have five fields: minute hour day-of-month month day-of-week');
  return CronExpressionParser.parse(cron, { tz: 'UTC', currentDate: new Date(wall), strict: false });
}

/** Why a cron expression is refused, or null when it is a valid five-field expression. */
export function cronError(cron: string): string | null {
  try {
    cronOnWall(cron, 0);
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

/*
 * Wall-clock time to instant never goes backwards (a gap's times share its end; an overlap's second
 * pass maps onto the first), so walking the cron's wall times in order walks its instants in order.
 */

/** The cron's instants after `after`, in order, each once (the wall times of a gap share one). */
function* cronStarts(schedule: CronSchedule, after: number): Generator<number> {
  const tz = IANAZone.create(schedule.timezone);
  // The wall reading of `after` maps to at most `after`: every start after it comes from a later wall time.
  const walls = cronOnWall(schedule.cron, wallOf(after, tz));
  let last = after;
  while (walls.hasNext()) {
    const instant = instantOfWall(walls.next().getTime(), tz);
    if (instant > last) yield (last = instant);
  }
}

function cronNext(schedule: CronSchedule, after: number): number | null {
  return cronStarts(schedule, after).next().value ?? null;
}

function cronPrevious(schedule: CronSchedule, atOrBefore: number): number | null {
  const tz = IANAZone.create(schedule.timezone);
  // Beyond `at` read with the zone's largest offset around it, every wall time maps after `at`.
  const largest = Math.max(tz.offset(atOrBefore - DAY_MS), tz.offset(atOrBefore), tz.offset(atOrBefore + DAY_MS));
  const walls = cronOnWall(schedule.cron, atOrBefore + largest * MINUTE_MS + 1);
  while (walls.hasPrev()) {
    const instant = instantOfWall(walls.prev().getTime(), tz);
    if (instant <= atOrBefore) return instant;
  }
  return null;
}

// ── recurrences ─────────────────────────────────────────────────────────────────────────────────

/** Start days, on the wall-clock timeline, from `fromDay` (inclusive) until `toDay` (inclusive). */
function* startDays(first: LocalDateTime, recurrence: Recurrence, fromDay: number, toDay: number): Generator<number> {
  const firstDay = Date.UTC(first.year, first.month - 1, first.day);
  const until = recurrence.until ? Date.parse(`${recurrence.until}T00:00:00Z`) : Infinity;
  const last = Math.min(toDay, until);
  const start = Math.max(firstDay, fromDay);
  switch (recurrence.type) {
    case 'once':
      if (firstDay >= fromDay && firstDay <= last) yield firstDay;
      return;
    case 'daily':
      for (let day = start; day <= last; day += DAY_MS) yield day;
      return;
    case 'weekly': {
      const days = new Set(recurrence.daysOfWeek?.length ? recurrence.daysOfWeek : [new Date(firstDay).getUTCDay()]);
      for (let day = start; day <= last; day += DAY_MS) if (days.has(new Date(day).getUTCDay())) yield day;
      return;
    }
    case 'monthly': {
      const dayOfMonth = recurrence.dayOfMonth ?? first.day;
      const from = new Date(start);
      for (let year = from.getUTCFullYear(), month = from.getUTCMonth(); ; month += 1) {
        const day = Date.UTC(year, month, dayOfMonth);
        // Months without that day (the 31st in April) are skipped, not moved.
        if (new Date(day).getUTCDate() !== dayOfMonth) continue;
        if (day > last) return;
        if (day >= start) yield day;
      }
    }
  }
}

function firstLocal(schedule: RecurringSchedule): LocalDateTime {
  const first = parseLocal(schedule.startsAt);
  if (!first) throw new Error(`local start is malformed: ${schedule.startsAt}`);
  return first;
}

/** The starts on the days in [fromDay, toDay] (wall-clock days), in order. */
function recurrenceStarts(schedule: RecurringSchedule, fromDay: number, toDay: number): number[] {
  const first = firstLocal(schedule);
  const tz = IANAZone.create(schedule.timezone);
  const timeOfDay = wallMillis(first) - Date.UTC(first.year, first.month - 1, first.day);
  return [...startDays(first, schedule.recurrence, fromDay, toDay)].map((day) => instantOfWall(day + timeOfDay, tz));
}

/** The wall-clock day of a recurrence's first start. */
function firstDayOf(schedule: RecurringSchedule): number {
  const first = firstLocal(schedule);
  return Date.UTC(first.year, first.month - 1, first.day);
}

function recurrenceNext(schedule: RecurringSchedule, after: number): number | null {
  const tz = IANAZone.create(schedule.timezone);
  // A day either side covers every offset a zone has (at most ±14 h).
  const fromDay = localDay(after, tz) - DAY_MS;
  const toDay = Math.max(fromDay, firstDayOf(schedule)) + LONGEST_GAP_MS;
  return recurrenceStarts(schedule, fromDay, toDay).find((start) => start > after) ?? null;
}

function recurrencePrevious(schedule: RecurringSchedule, atOrBefore: number): number | null {
  const tz = IANAZone.create(schedule.timezone);
  const toDay = localDay(atOrBefore, tz) + DAY_MS;
  const fromDay = schedule.recurrence.type === 'once' ? firstDayOf(schedule) : toDay - LONGEST_GAP_MS;
  return recurrenceStarts(schedule, fromDay, toDay).findLast((start) => start <= atOrBefore) ?? null;
}

// ── either kind ─────────────────────────────────────────────────────────────────────────────────

const isCron = (schedule: Schedule): schedule is CronSchedule => 'cron' in schedule;
const asDate = (instant: number | null) => (instant === null ? null : new Date(instant));

/** The first start strictly after `after`, or null when the schedule has ended. */
export function nextStart(schedule: Schedule, after: Date): Date | null {
  return asDate(isCron(schedule) ? cronNext(schedule, after.getTime()) : recurrenceNext(schedule, after.getTime()));
}

/** The latest start at or before `atOrBefore`, or null when there is none. */
export function previousStart(schedule: Schedule, atOrBefore: Date): Date | null {
  return asDate(isCron(schedule) ? cronPrevious(schedule, atOrBefore.getTime()) : recurrencePrevious(schedule, atOrBefore.getTime()));
}

/** The starts in [from, to), in order, at most MAX_STARTS of them. */
export function startsBetween(schedule: Schedule, from: Date, to: Date): Date[] {
  const [low, high] = [from.getTime(), to.getTime()];
  let starts: number[];
  if (isCron(schedule)) {
    starts = [];
    for (const start of cronStarts(schedule, low - 1)) {
      if (start >= high || starts.length === MAX_STARTS) break;
      starts.push(start);
    }
  } else {
    const tz = IANAZone.create(schedule.timezone);
    starts = recurrenceStarts(schedule, localDay(low, tz) - DAY_MS, localDay(high, tz) + DAY_MS)
      .filter((start) => start >= low && start < high)
      .slice(0, MAX_STARTS);
  }
  return starts.map((start) => new Date(start));
}
