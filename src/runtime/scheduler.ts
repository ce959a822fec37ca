import type { Clock } from '../ports/clock';
import type { Logger } from '../ports/logger';
import type { ScheduleFiring } from '../ports/schedules';
import type { WakeupSource } from '../ports/wakeup';

export interface SchedulerSettings {
  /** Due schedules per transaction. */
  readonly batchSize: number;
  /** Firing loops in this process; several processes may run too (SKIP LOCKED keeps them apart). */
  readonly concurrency: number;
  /** The safety net: the longest the scheduler sleeps without a timer or a NOTIFY. */
  readonly pollMs: number;
}

/**
 * The scheduler role (ADR 0034): it decides *when*; a firing is an ordinary durable run that a
 * worker claims. It sleeps until the earliest next firing of any active schedule (a timer), wakes
 * earlier on NOTIFY `agent_schedules` (a schedule changed) and at the latest after `pollMs` (a lost
 * NOTIFY only delays). Awake, its loops fire everything due at the clock's now, batch by batch.
 * It never fires early: a schedule is due only when its instant is at or before the now it claims
 * with, and the events it writes are stamped later still.
 */
export class Scheduler {
  private stopped = true;
  private wake: (() => void) | null = null;
  private woken = false;
  private loop: Promise<void> | null = null;

  constructor(
    private readonly firing: ScheduleFiring,
    private readonly wakeup: WakeupSource,
    private readonly clock: Clock,
    private readonly log: Logger,
    private readonly settings: SchedulerSettings,
  ) {}

  async start(): Promise<void> {
    this.stopped = false;
    await this.wakeup.start(() => this.nudge());
    this.loop = this.run();
    this.log.info('scheduler started', { concurrency: this.settings.concurrency, batch: this.settings.batchSize });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.nudge();
    await this.loop;
    await this.wakeup.stop();
  }

  /** Wakes the scheduler now (a NOTIFY, a test). */
  nudge(): void {
    this.woken = true;
    this.wake?.();
  }

  /** Fires everything due now with all loops; returns how many occurrences were recorded. */
  async drainDue(): Promise<number> {
    const counts = await Promise.all(Array.from({ length: this.settings.concurrency }, () => this.drainOne()));
    return counts.reduce((a, b) => a + b, 0);
  }

  private async drainOne(): Promise<number> {
    let total = 0;
    while (!this.stopped || this.loop === null) {
      const n = (await this.firing.fireDue(this.clock.nowIso(), this.settings.batchSize)).length;
      total += n;
      if (n < this.settings.batchSize) return total;
    }
    return total;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      this.woken = false;
      try {
        await this.drainDue();
        const next = await this.firing.nextDueAt();
        if (!this.woken && !this.stopped) await this.sleep(this.delayUntil(next));
      } catch (e) {
        this.log.error('scheduler pass failed; retrying', { error: e instanceof Error ? e.message : String(e) });
        await this.sleep(1000);
      }
    }
  }

  /** Until the next instant (at least 1 ms past it, never early), at most `pollMs`. */
  private delayUntil(next: string | null): number {
    if (next === null) return this.settings.pollMs;
    return Math.max(0, Math.min(this.settings.pollMs, Date.parse(next) - this.clock.nowMs() + 1));
  }

  private sleep(ms: number): Promise<void> {
    if (ms <= 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.wake = null;
        resolve();
      };
      const t = setTimeout(done, ms);
      this.wake = done;
    });
  }
}
