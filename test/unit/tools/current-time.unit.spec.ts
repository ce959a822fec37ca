import { createCurrentTimeTool } from '../../../src/tools/system/current-time';
import { fixedClock, toolContext } from './tool-context';

/** 2026-11-30 is a Monday in winter: Paris on CET (+01:00), New York on EST (-05:00). */
const WINTER_INSTANT = Date.UTC(2026, 10, 30, 14, 5, 9, 250);
const SUMMER_INSTANT = Date.UTC(2026, 6, 1, 12, 0, 0);

describe('system.current_time tool', () => {
  const tool = createCurrentTimeTool();
  const run = (args: Record<string, unknown>, epochMs = WINTER_INSTANT) =>
    tool.execute(args, toolContext(fixedClock(epochMs)));

  it('declares a pure, low-risk, read-only spec', () => {
    expect(tool.spec).toMatchObject({
      name: 'system.current_time',
      sideEffect: 'none',
      risk: 'low',
      idempotency: 'read_only',
      requiredScopes: [],
      timeoutSeconds: 5,
      maximumOutputBytes: 2048,
      allowParallel: true,
    });
  });

  it('defaults to UTC and reads the time from the injected clock', async () => {
    await expect(run({})).resolves.toEqual({
      ok: true,
      output: {
        timezone: 'UTC',
        iso_utc: '2026-11-30T14:05:09.250Z',
        local_date: '2026-11-30',
        local_time: '14:05:09',
        utc_offset: '+00:00',
        weekday: 'Monday',
      },
    });
  });

  it('reports Paris on its winter offset of +01:00 on 2026-11-30', async () => {
    await expect(run({ timezone: 'Europe/Paris' })).resolves.toEqual({
      ok: true,
      output: {
        timezone: 'Europe/Paris',
        iso_utc: '2026-11-30T14:05:09.250Z',
        local_date: '2026-11-30',
        local_time: '15:05:09',
        utc_offset: '+01:00',
        weekday: 'Monday',
      },
    });
  });

  it('reports Paris on its summer offset of +02:00 in July', async () => {
    const result = await run({ timezone: 'Europe/Paris' }, SUMMER_INSTANT);
    expect(result).toMatchObject({ ok: true, output: { local_time: '14:00:00', utc_offset: '+02:00' } });
  });

  it('reports New York behind UTC, including a local date that is still the previous day', async () => {
    const lateEvening = Date.UTC(2026, 11, 1, 2, 30, 0);
    await expect(run({ timezone: 'America/New_York' }, lateEvening)).resolves.toEqual({
      ok: true,
      output: {
        timezone: 'America/New_York',
        iso_utc: '2026-12-01T02:30:00.000Z',
        local_date: '2026-11-30',
        local_time: '21:30:00',
        utc_offset: '-05:00',
        weekday: 'Monday',
      },
    });
  });

  it('formats a non-whole-hour offset', async () => {
    const result = await run({ timezone: 'Asia/Kathmandu' });
    expect(result).toMatchObject({ ok: true, output: { utc_offset: '+05:45', local_time: '19:50:09' } });
  });

  it('returns the canonical spelling of a zone given in another case', async () => {
    const result = await run({ timezone: 'europe/paris' });
    expect(result).toMatchObject({ ok: true, output: { timezone: 'Europe/Paris' } });
  });

  it.each(['Mars/Olympus_Mons', '+05:00', 'EST5EDT', 'GMT', 'CET', 'local'])(
    'refuses the zone %p as non-retryable invalid_timezone',
    async (timezone) => {
      const result = await run({ timezone });
      expect(result).toEqual({
        ok: false,
        errorCode: 'invalid_timezone',
        message: expect.stringContaining('IANA'),
        retryable: false,
      });
    },
  );

  it('gives the same answer for the same clock reading', async () => {
    const first = await run({ timezone: 'Asia/Tokyo' });
    const second = await run({ timezone: 'Asia/Tokyo' });
    expect(second).toEqual(first);
  });
});
