import { cronError, nextStart, previousStart, startsBetween, type Schedule } from '../src/services/shared/schedule.js';

// The schedule engine alone (a pure module): cron and calendar recurrences in a time zone, next and
// previous starts, and daylight-saving gaps (a local time that does not exist starts at the end of
// the gap) and overlaps (a local time that occurs twice starts at the first).

const iso = (dates: (Date | null)[]) => dates.map((d) => d?.toISOString() ?? null);
const between = (schedule: Schedule, from: string, to: string) => iso(startsBetween(schedule, new Date(from), new Date(to)));
const next = (schedule: Schedule, after: string) => nextStart(schedule, new Date(after))?.toISOString() ?? null;
const previous = (schedule: Schedule, at: string) => previousStart(schedule, new Date(at))?.toISOString() ?? null;

describe('cron in a time zone', () => {
  test('reads the local time: 09:00 in Berlin is 08:00 UTC in winter, 07:00 in summer', () => {
    const daily = { cron: '0 9 * * *', timezone: 'Europe/Berlin' };
    expect(next(daily, '2027-01-15T07:59:00Z')).toBe('2027-01-15T08:00:00.000Z');
    expect(next(daily, '2027-01-15T08:00:00Z')).toBe('2027-01-16T08:00:00.000Z');
    expect(next(daily, '2027-07-15T06:00:00Z')).toBe('2027-07-15T07:00:00.000Z');
    // Previous is at or before: a start at the instant itself counts.
    expect(previous(daily, '2027-01-15T08:00:00Z')).toBe('2027-01-15T08:00:00.000Z');
    expect(previous(daily, '2027-01-15T07:59:59Z')).toBe('2027-01-14T08:00:00.000Z');
    // Weekdays are the local ones: Monday 00:30 in Tokyo is Sunday 15:30 UTC.
    expect(between({ cron: '30 0 * * 1', timezone: 'Asia/Tokyo' }, '2027-01-01T00:00:00Z', '2027-01-15T00:00:00Z')).toEqual(['2027-01-03T15:30:00.000Z', '2027-01-10T15:30:00.000Z']);
  });

  test('Europe/Berlin: 02:30 on the spring-forward day starts at 03:00 CEST; 02:30 on the fall-back day starts once, at the first', () => {
    const schedule = { cron: '30 2 * * *', timezone: 'Europe/Berlin' };
    // 2026-03-29: 02:00 CET jumps to 03:00 CEST (01:00 UTC).
    expect(between(schedule, '2026-03-28T00:00:00Z', '2026-03-31T00:00:00Z')).toEqual(['2026-03-28T01:30:00.000Z', '2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z']);
    expect(next(schedule, '2026-03-28T01:30:00Z')).toBe('2026-03-29T01:00:00.000Z');
    expect(previous(schedule, '2026-03-30T00:00:00Z')).toBe('2026-03-29T01:00:00.000Z');
    // 2026-10-25: 03:00 CEST falls back to 02:00 CET; 02:30 comes at 00:30 UTC and again at 01:30 UTC.
    expect(between(schedule, '2026-10-24T00:00:00Z', '2026-10-27T00:00:00Z')).toEqual(['2026-10-24T00:30:00.000Z', '2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z']);
    // From within the second pass of the hour, the next start is the next day's, the previous the first pass's.
    expect(next(schedule, '2026-10-25T01:15:00Z')).toBe('2026-10-26T01:30:00.000Z');
    expect(previous(schedule, '2026-10-25T01:45:00Z')).toBe('2026-10-25T00:30:00.000Z');
  });

  test('America/New_York: every local time of a gap shares its end; the repeated hour fires once', () => {
    const quarterly = { cron: '*/15 1-3 * * *', timezone: 'America/New_York' };
    // 2026-03-08: 02:00 EST jumps to 03:00 EDT (07:00 UTC); 02:00–02:45 and 03:00 are all 07:00 UTC, once.
    expect(between(quarterly, '2026-03-08T06:00:00Z', '2026-03-08T07:31:00Z')).toEqual([
      '2026-03-08T06:00:00.000Z',
      '2026-03-08T06:15:00.000Z',
      '2026-03-08T06:30:00.000Z',
      '2026-03-08T06:45:00.000Z',
      '2026-03-08T07:00:00.000Z',
      '2026-03-08T07:15:00.000Z',
      '2026-03-08T07:30:00.000Z',
    ]);
    // 2026-11-01: 02:00 EDT falls back to 01:00 EST (06:00 UTC): the local 01:xx come once, in EDT, then 02:00 EST.
    expect(between(quarterly, '2026-11-01T05:00:00Z', '2026-11-01T07:16:00Z')).toEqual([
      '2026-11-01T05:00:00.000Z',
      '2026-11-01T05:15:00.000Z',
      '2026-11-01T05:30:00.000Z',
      '2026-11-01T05:45:00.000Z',
      '2026-11-01T07:00:00.000Z',
      '2026-11-01T07:15:00.000Z',
    ]);
    expect(next(quarterly, '2026-11-01T06:20:00Z')).toBe('2026-11-01T07:00:00.000Z');
    expect(previous(quarterly, '2026-11-01T06:20:00Z')).toBe('2026-11-01T05:45:00.000Z');
  });

  test('refuses what is not a five-field expression', () => {
    expect(cronError('0 9 * * *')).toBeNull();
    expect(cronError('0 0 9 * * *')).toMatch(/five fields/);
    expect(cronError('61 * * * *')).not.toBeNull();
  });
});

describe('recurrences in a time zone', () => {
  test('America/New_York weekly: the skipped 02:30 starts at 03:00 EDT, the repeated 01:30 at the first', () => {
    const spring = { timezone: 'America/New_York', startsAt: '2026-03-01T02:30:00', recurrence: { type: 'weekly' as const, daysOfWeek: [0] } };
    expect(between(spring, '2026-02-28T00:00:00Z', '2026-03-21T00:00:00Z')).toEqual(['2026-03-01T07:30:00.000Z', '2026-03-08T07:00:00.000Z', '2026-03-15T06:30:00.000Z']);
    const fall = { timezone: 'America/New_York', startsAt: '2026-10-25T01:30:00', recurrence: { type: 'weekly' as const } };
    expect(between(fall, '2026-10-24T00:00:00Z', '2026-11-14T00:00:00Z')).toEqual(['2026-10-25T05:30:00.000Z', '2026-11-01T05:30:00.000Z', '2026-11-08T06:30:00.000Z']);
    expect(next(fall, '2026-10-25T05:30:00Z')).toBe('2026-11-01T05:30:00.000Z');
    expect(previous(fall, '2026-11-08T06:29:59Z')).toBe('2026-11-01T05:30:00.000Z');
  });

  test('Europe/Berlin daily across both changes', () => {
    const daily = { timezone: 'Europe/Berlin', startsAt: '2026-03-28T02:30:00', recurrence: { type: 'daily' as const } };
    expect(between(daily, '2026-03-28T00:00:00Z', '2026-03-31T00:00:00Z')).toEqual(['2026-03-28T01:30:00.000Z', '2026-03-29T01:00:00.000Z', '2026-03-30T00:30:00.000Z']);
    expect(between(daily, '2026-10-24T00:00:00Z', '2026-10-27T00:00:00Z')).toEqual(['2026-10-24T00:30:00.000Z', '2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z']);
  });

  test('next and previous: before the first start, after the end, months without the day, a one-off', () => {
    const monthly = { timezone: 'UTC', startsAt: '2030-01-31T09:00:00', recurrence: { type: 'monthly' as const, until: '2030-05-31' } };
    expect(next(monthly, '2020-01-01T00:00:00Z')).toBe('2030-01-31T09:00:00.000Z');
    expect(next(monthly, '2030-01-31T09:00:00Z')).toBe('2030-03-31T09:00:00.000Z');
    expect(previous(monthly, '2030-04-30T00:00:00Z')).toBe('2030-03-31T09:00:00.000Z');
    expect(next(monthly, '2030-05-31T09:00:00Z')).toBeNull();
    expect(previous(monthly, '2030-01-31T08:59:59Z')).toBeNull();
    const once = { timezone: 'Asia/Tokyo', startsAt: '2040-06-01T10:00', recurrence: { type: 'once' as const } };
    expect([next(once, '2026-01-01T00:00:00Z'), previous(once, '2050-01-01T00:00:00Z'), next(once, '2040-06-01T01:00:00Z')]).toEqual(['2040-06-01T01:00:00.000Z', '2040-06-01T01:00:00.000Z', null]);
  });
});
