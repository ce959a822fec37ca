import type { Clock, IdFactory } from '../ports/clock';
import type { Logger } from '../ports/logger';
import type { RunQueue } from '../ports/run-store';
import type { WakeupSource } from '../ports/wakeup';
import type { RunLoop } from './run-loop';
import { LoopStopped } from './stop-reason';
import { AttemptSpan } from './tracing';

export interface WorkerSettings {
  readonly workerId: string;
  readonly concurrency: number;
  readonly leaseMs: number;
  readonly pollIntervalMs: number;
  /** On SIGTERM, how long running runs may finish before they are released back to the queue. */
  readonly drainMs: number;
  /** Claim only this run (the CLI's in-process worker), never other people's work. */
  readonly onlyRunId?: string;
}

/**
 * The NOTIFY-woken worker saga: claims runs while it has free slots, executes each with the run
 * loop, and on shutdown drains for `drainMs` then releases what is still running.
 */
export class Worker {
  private readonly active = new Set<Promise<void>>();
  private readonly shutdown = new AbortController();
  private wake: (() => void) | null = null;
  /** A nudge that came while the loop was claiming (not waiting): claim again instead of sleeping. */
  private wakePending = false;
  private stopped = false;
  private loopDone: Promise<void> | null = null;
  /** Counts for tests and metrics. */
  readonly stats = { claimed: 0, finished: 0, released: 0, fenced: 0, abandoned: 0 };

  constructor(
    private readonly queue: RunQueue,
    private readonly loop: RunLoop,
    private readonly wakeups: WakeupSource,
    private readonly clock: Clock,
    private readonly ids: IdFactory,
    private readonly log: Logger,
    readonly settings: WorkerSettings,
  ) {}

  async start(): Promise<void> {
    await this.wakeups.start((runId) => {
      // A nudge about a run this worker holds: it may have been asked to stop (issue 33).
      if (runId) this.loop.poke(runId);
      this.nudge();
    });
    this.loopDone = this.claimLoop();
    this.log.info('worker started', { workerId: this.settings.workerId, concurrency: this.settings.concurrency });
  }

  /** Wakes the claim loop (a NOTIFY arrived, a slot freed, or a caller knows work exists). */
  nudge(): void {
    const w = this.wake;
    this.wake = null;
    if (w) w();
    else this.wakePending = true;
  }

  private async claimLoop(): Promise<void> {
    while (!this.stopped) {
      // Work committed before this point is seen by the claims below; a NOTIFY after it sets the flag.
      this.wakePending = false;
      let claimedAny = false;
      while (!this.stopped && this.active.size < this.settings.concurrency) {
        let claim;
        // Started before the claim so a run's first claim can store it as the trace root (ADR 0015).
        const attemptSpan = AttemptSpan.begin();
        try {
          claim = await this.queue.claim(
            this.settings.workerId,
            this.settings.leaseMs,
            this.settings.onlyRunId,
            attemptSpan.proposed,
          );
        } catch (e) {
          this.log.error('claim failed', { error: e instanceof Error ? e.message : String(e) });
          break;
        }
        if (!claim) break;
        claimedAny = true;
        this.stats.claimed += 1;
        const job = this.loop
          .execute(claim, this.shutdown.signal, attemptSpan)
          .then((r) => {
            this.stats[r] += 1;
          })
          .catch((e: unknown) =>
            this.log.error('run execution failed', {
              runId: claim.runId,
              error: e instanceof Error ? e.message : String(e),
            }),
          )
          .finally(() => {
            this.active.delete(job);
            this.nudge();
          });
        this.active.add(job);
      }
      if (this.stopped) break;
      if (claimedAny && this.active.size < this.settings.concurrency) continue;
      if (this.wakePending && this.active.size < this.settings.concurrency) continue;
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        // Jittered slow poll: a lost NOTIFY only delays work, never loses it.
        const ms = Math.floor(this.settings.pollIntervalMs * (0.75 + this.ids.random() / 2));
        this.clock.sleep(ms).then(resolve, resolve);
      });
      this.wake = null;
    }
  }

  /** Stops claiming, lets running runs finish for `drainMs`, then releases the rest. */
  async stop(drainMs = this.settings.drainMs): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    this.nudge();
    await this.loopDone;
    if (this.active.size > 0) {
      const drained = Promise.all([...this.active]).then(() => true);
      const timedOut = this.clock.sleep(drainMs).then(() => false);
      if (!(await Promise.race([drained, timedOut]))) this.shutdown.abort();
      await Promise.all([...this.active]);
    }
    await this.wakeups.stop();
    this.log.info('worker stopped', { workerId: this.settings.workerId, ...this.stats });
  }

  /**
   * Simulates a crash: stop claiming and abandon every running run without another write, leaving
   * leases to expire (used by the eval harness; the real SIGKILL path is covered end to end).
   */
  async crash(): Promise<void> {
    this.stopped = true;
    this.nudge();
    this.shutdown.abort(new LoopStopped('abandon'));
    await this.loopDone;
    await Promise.all([...this.active]);
    await this.wakeups.stop();
  }

  get activeRuns(): number {
    return this.active.size;
  }
}
