import type { StoredEvent } from '../../../domain/events/payloads';
import type { Row } from '../../../domain/projections';
import type { RebuildTarget } from './rebuild-target';

/** The final rows of one session, per target (same order as the targets), and its last folded sequence. */
export interface FoldedSession {
  readonly sessionId: string;
  readonly lastSequence: number;
  readonly rows: readonly Row[][];
}

/**
 * Folds an event stream ordered by (session_id, sequence) through each target's `evolve`, exactly as
 * the inline append does (a row is kept only when evolve returns one). Every projection row belongs
 * to one session, so when the session changes its rows are final: they are handed to `emit` and
 * forgotten, which keeps memory bounded by the largest session, not by the log.
 */
export class SessionFolder {
  private sessionId: string | null = null;
  private lastSequence = 0;
  private readonly state: Map<string, Row>[];

  constructor(
    private readonly targets: readonly RebuildTarget[],
    private readonly emit: (session: FoldedSession) => void,
  ) {
    this.state = targets.map(() => new Map<string, Row>());
  }

  fold(e: StoredEvent): void {
    if (e.sessionId !== this.sessionId) {
      this.finish();
      this.sessionId = e.sessionId;
    }
    this.lastSequence = e.sequence;
    for (let i = 0; i < this.targets.length; i++) {
      const proj = this.targets[i].projection;
      const key = proj.keyOf(e);
      if (key === null) continue;
      const rows = this.state[i];
      const next = proj.evolve(rows.get(key), e);
      if (next !== undefined) rows.set(key, next);
    }
  }

  /** Emits the current session, if any. Call once more after the last event. */
  finish(): void {
    if (this.sessionId === null) return;
    this.emit({
      sessionId: this.sessionId,
      lastSequence: this.lastSequence,
      rows: this.state.map((m) => [...m.values()]),
    });
    for (const m of this.state) m.clear();
    this.sessionId = null;
  }
}
