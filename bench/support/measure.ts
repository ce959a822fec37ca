/** What a bounded measurement did: operations (appends, inserts, events) and the time they took. */
export interface Measurement {
  readonly ops: number;
  readonly seconds: number;
  readonly perSecond: number;
}

/**
 * Runs `loops` concurrent async loops, each calling `step` until `seconds` have passed or it returns
 * null (done early), and counts the operations the steps report. Every loop finishes its current
 * step, so nothing is cut mid-write.
 *
 * With `warmupSeconds`, the same loops first run that long uncounted, so the figure is the steady
 * state of a long-running process (JIT-compiled code, prepared statements, warm caches) rather than
 * its first seconds; every compared path gets the same warm-up.
 */
export async function measureFor(
  seconds: number,
  loops: number,
  step: (loop: number) => Promise<number | null>,
  opts: { warmupSeconds?: number } = {},
): Promise<Measurement> {
  if (opts.warmupSeconds) await measureFor(opts.warmupSeconds, loops, step);
  const started = performance.now();
  const deadline = started + seconds * 1000;
  let ops = 0;
  await Promise.all(
    Array.from({ length: loops }, async (_, loop) => {
      while (performance.now() < deadline) {
        const done = await step(loop);
        if (done === null) return;
        ops += done;
      }
    }),
  );
  const elapsed = (performance.now() - started) / 1000;
  return { ops, seconds: elapsed, perSecond: ops / elapsed };
}
