import type { Clock, IdFactory } from '../ports/clock';
import type { Logger } from '../ports/logger';
import type { RunQueue } from '../ports/run-store';
import type { WakeupSource } from '../ports/wakeup';
import type { RunLoop } from './run-loop';
import { Worker, type WorkerSettings } from './worker';

/** A periodic job a worker process runs beside claiming runs (e.g. the approval expiry reaper). */
export interface HousekeepingTask {
  readonly name: string;
  readonly everyMs: number;
  run(): Promise<unknown>;
  /** Started with the worker, before the first run (e.g. a LISTEN that triggers the task's work). */
  start?(): Promise<void>;
  stop?(): Promise<void>;
}

/**
 * A Worker that also runs housekeeping tasks while it is started. Waiting runs have released their
 * lease, so no run loop watches them; the approval reaper (plan §9.3) runs here, in every worker
 * process. Tasks are idempotent and race-safe (conditional appends), so several workers may run them.
 */
export class HousekeepingWorker extends Worker {
  private timers: NodeJS.Timeout[] = [];
  private running = new Set<Promise<unknown>>();

  constructor(
    queue: RunQueue,
    loop: RunLoop,
    wakeups: WakeupSource,
    clock: Clock,
    ids: IdFactory,
    private readonly logger: Logger,
    settings: WorkerSettings,
    private readonly tasks: readonly HousekeepingTask[],
  ) {
    super(queue, loop, wakeups, clock, ids, logger, settings);
  }

  override async start(): Promise<void> {
    await super.start();
    for (const task of this.tasks) await task.start?.();
    for (const task of this.tasks) {
      let busy = false;
      const tick = () => {
        if (busy) return;
        busy = true;
        const p = task
          .run()
          .catch((e: unknown) =>
            this.logger.warn('housekeeping task failed', {
              task: task.name,
              error: e instanceof Error ? e.message : String(e),
            }),
          )
          .finally(() => {
            busy = false;
            this.running.delete(p);
          });
        this.running.add(p);
      };
      this.timers.push(setInterval(tick, task.everyMs));
      tick();
    }
  }

  private async stopTasks(): Promise<void> {
    for (const t of this.timers) clearInterval(t);
    this.timers = [];
    for (const task of this.tasks) await task.stop?.();
    await Promise.all([...this.running]);
  }

  override async stop(drainMs?: number): Promise<void> {
    await this.stopTasks();
    await super.stop(drainMs);
  }

  override async crash(): Promise<void> {
    // The runs are abandoned first, synchronously (a crash is immediate, and the eval harness
    // crashes at an exact commit); the tasks' own stops (a LISTEN to close) can take a round trip.
    const crashing = super.crash();
    await this.stopTasks();
    await crashing;
  }
}
