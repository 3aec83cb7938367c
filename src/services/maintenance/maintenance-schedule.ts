import { DateTime, IANAZone } from 'luxon';
import type { Recurrence } from '../../../entities/maintenance.js';

/*
 * The calendar arithmetic of maintenance windows: occurrences are computed on local dates in the
 * window's time zone, then each local start becomes a UTC instant. A local start that does not exist
 * (a spring-forward gap) begins at the first instant after it, the end of the gap; one that occurs
 * twice (a fall-back overlap) begins at the first of the two.
 */

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

export interface LocalDateTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

/** A schedule as the occurrences need it. */
export interface Schedule {
  timezone: string;
  /** local `YYYY-MM-DDTHH:mm:ss` */
  startsAt: string;
  durationMinutes: number;
  recurrence: Recurrence;
}

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

/** The local wall-clock time as if it were UTC: the arithmetic's timeline of local dates. */
function wallMillis(local: LocalDateTime): number {
  return Date.UTC(local.year, local.month - 1, local.day, local.hour, local.minute, local.second);
}

/**
 * The UTC instant of a local date-time in `zone`. The zone's offsets a day either side are the only
 * candidates (no zone changes its offset twice within two days); a candidate is real when the zone
 * has that offset at that instant. None real: the time fell in a gap, which ends at the transition.
 */
export function toInstant(local: LocalDateTime, zone: string): Date {
  const tz = IANAZone.create(zone);
  const wall = wallMillis(local);
  const offsets = [...new Set([tz.offset(wall - DAY_MS), tz.offset(wall + DAY_MS)])];
  const real = offsets.map((offset) => wall - offset * MINUTE_MS).filter((instant) => tz.offset(instant) * MINUTE_MS === wall - instant);
  if (real.length > 0) return new Date(Math.min(...real));
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
  return new Date(high);
}

/** The local calendar date of an instant in `zone`, as a wall-clock day (UTC midnight on the local timeline). */
function localDay(instant: number, zone: string): number {
  const local = DateTime.fromMillis(instant, { zone });
  return Date.UTC(local.year, local.month - 1, local.day);
}

export interface Occurrence {
  startsAt: Date;
  endsAt: Date;
}

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

/**
 * The occurrences that overlap [from, to): each start is the window's local start time on a start
 * day, resolved in its zone, and lasts `durationMinutes`.
 */
export function occurrencesBetween(schedule: Schedule, from: Date, to: Date): Occurrence[] {
  const first = parseLocal(schedule.startsAt);
  if (!first) throw new Error(`stored local start is malformed: ${schedule.startsAt}`);
  const duration = schedule.durationMinutes * MINUTE_MS;
  // A day either side covers every offset a zone has (at most ±14 h) and the occurrence running into `from`.
  const fromDay = localDay(from.getTime() - duration, schedule.timezone) - DAY_MS;
  const toDay = localDay(to.getTime(), schedule.timezone) + DAY_MS;
  const result: Occurrence[] = [];
  for (const day of startDays(first, schedule.recurrence, fromDay, toDay)) {
    const date = new Date(day);
    const startsAt = toInstant({ ...first, year: date.getUTCFullYear(), month: date.getUTCMonth() + 1, day: date.getUTCDate() }, schedule.timezone);
    const endsAt = new Date(startsAt.getTime() + duration);
    if (endsAt > from && startsAt < to) result.push({ startsAt, endsAt });
  }
  return result;
}
