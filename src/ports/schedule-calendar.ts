import type { Cadence } from '../domain/schedules/cadence';

/**
 * Civil-time arithmetic for schedules (ADR 0034): IANA zones, daylight-saving gaps and folds, cron
 * expressions. Behind a port because it needs maintained libraries (the domain imports none) and
 * because every rule here is one the scheduler must apply identically everywhere.
 *
 * Gap rule: a civil time that does not exist (02:30 on a spring-forward day) fires at the first
 * instant after the gap (03:00 local). Fold rule: a civil time that occurs twice (02:30 on a
 * fall-back day) fires once, at its first occurrence. Instants are ISO-8601 UTC strings.
 */
export interface ScheduleCalendar {
  /**
   * Refuses what the shape check cannot see (an unknown zone, a cron expression its parser rejects,
   * a cadence with no future firing) with a ValidationError naming the field; returns nothing.
   */
  check(cadence: Cadence, now: string): void;
  /** The first firing instant strictly after `after`, or null when there is none (a past one-time). */
  nextAfter(cadence: Cadence, after: string): string | null;
  /**
   * How many firing instants lie strictly after `after` and at or before `until`, counting at most
   * `cap` (the misfire count of a coalesced catch-up: bounded, never a walk of the whole outage).
   */
  countBetween(cadence: Cadence, after: string, until: string, cap: number): number;
  /** The latest firing instant at or before `until` and strictly after `after`, or null. */
  lastAtOrBefore(cadence: Cadence, after: string, until: string): string | null;
  /** The cadence in words, for approvals and the CLI ("every day at 08:00 (Europe/Paris)"). */
  describe(cadence: Cadence): string;
  /** `instant` as a local date-time with offset in `timeZone` (`2027-03-28T03:00:00+02:00`). */
  local(instant: string, timeZone: string): string;
}
