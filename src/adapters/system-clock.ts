import { randomUUID } from 'node:crypto';
import type { Clock, IdFactory } from '../ports/clock';

/**
 * The last millisecond `nowIso` formatted and its string: every append stamps its events, and the
 * run loop stamps payloads, several times within one millisecond. The string is a pure function of
 * `Date.now()`, so reusing it for the same millisecond returns exactly what formatting again would.
 */
let isoMs = Number.NaN;
let iso = '';

/** The real clock, bound at the composition root only. */
export const systemClock: Clock = {
  nowMs: () => Date.now(),
  nowIso: () => {
    const ms = Date.now();
    if (ms !== isoMs) {
      iso = new Date(ms).toISOString();
      isoMs = ms;
    }
    return iso;
  },
  sleep: (ms, signal) =>
    new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason as Error);
      const t = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      const onAbort = () => {
        clearTimeout(t);
        reject(signal?.reason as Error);
      };
      signal?.addEventListener('abort', onAbort, { once: true });
    }),
};

export const randomIds: IdFactory = {
  uuid: () => randomUUID(),
  random: () => Math.random(),
};
