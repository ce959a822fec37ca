import { CronExpressionParser, type CronExpression } from 'cron-parser';
import cronstrue from 'cronstrue';
import { Temporal } from 'temporal-polyfill';
import { ValidationError } from '../../domain/errors';
import { WEEKDAYS, type Cadence } from '../../domain/schedules/cadence';
import type { ScheduleCalendar } from '../../ports/schedule-calendar';

/**
 * The schedule calendar (ports/schedule-calendar.ts, ADR 0034) over two maintained libraries:
 * `cron-parser` enumerates civil (wall-clock) times that match a cadence, read as if UTC so no
 * zone rule touches them, and the Temporal polyfill turns each civil time into an instant in the
 * schedule's IANA zone: `disambiguation: 'earlier'` is the fold rule (the first occurrence), and a
 * civil time inside a gap fires at the zone's next transition (the first instant after the gap).
 * Every calendar kind is a cron expression on civil time, so all kinds share one rule set.
 */
export class TemporalCalendar implements ScheduleCalendar {
  check(cadence: Cadence, now: string): void {
    zoneOf(cadence);
    if (cadence.kind === 'once') {
      const at = resolve(civilOf(cadence.at), cadence.timeZone);
      if (Date.parse(at) <= Date.parse(now))
        throw invalid('cadence.at', `cadence.at ${cadence.at} (${cadence.timeZone}) is not in the future`);
      return;
    }
    const expression = cronOf(cadence);
    try {
      CronExpressionParser.parse(expression, { tz: 'UTC', strict: false });
    } catch (e) {
      throw invalid(fieldOf(cadence), `${fieldOf(cadence)} is not a valid cadence: ${(e as Error).message}`);
    }
    if (this.nextAfter(cadence, now) === null)
      throw invalid(fieldOf(cadence), `${fieldOf(cadence)} never fires: no such date in the next years`);
  }

  nextAfter(cadence: Cadence, after: string): string | null {
    const zone = zoneOf(cadence);
    if (cadence.kind === 'once') {
      const at = resolve(civilOf(cadence.at), zone);
      return Date.parse(at) > Date.parse(after) ? at : null;
    }
    // Civil times map to instants monotonically (fold: first occurrence; gap: the transition), so
    // the first civil candidate from a little before `after`'s civil time that resolves later wins.
    const it = walk(cadence, civilAt(after, zone) - LOOK_BEHIND_MS);
    for (let i = 0; i < MAX_STEPS; i++) {
      const civil = step(it, 'next');
      if (civil === null) return null;
      const at = resolve(civil, zone);
      if (Date.parse(at) > Date.parse(after)) return at;
    }
    return null;
  }

  countBetween(cadence: Cadence, after: string, until: string, cap: number): number {
    let n = 0;
    for (let t = this.nextAfter(cadence, after); t !== null && Date.parse(t) <= Date.parse(until) && n < cap; n++)
      t = this.nextAfter(cadence, t);
    return n;
  }

  lastAtOrBefore(cadence: Cadence, after: string, until: string): string | null {
    const zone = zoneOf(cadence);
    if (cadence.kind === 'once') {
      const at = this.nextAfter(cadence, after);
      return at !== null && Date.parse(at) <= Date.parse(until) ? at : null;
    }
    // Walk backwards from a little after `until`'s civil time: bounded however long the outage was.
    const it = walk(cadence, civilAt(until, zone) + LOOK_BEHIND_MS);
    for (let i = 0; i < MAX_STEPS; i++) {
      const civil = step(it, 'prev');
      if (civil === null) return null;
      const at = resolve(civil, zone);
      if (Date.parse(at) <= Date.parse(after)) return null;
      if (Date.parse(at) <= Date.parse(until)) return at;
    }
    return null;
  }

  describe(cadence: Cadence): string {
    const zone = `(${cadence.timeZone})`;
    switch (cadence.kind) {
      case 'once':
        return `once, at ${cadence.at.replace('T', ' ')} ${zone}`;
      case 'daily':
        return `every day at ${cadence.time} ${zone}`;
      case 'weekly':
        return `every ${listOf(cadence.days.map((d) => DAY_NAMES[WEEKDAYS.indexOf(d)]))} at ${cadence.time} ${zone}`;
      case 'monthly':
        return cadence.day === 'last'
          ? `on the last day of every month at ${cadence.time} ${zone}`
          : `on day ${cadence.day} of every month at ${cadence.time} ${zone}` +
              (cadence.day > 28 ? ` (months without a day ${cadence.day} are skipped)` : '');
      case 'yearly':
        return `every year on ${MONTH_NAMES[cadence.month - 1]} ${cadence.day} at ${cadence.time} ${zone}`;
      case 'cron':
        return `${cronstrue.toString(cadence.expression, { use24HourTimeFormat: true, verbose: false })} ${zone}`;
    }
  }

  local(instant: string, timeZone: string): string {
    const z = Temporal.Instant.from(instant).toZonedDateTimeISO(timeZone);
    return z.toString({ timeZoneName: 'never', smallestUnit: 'second' });
  }
}

/** How far before a civil time the search starts (more than any zone's offset change). */
const LOOK_BEHIND_MS = 3 * 3600_000;
/** Candidates examined per lookup (a per-minute cron looks at ~180 around a transition). */
const MAX_STEPS = 2000;
const DAY_NAMES = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday', 'Sunday'];
const MONTH_NAMES = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September'].concat([
  'October',
  'November',
  'December',
]);
const CRON_DAY: Readonly<Record<string, number>> = { sun: 0, mon: 1, tue: 2, wed: 3, thu: 4, fri: 5, sat: 6 };

function invalid(field: string, message: string): ValidationError {
  return new ValidationError(message, { field });
}

function fieldOf(c: Cadence): string {
  return c.kind === 'cron'
    ? 'cadence.expression'
    : c.kind === 'yearly' || c.kind === 'monthly'
      ? 'cadence.day'
      : 'cadence';
}

function listOf(xs: readonly string[]): string {
  return xs.length <= 1 ? xs.join('') : `${xs.slice(0, -1).join(', ')} and ${xs[xs.length - 1]}`;
}

/** The zone, checked by Temporal's own zone database. */
function zoneOf(c: Cadence): string {
  try {
    Temporal.Now.instant().toZonedDateTimeISO(c.timeZone);
  } catch {
    throw invalid('cadence.time_zone', `cadence.time_zone "${c.timeZone}" is not an IANA time zone`);
  }
  return c.timeZone;
}

/** The civil (wall-clock) time of a cadence as a cron expression. */
function cronOf(c: Exclude<Cadence, { kind: 'once' }>): string {
  const hm = (t: string) => {
    const [h, m] = t.split(':').map(Number);
    return `${m} ${h}`;
  };
  switch (c.kind) {
    case 'daily':
      return `${hm(c.time)} * * *`;
    case 'weekly':
      return `${hm(c.time)} * * ${c.days.map((d) => CRON_DAY[d]).join(',')}`;
    case 'monthly':
      return `${hm(c.time)} ${c.day === 'last' ? 'L' : c.day} * *`;
    case 'yearly':
      return `${hm(c.time)} ${c.day} ${c.month} *`;
    case 'cron':
      return c.expression;
  }
}

/** A civil date-time string (`YYYY-MM-DDTHH:MM[:SS[.mmm]]`) as epoch milliseconds read as UTC. */
function civilOf(local: string): number {
  return Date.parse(`${local.length === 16 ? `${local}:00` : local}Z`);
}

/** The civil time in `zone` of an instant, as epoch milliseconds read as UTC. */
function civilAt(instant: string, zone: string): number {
  const p = Temporal.Instant.from(instant).toZonedDateTimeISO(zone).toPlainDateTime();
  return Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second, p.millisecond);
}

function walk(c: Exclude<Cadence, { kind: 'once' }>, fromCivil: number): CronExpression {
  return CronExpressionParser.parse(cronOf(c), { tz: 'UTC', currentDate: new Date(fromCivil) });
}

function step(it: CronExpression, dir: 'next' | 'prev'): number | null {
  try {
    return (dir === 'next' ? it.next() : it.prev()).getTime();
  } catch {
    return null; // the parser's own bound: no such date within its search horizon
  }
}

/**
 * The instant of a civil time in `zone`: its first occurrence in a fold (`earlier`); in a gap —
 * where `earlier` answers a time before the gap, so its civil fields differ — the zone's next
 * transition, the first instant after the gap.
 */
function resolve(civilMs: number, zone: string): string {
  const d = new Date(civilMs);
  const fields = {
    year: d.getUTCFullYear(),
    month: d.getUTCMonth() + 1,
    day: d.getUTCDate(),
    hour: d.getUTCHours(),
    minute: d.getUTCMinutes(),
    second: d.getUTCSeconds(),
    millisecond: d.getUTCMilliseconds(),
  };
  const z = Temporal.ZonedDateTime.from({ ...fields, timeZone: zone }, { disambiguation: 'earlier' });
  const same = z.day === fields.day && z.hour === fields.hour && z.minute === fields.minute;
  const at = same ? z : (z.getTimeZoneTransition('next') ?? z);
  return new Date(at.epochMilliseconds).toISOString();
}
