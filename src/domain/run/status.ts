import { InvalidStateTransition } from '../errors';

/** Run status, plan §27.2. Only `transition` may change it. */
export type RunStatus =
  | 'queued'
  | 'running'
  | 'waiting_for_approval'
  | 'waiting_for_user'
  | 'waiting_for_children'
  | 'completed'
  | 'failed'
  | 'cancelled'
  | 'interrupted';

/**
 * `interrupted` (issue 33): a newer message of the session stopped the run at a safe point
 * (`multitask_strategy: interrupt`); its partial work stays in the log.
 */
export const TERMINAL_STATUSES: ReadonlySet<RunStatus> = new Set(['completed', 'failed', 'cancelled', 'interrupted']);

/** The event types that end a run (one per run, its single terminal write). */
export const RUN_ENDING_EVENTS: ReadonlySet<string> = new Set([
  'run.completed',
  'run.failed',
  'run.cancelled',
  'run.interrupted',
]);

const ALLOWED: Record<RunStatus, readonly RunStatus[]> = {
  queued: ['running', 'failed', 'cancelled', 'interrupted'],
  running: [
    'queued',
    'waiting_for_approval',
    'waiting_for_user',
    'waiting_for_children',
    'completed',
    'failed',
    'cancelled',
    'interrupted',
  ],
  waiting_for_approval: ['queued', 'running', 'cancelled', 'failed', 'interrupted'],
  waiting_for_user: ['queued', 'running', 'cancelled', 'failed', 'interrupted'],
  // A parent whose delegate.run children run (plan §27.6): re-queued once every child is terminal.
  waiting_for_children: ['queued', 'cancelled', 'failed', 'interrupted'],
  completed: [],
  failed: [],
  cancelled: [],
  interrupted: [],
};

export function isTerminal(s: RunStatus): boolean {
  return TERMINAL_STATUSES.has(s);
}

export function canTransition(from: RunStatus, to: RunStatus): boolean {
  return ALLOWED[from].includes(to);
}

/**
 * The single guard for a status change. `running -> queued` is the release of a lease on graceful
 * shutdown (the run is handed back to the queue), and `waiting_* -> queued` is a resolution that
 * re-enqueues the run; both are re-claims of the same run, not new turns.
 */
export function transition(from: RunStatus, to: RunStatus): RunStatus {
  if (!canTransition(from, to)) {
    throw new InvalidStateTransition(`run cannot go from ${from} to ${to}`, { from, to });
  }
  return to;
}
