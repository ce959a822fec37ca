/**
 * A session's runs in the order they will work (issue 33, docs/adr/0038-conversation-control.md):
 * the active run (at most one works at a time, plan §27.5) and the runs queued behind it, FIFO. A
 * pure fold shared by the session projection (`sessions.active_run_id`, `sessions.queued_run_ids`)
 * and the session decider, so the row and the decision never disagree.
 */
export interface SessionQueue {
  /** The run that works now (or is next to be claimed); null when the session is idle. */
  readonly active: string | null;
  /** Runs waiting behind the active one, the next first. */
  readonly queued: readonly string[];
}

export const IDLE_QUEUE: SessionQueue = { active: null, queued: [] };

/**
 * The queue after `run.queued` of `runId`: with nothing active it becomes the active run; otherwise
 * it waits right behind `queuedBehind` (the active run, or one already waiting), or last when that
 * run is not in the queue any more.
 */
export function queueAfterQueued(q: SessionQueue, runId: string, queuedBehind: string | null): SessionQueue {
  if (q.active === null) return { active: runId, queued: q.queued };
  if (queuedBehind === q.active) return { active: q.active, queued: [runId, ...q.queued] };
  const at = queuedBehind === null ? -1 : q.queued.indexOf(queuedBehind);
  if (at < 0) return { active: q.active, queued: [...q.queued, runId] };
  return { active: q.active, queued: [...q.queued.slice(0, at + 1), runId, ...q.queued.slice(at + 1)] };
}

/** The queue after `runId` ended: the next waiting run becomes active, or an ended waiting run leaves. */
export function queueAfterEnded(q: SessionQueue, runId: string): SessionQueue {
  if (q.active === runId) return { active: q.queued[0] ?? null, queued: q.queued.slice(1) };
  if (!q.queued.includes(runId)) return q;
  return { active: q.active, queued: q.queued.filter((id) => id !== runId) };
}

/** The run a new `enqueue` message waits behind: the last of the queue, or the active run. */
export function queueTail(q: SessionQueue): string | null {
  return q.queued[q.queued.length - 1] ?? q.active;
}

/**
 * How many runs are ahead of `runId` in its session: 0 for the active run, 1 for the run right behind
 * it, …; null for a run that is neither (it ended, or belongs elsewhere).
 */
export function queuePosition(q: SessionQueue, runId: string): number | null {
  if (q.active === runId) return 0;
  const at = q.queued.indexOf(runId);
  return at < 0 ? null : at + 1;
}
