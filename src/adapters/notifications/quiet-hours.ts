import { DateTime, IANAZone } from 'luxon';
import type { QuietHours } from '../../domain/notifications/preferences';

/** Whether `zone` names an IANA time zone (Luxon asks the runtime's Intl database). */
export const isIanaZone = (zone: string): boolean => zone.trim() !== '' && IANAZone.isValidZone(zone);

const minutesOf = (hhmm: string): number => {
  const [h, m] = hhmm.split(':').map(Number);
  return h * 60 + m;
};

/**
 * When quiet hours end, if `at` falls inside them, else null (issue 31: quiet hours delay webhook
 * deliveries, not the inbox). The window is wall-clock time in the principal's zone, `[start, end)`,
 * wrapping midnight when start > end; Luxon resolves daylight-saving days (an end time that does not
 * exist that day moves forward to the next existing instant).
 */
export function quietUntil(q: QuietHours, at: Date): Date | null {
  const local = DateTime.fromJSDate(at, { zone: q.zone });
  if (!local.isValid) return null;
  const now = local.hour * 60 + local.minute;
  const start = minutesOf(q.start);
  const end = minutesOf(q.end);
  const inside = start < end ? now >= start && now < end : now >= start || now < end;
  if (!inside) return null;
  let until = local.set({ hour: Math.floor(end / 60), minute: end % 60, second: 0, millisecond: 0 });
  if (until <= local) until = until.plus({ days: 1 });
  return until.toJSDate();
}
