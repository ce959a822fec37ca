/**
 * Resolves a caller-supplied zone to its canonical IANA name, or `undefined` when refused.
 * Only region-style names (`Europe/Paris`, `America/New_York`, `Etc/GMT+5`) and `UTC` are accepted:
 * Intl also takes legacy POSIX-style ids such as `EST5EDT` and abbreviations such as `GMT`,
 * whose meaning is easy to misread, so a model gets an error it can correct instead of a guess.
 */
export function resolveTimeZone(timeZone: string): string | undefined {
  if (timeZone !== 'UTC' && !timeZone.includes('/')) return undefined;
  try {
    return new Intl.DateTimeFormat('en-US', { timeZone }).resolvedOptions().timeZone;
  } catch {
    // Intl throws RangeError for zones the ICU database does not know.
    return undefined;
  }
}
