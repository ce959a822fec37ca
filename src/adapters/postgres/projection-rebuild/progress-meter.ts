import type { RebuildProgress } from './types';

/** Turns event counts into progress reports with a rate and an ETA measured since the replay began. */
export class ProgressMeter {
  private done = 0;
  private readonly startedMs = performance.now();

  constructor(
    private readonly total: number,
    private readonly onProgress: ((p: RebuildProgress) => void) | undefined,
  ) {}

  get eventsDone(): number {
    return this.done;
  }

  advance(phase: string, events: number): void {
    this.done += events;
    this.report(phase);
  }

  report(phase: string): void {
    if (!this.onProgress) return;
    const seconds = (performance.now() - this.startedMs) / 1000;
    const rate = seconds > 0 ? this.done / seconds : 0;
    const eta =
      phase === 'replay' && rate > 0 ? Math.max(0, this.total - this.done) / rate : phase === 'done' ? 0 : null;
    this.onProgress({ phase, eventsDone: this.done, eventsTotal: this.total, eventsPerSecond: rate, etaSeconds: eta });
  }
}
