import { TemporalCalendar } from '../../../src/adapters/calendar/temporal-calendar';
import { checkCadenceShape, type Cadence } from '../../../src/domain/schedules/cadence';
import { ValidationError } from '../../../src/domain/errors';

const cal = new TemporalCalendar();
const daily = (time: string, timeZone: string): Cadence => ({ kind: 'daily', time, timeZone });

/** Every firing from `from` (exclusive) up to `count` of them. */
function firings(c: Cadence, from: string, count: number): string[] {
  const out: string[] = [];
  let t: string | null = from;
  while (out.length < count && (t = cal.nextAfter(c, t)) !== null) out.push(t);
  return out;
}

function fieldOfError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (e) {
    if (e instanceof ValidationError) return e.details.field;
    throw e;
  }
  throw new Error('expected a ValidationError');
}

describe('schedule calendar: daylight-saving rules', () => {
  it('a daily 02:30 Europe/Paris fires at 03:00 local on the 2027 spring-forward day, the first instant after the gap', () => {
    const c = daily('02:30', 'Europe/Paris');
    expect(firings(c, '2027-03-26T12:00:00.000Z', 3)).toEqual([
      '2027-03-27T01:30:00.000Z', // 02:30 CET
      '2027-03-28T01:00:00.000Z', // 03:00 CEST: 02:30 does not exist
      '2027-03-29T00:30:00.000Z', // 02:30 CEST
    ]);
    expect(cal.local('2027-03-28T01:00:00.000Z', 'Europe/Paris')).toBe('2027-03-28T03:00:00+02:00');
  });

  it('a daily 02:30 Europe/Paris fires once on the 2027 fall-back day, at the first 02:30', () => {
    const c = daily('02:30', 'Europe/Paris');
    expect(firings(c, '2027-10-29T12:00:00.000Z', 3)).toEqual([
      '2027-10-30T00:30:00.000Z', // 02:30 CEST
      '2027-10-31T00:30:00.000Z', // the first 02:30 (CEST), not the second (01:30Z)
      '2027-11-01T01:30:00.000Z', // 02:30 CET
    ]);
  });

  it('America/New_York: 02:30 on the spring-forward day fires at 03:00 EDT, on the fall-back day 01:30 fires once (EDT)', () => {
    expect(firings(daily('02:30', 'America/New_York'), '2027-03-13T12:00:00.000Z', 2)).toEqual([
      '2027-03-14T07:00:00.000Z', // 03:00 EDT
      '2027-03-15T06:30:00.000Z',
    ]);
    expect(firings(daily('01:30', 'America/New_York'), '2027-11-06T12:00:00.000Z', 2)).toEqual([
      '2027-11-07T05:30:00.000Z', // 01:30 EDT, the first
      '2027-11-08T06:30:00.000Z', // 01:30 EST
    ]);
  });

  it('a cron expression follows the same gap rule: every 15 minutes through a gap fires once at its end', () => {
    const c: Cadence = { kind: 'cron', expression: '*/15 1-3 28 3 *', timeZone: 'Europe/Paris' };
    const got = firings(c, '2027-03-28T00:20:00.000Z', 6).map((t) => cal.local(t, 'Europe/Paris'));
    expect(got).toEqual([
      '2027-03-28T01:30:00+01:00',
      '2027-03-28T01:45:00+01:00',
      '2027-03-28T03:00:00+02:00', // 02:00-02:45 fall in the gap and 03:00 follows it: one firing
      '2027-03-28T03:15:00+02:00',
      '2027-03-28T03:30:00+02:00',
      '2027-03-28T03:45:00+02:00',
    ]);
  });
});

describe('schedule calendar: calendar kinds', () => {
  it('weekly fires on the listed days only', () => {
    const c: Cadence = { kind: 'weekly', days: ['mon', 'fri'], time: '08:00', timeZone: 'UTC' };
    expect(firings(c, '2027-01-01T09:00:00.000Z', 3)).toEqual([
      '2027-01-04T08:00:00.000Z', // Monday
      '2027-01-08T08:00:00.000Z', // Friday
      '2027-01-11T08:00:00.000Z',
    ]);
  });

  it('monthly day 31 skips shorter months; "last" fires at each month end', () => {
    const d31: Cadence = { kind: 'monthly', day: 31, time: '08:00', timeZone: 'UTC' };
    expect(firings(d31, '2027-01-01T00:00:00.000Z', 3)).toEqual([
      '2027-01-31T08:00:00.000Z',
      '2027-03-31T08:00:00.000Z',
      '2027-05-31T08:00:00.000Z',
    ]);
    const last: Cadence = { kind: 'monthly', day: 'last', time: '08:00', timeZone: 'UTC' };
    expect(firings(last, '2027-01-01T00:00:00.000Z', 3)).toEqual([
      '2027-01-31T08:00:00.000Z',
      '2027-02-28T08:00:00.000Z',
      '2027-03-31T08:00:00.000Z',
    ]);
  });

  it('yearly February 29 fires only in leap years', () => {
    const c: Cadence = { kind: 'yearly', month: 2, day: 29, time: '08:00', timeZone: 'UTC' };
    expect(firings(c, '2027-01-01T00:00:00.000Z', 2)).toEqual(['2028-02-29T08:00:00.000Z', '2032-02-29T08:00:00.000Z']);
  });

  it('a one-time cadence fires once, at its zoned local time', () => {
    const c: Cadence = { kind: 'once', at: '2027-03-28T02:30', timeZone: 'Europe/Paris' };
    expect(cal.nextAfter(c, '2027-01-01T00:00:00.000Z')).toBe('2027-03-28T01:00:00.000Z');
    expect(cal.nextAfter(c, '2027-03-28T01:00:00.000Z')).toBeNull();
  });

  it('coalescing counts and finds the latest missed instant without walking the outage', () => {
    const c = daily('08:00', 'UTC');
    expect(cal.countBetween(c, '2027-01-01T08:00:00.000Z', '2027-01-05T09:00:00.000Z', 100)).toBe(4);
    expect(cal.countBetween(c, '2027-01-01T08:00:00.000Z', '2030-01-01T00:00:00.000Z', 10)).toBe(10);
    expect(cal.lastAtOrBefore(c, '2027-01-01T08:00:00.000Z', '2027-01-05T09:00:00.000Z')).toBe(
      '2027-01-05T08:00:00.000Z',
    );
    expect(cal.lastAtOrBefore(c, '2027-01-05T08:00:00.000Z', '2027-01-05T09:00:00.000Z')).toBeNull();
  });

  it('describes cadences in words', () => {
    expect(cal.describe(daily('08:00', 'Europe/Paris'))).toBe('every day at 08:00 (Europe/Paris)');
    expect(cal.describe({ kind: 'weekly', days: ['mon', 'fri'], time: '08:00', timeZone: 'UTC' })).toBe(
      'every Monday and Friday at 08:00 (UTC)',
    );
    expect(cal.describe({ kind: 'cron', expression: '0 8 * * 1-5', timeZone: 'UTC' })).toBe(
      'At 08:00, Monday through Friday (UTC)',
    );
  });
});

describe('schedule calendar: bad input names the field', () => {
  const now = '2027-01-01T00:00:00.000Z';
  it.each([
    ['an unknown zone', { kind: 'daily', time: '08:00', timeZone: 'Mars/Olympus' }, 'cadence.time_zone'],
    ['a six-field cron expression', { kind: 'cron', expression: '0 0 8 * * *', timeZone: 'UTC' }, 'cadence.expression'],
    [
      'a cron expression out of range',
      { kind: 'cron', expression: '61 8 * * *', timeZone: 'UTC' },
      'cadence.expression',
    ],
    ['a one-time instant in the past', { kind: 'once', at: '2026-12-31T23:00', timeZone: 'UTC' }, 'cadence.at'],
    ['February 30 (never fires)', { kind: 'yearly', month: 2, day: 30, time: '08:00', timeZone: 'UTC' }, 'cadence.day'],
    ['a cron February 30', { kind: 'cron', expression: '0 8 30 2 *', timeZone: 'UTC' }, 'cadence.expression'],
    ['a one-time date that does not exist', { kind: 'once', at: '2027-02-30T08:00', timeZone: 'UTC' }, 'cadence.at'],
    ['a civil time out of range', { kind: 'daily', time: '24:00', timeZone: 'UTC' }, 'cadence.time'],
    ['an unknown weekday', { kind: 'weekly', days: ['mon', 'funday'], time: '08:00', timeZone: 'UTC' }, 'cadence.days'],
  ])('%s', (_what, raw, field) => {
    expect(fieldOfError(() => cal.check(checkCadenceShape(raw), now))).toBe(field);
  });
});
