import { isIanaZone, quietUntil } from '../../../src/adapters/notifications';
import { defaultPreferences, parsePreferences } from '../../../src/domain/notifications/preferences';
import { ValidationError } from '../../../src/domain/errors';

const parse = (raw: unknown) => parsePreferences(raw, isIanaZone);
const fieldOf = (raw: unknown): unknown => {
  try {
    parse(raw);
  } catch (e) {
    expect(e).toBeInstanceOf(ValidationError);
    return (e as ValidationError).details.field;
  }
  throw new Error('accepted');
};

describe('notification preferences', () => {
  it('default to both channels for every kind, content-free, no quiet hours', () => {
    expect(parse({})).toEqual(defaultPreferences());
    expect(new Set(Object.values(defaultPreferences().kinds))).toEqual(new Set(['both']));
    expect(defaultPreferences()).toMatchObject({ content: 'none', quietHours: null });
  });

  it('take a channel per kind, a content level and quiet hours in an IANA zone', () => {
    const p = parse({
      kinds: { 'approval.requested': 'webhook', 'run.failed': 'none' },
      content: 'full',
      quiet_hours: { start: '22:00', end: '07:30', zone: 'Europe/Berlin' },
    });
    expect(p.kinds['approval.requested']).toBe('webhook');
    expect(p.kinds['run.failed']).toBe('none');
    expect(p.kinds['approval.expired']).toBe('both');
    expect(p).toMatchObject({ content: 'full', quietHours: { start: '22:00', end: '07:30', zone: 'Europe/Berlin' } });
  });

  it('refuse malformed input naming the field', () => {
    expect(fieldOf([])).toBe('(body)');
    expect(fieldOf({ colour: 'red' })).toBe('colour');
    expect(fieldOf({ kinds: { 'approval.requested': 'email' } })).toBe('kinds.approval.requested');
    expect(fieldOf({ kinds: { 'chat.message': 'both' } })).toBe('kinds.chat.message');
    expect(fieldOf({ kinds: ['both'] })).toBe('kinds');
    expect(fieldOf({ content: 'some' })).toBe('content');
    expect(fieldOf({ quiet_hours: { start: '24:00', end: '07:00', zone: 'UTC' } })).toBe('quiet_hours.start');
    expect(fieldOf({ quiet_hours: { start: '22:00', end: '7:00', zone: 'UTC' } })).toBe('quiet_hours.end');
    expect(fieldOf({ quiet_hours: { start: '22:00', end: '22:00', zone: 'UTC' } })).toBe('quiet_hours.end');
    expect(fieldOf({ quiet_hours: { start: '22:00', end: '07:00', zone: 'Mars/Olympus_Mons' } })).toBe(
      'quiet_hours.zone',
    );
    expect(fieldOf({ quiet_hours: { start: '22:00', end: '07:00' } })).toBe('quiet_hours.zone');
    expect(fieldOf({ quiet_hours: { start: '22:00', end: '07:00', zone: 'UTC', days: 5 } })).toBe('quiet_hours');
  });
});

describe('quiet hours (Luxon, the principal’s zone)', () => {
  const berlin = { start: '22:00', end: '07:00', zone: 'Europe/Berlin' };

  it('end at the local end time when the instant is inside a window that wraps midnight', () => {
    // 21:30 UTC on 15 January is 22:30 in Berlin (UTC+1): quiet until 07:00 Berlin = 06:00 UTC.
    expect(quietUntil(berlin, new Date('2027-01-15T21:30:00Z'))?.toISOString()).toBe('2027-01-16T06:00:00.000Z');
    // 05:00 UTC is 06:00 in Berlin: still quiet, the same morning.
    expect(quietUntil(berlin, new Date('2027-01-16T05:00:00Z'))?.toISOString()).toBe('2027-01-16T06:00:00.000Z');
    // 06:00 UTC is 07:00 in Berlin: the window is [start, end), so no longer quiet.
    expect(quietUntil(berlin, new Date('2027-01-16T06:00:00Z'))).toBeNull();
    expect(quietUntil(berlin, new Date('2027-01-16T12:00:00Z'))).toBeNull();
  });

  it('follow daylight saving time (Berlin is UTC+2 in July)', () => {
    expect(quietUntil(berlin, new Date('2027-07-15T20:30:00Z'))?.toISOString()).toBe('2027-07-16T05:00:00.000Z');
    expect(quietUntil(berlin, new Date('2027-07-15T19:30:00Z'))).toBeNull();
  });

  it('handle a window within one day and a zone with a half-hour offset', () => {
    const lunch = { start: '12:00', end: '13:30', zone: 'Asia/Kolkata' };
    // 07:00 UTC is 12:30 in Kolkata (UTC+5:30): quiet until 13:30 local = 08:00 UTC.
    expect(quietUntil(lunch, new Date('2027-03-01T07:00:00Z'))?.toISOString()).toBe('2027-03-01T08:00:00.000Z');
    expect(quietUntil(lunch, new Date('2027-03-01T08:00:00Z'))).toBeNull();
  });

  it('know IANA zones', () => {
    expect(isIanaZone('America/New_York')).toBe(true);
    expect(isIanaZone('UTC')).toBe(true);
    expect(isIanaZone('Mars/Olympus_Mons')).toBe(false);
    expect(isIanaZone('')).toBe(false);
  });
});
