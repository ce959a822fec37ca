import type { Logger } from '../ports/logger';
import type { WakeupSource } from '../ports/wakeup';
import type { HousekeepingTask } from './housekeeping-worker';

/** The join of a parent's children (the application's ChildRunService, ADR 0037). */
export interface ChildJoiner {
  join(parentRunId: string): Promise<unknown>;
  sweep(): Promise<void>;
}

/**
 * Joins parents as their children end (plan §27.6, ADR 0037): each child's terminal append NOTIFYs
 * `run_join` with its parent's id, and every worker tries that parent's join at once (the join is
 * exactly once whoever tries: a conditional append the run decider refuses to repeat). The periodic
 * sweep is the safety net for notifications lost while the listener was down. A worker restricted to
 * one run (the CLI's) joins only that run.
 */
export class ChildJoinTask implements HousekeepingTask {
  readonly name = 'child-join';
  /** Joins in flight by parent, so a burst of notifications for one parent makes one attempt at a time. */
  private readonly inFlight = new Map<string, Promise<void>>();
  private readonly again = new Set<string>();

  constructor(
    private readonly joiner: ChildJoiner,
    private readonly wakeups: WakeupSource,
    private readonly log: Logger,
    readonly everyMs: number,
    private readonly onlyRunId?: string,
  ) {}

  start(): Promise<void> {
    return this.wakeups.start((payload) => {
      if (payload && (!this.onlyRunId || payload === this.onlyRunId)) this.trigger(payload);
    });
  }

  async stop(): Promise<void> {
    await this.wakeups.stop();
    await Promise.all([...this.inFlight.values()]);
  }

  run(): Promise<unknown> {
    return this.onlyRunId ? this.joiner.join(this.onlyRunId) : this.joiner.sweep();
  }

  /** Tries the parent's join now; one more time after the attempt in flight, if one is. */
  trigger(parentRunId: string): void {
    if (this.inFlight.has(parentRunId)) {
      this.again.add(parentRunId);
      return;
    }
    const attempt = this.joiner
      .join(parentRunId)
      .then(
        () => undefined,
        (e: unknown) =>
          this.log.warn('child join failed', { parentRunId, error: e instanceof Error ? e.message : String(e) }),
      )
      .finally(() => {
        this.inFlight.delete(parentRunId);
        if (this.again.delete(parentRunId)) this.trigger(parentRunId);
      });
    this.inFlight.set(parentRunId, attempt);
  }
}
