import { ValidationError } from '../errors';

/** Days of the week as the API spells them. */
export const WEEKDAYS = ['mon', 'tue', 'wed', 'thu', 'fri', 'sat', 'sun'] as const;
export type Weekday = (typeof WEEKDAYS)[number];

/**
 * When a schedule fires (docs/schedules.md "Cadences", ADR 0034). Every kind but a relative
 * one-time (`in_seconds`, normalised to `once` in UTC at creation) names a civil time in an IANA
 * zone; the calendar port (ports/schedule-calendar.ts) turns civil times into instants with the
 * documented gap and fold rules.
 */
export type Cadence =
  /** One firing at a zoned local date-time (`2027-03-28T02:30`). */
  | { readonly kind: 'once'; readonly at: string; readonly timeZone: string }
  | { readonly kind: 'daily'; readonly time: string; readonly timeZone: string }
  | { readonly kind: 'weekly'; readonly days: readonly Weekday[]; readonly time: string; readonly timeZone: string }
  /** `day` 1–31 skips months that lack it; `last` is each month's last day. */
  | { readonly kind: 'monthly'; readonly day: number | 'last'; readonly time: string; readonly timeZone: string }
  /** A month/day pair; February 29 fires only in leap years. */
  | {
      readonly kind: 'yearly';
      readonly month: number;
      readonly day: number;
      readonly time: string;
      readonly timeZone: string;
    }
  /** A 5-field cron expression (minute hour day-of-month month day-of-week) read in the zone. */
  | { readonly kind: 'cron'; readonly expression: string; readonly timeZone: string };

export type CadenceKind = Cadence['kind'];
export const CADENCE_KINDS: readonly CadenceKind[] = ['once', 'daily', 'weekly', 'monthly', 'yearly', 'cron'];

const TIME = /^([01]\d|2[0-3]):([0-5]\d)$/;
const LOCAL_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T([01]\d|2[0-3]):([0-5]\d)(?::([0-5]\d)(?:\.\d{1,3})?)?$/;
/** Longest month lengths (February 29: a yearly date that exists in leap years). */
const MAX_DAYS = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

function invalid(field: string, message: string): ValidationError {
  return new ValidationError(message, { field });
}

function isLeap(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function checkTime(time: unknown): void {
  if (typeof time !== 'string' || !TIME.test(time))
    throw invalid('cadence.time', 'cadence.time must be a 24-hour civil time "HH:MM", such as "08:00"');
}

function checkZoneShape(zone: unknown): void {
  if (typeof zone !== 'string' || zone.trim() === '')
    throw invalid('cadence.time_zone', 'cadence.time_zone is required: an IANA time zone such as "Europe/Paris"');
}

function checkLocalDateTime(at: unknown): void {
  const m = typeof at === 'string' ? LOCAL_DATE_TIME.exec(at) : null;
  if (!m)
    throw invalid(
      'cadence.at',
      'cadence.at must be a local date-time "YYYY-MM-DDTHH:MM[:SS[.mmm]]" (no offset: see time_zone)',
    );
  const [year, month, day] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const days = month === 2 ? (isLeap(year) ? 29 : 28) : MAX_DAYS[month - 1];
  if (month < 1 || month > 12 || day < 1 || day > days)
    throw invalid('cadence.at', `cadence.at names ${m[1]}-${m[2]}-${m[3]}, which is not a calendar date`);
}

function checkWeekdays(days: unknown): void {
  if (!Array.isArray(days) || days.length === 0)
    throw invalid('cadence.days', `cadence.days must list at least one of ${WEEKDAYS.join(', ')}`);
  for (const d of days)
    if (!WEEKDAYS.includes(d as Weekday))
      throw invalid('cadence.days', `cadence.days holds "${String(d)}"; use ${WEEKDAYS.join(', ')}`);
  if (new Set(days).size !== days.length) throw invalid('cadence.days', 'cadence.days names a day twice');
}

function checkMonthDay(month: unknown, day: unknown): void {
  if (!Number.isInteger(month) || (month as number) < 1 || (month as number) > 12)
    throw invalid('cadence.month', 'cadence.month must be an integer from 1 to 12');
  if (!Number.isInteger(day) || (day as number) < 1 || (day as number) > MAX_DAYS[(month as number) - 1])
    throw invalid('cadence.day', `cadence.day ${String(day)} never occurs in month ${String(month)}`);
}

/**
 * Checks a cadence's shape (fields, civil times, calendar dates) and returns it typed. Zones and
 * cron expressions are checked by the calendar (they need its libraries); both name the field.
 */
export function checkCadenceShape(raw: unknown): Cadence {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw))
    throw invalid('cadence', 'cadence must be an object with a kind');
  const c = raw as Record<string, unknown>;
  if (!CADENCE_KINDS.includes(c.kind as CadenceKind))
    throw invalid('cadence.kind', `cadence.kind must be one of ${CADENCE_KINDS.join(', ')}`);
  checkZoneShape(c.timeZone);
  switch (c.kind as CadenceKind) {
    case 'once':
      checkLocalDateTime(c.at);
      break;
    case 'daily':
      checkTime(c.time);
      break;
    case 'weekly':
      checkWeekdays(c.days);
      checkTime(c.time);
      break;
    case 'monthly':
      if (c.day !== 'last' && (!Number.isInteger(c.day) || (c.day as number) < 1 || (c.day as number) > 31))
        throw invalid('cadence.day', 'cadence.day must be an integer from 1 to 31, or "last"');
      checkTime(c.time);
      break;
    case 'yearly':
      checkMonthDay(c.month, c.day);
      checkTime(c.time);
      break;
    case 'cron': {
      const fields = typeof c.expression === 'string' ? c.expression.trim().split(/\s+/) : [];
      if (fields.length !== 5)
        throw invalid(
          'cadence.expression',
          `cadence.expression must be a 5-field cron expression (minute hour day month weekday); got ${fields.length} field(s)`,
        );
      break;
    }
  }
  return c as unknown as Cadence;
}

/** The cadence with only its own fields, in a stable order (what events and rows store). */
export function canonicalCadence(c: Cadence): Cadence {
  switch (c.kind) {
    case 'once':
      return { kind: 'once', at: c.at, timeZone: c.timeZone };
    case 'daily':
      return { kind: 'daily', time: c.time, timeZone: c.timeZone };
    case 'weekly':
      return {
        kind: 'weekly',
        days: WEEKDAYS.filter((d) => c.days.includes(d)),
        time: c.time,
        timeZone: c.timeZone,
      };
    case 'monthly':
      return { kind: 'monthly', day: c.day, time: c.time, timeZone: c.timeZone };
    case 'yearly':
      return { kind: 'yearly', month: c.month, day: c.day, time: c.time, timeZone: c.timeZone };
    case 'cron':
      return { kind: 'cron', expression: c.expression.trim().split(/\s+/).join(' '), timeZone: c.timeZone };
  }
}

/** True for the one-time kind: it completes after its one occurrence. */
export function isOneTime(c: Cadence): boolean {
  return c.kind === 'once';
}
