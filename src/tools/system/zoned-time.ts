/** The wall-clock view of one instant in one zone. */
export interface ZonedTime {
  readonly localDate: string;
  readonly localTime: string;
  readonly utcOffset: string;
  readonly weekday: string;
}

/**
 * Computes the local date, time, weekday and UTC offset of `epochMs` in `timeZone` with
 * Intl.DateTimeFormat#formatToParts. Deterministic for a given instant and ICU database;
 * the locale is pinned to en-US so the output never depends on the host's locale.
 */
export function zonedTime(epochMs: number, timeZone: string): ZonedTime {
  const format = new Intl.DateTimeFormat('en-US', {
    timeZone,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
    hour: '2-digit',
    minute: '2-digit',
    second: '2-digit',
    // h23 avoids the "24:00:00" that hour12:false produces at midnight on some ICU versions.
    hourCycle: 'h23',
    weekday: 'long',
  });
  const parts = new Map(format.formatToParts(epochMs).map((part) => [part.type, part.value]));
  const part = (type: Intl.DateTimeFormatPartTypes): string => {
    const value = parts.get(type);
    if (value === undefined) throw new Error(`Intl.DateTimeFormat produced no ${type} for ${timeZone}`);
    return value;
  };
  const [year, month, day] = [part('year'), part('month'), part('day')];
  const [hour, minute, second] = [part('hour'), part('minute'), part('second')];

  // The offset is the local wall time read as if it were UTC, minus the instant (both at whole seconds).
  const wallAsUtc = new Date(Date.UTC(2000, 0, 1, Number(hour), Number(minute), Number(second)));
  // setUTCFullYear, unlike Date.UTC, does not map years 0-99 to 1900-1999.
  wallAsUtc.setUTCFullYear(Number(year), Number(month) - 1, Number(day));
  const wallAsUtcMs = wallAsUtc.getTime();
  const instantMs = Math.floor(epochMs / 1000) * 1000;
  return {
    localDate: `${year.padStart(4, '0')}-${month}-${day}`,
    localTime: `${hour}:${minute}:${second}`,
    utcOffset: formatOffset(wallAsUtcMs - instantMs),
    weekday: part('weekday'),
  };
}

/** `+01:00`, `-05:00`, `+05:45`; seconds are kept only for historical zones that had them. */
function formatOffset(offsetMs: number): string {
  const sign = offsetMs < 0 ? '-' : '+';
  const totalSeconds = Math.abs(offsetMs) / 1000;
  const hours = Math.floor(totalSeconds / 3600);
  const minutes = Math.floor((totalSeconds % 3600) / 60);
  const seconds = totalSeconds % 60;
  const pad = (n: number): string => String(n).padStart(2, '0');
  const base = `${sign}${pad(hours)}:${pad(minutes)}`;
  return seconds === 0 ? base : `${base}:${pad(seconds)}`;
}
