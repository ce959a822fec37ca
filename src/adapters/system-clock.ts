import { randomUUID } from 'node:crypto';
import type { Clock, IdFactory } from '../ports/clock';

/** The real clock, bound at the composition root only. */
export const systemClock: Clock = {
  nowMs: () => Date.now(),
  nowIso: () => new Date().toISOString(),
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
