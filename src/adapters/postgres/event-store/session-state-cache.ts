import type { StoredEvent } from '../../../domain/events/payloads';
import { PROJECTIONS, type Projection, type Row } from '../../../domain/projections';

/**
 * Events whose projection row is built from the event alone (evolve ignores any previous row), so a
 * key they introduce never needs to be read first.
 */
const CREATION_EVENTS: Readonly<Record<string, ReadonlySet<string>>> = {
  runs: new Set(['run.queued']),
  tool_invocations: new Set(['tool.call.proposed']),
  approvals: new Set(['approval.requested']),
  model_calls: new Set(['model.request.started']),
};

type State = Map<Projection, Map<string, Row>>;

/**
 * The keys of `proj` whose rows the batch's own creation events build (a run's `run.queued`): no
 * stored row to read, whatever the batch's events order (a run's user message comes before its
 * `run.queued`, and names the run).
 */
function createdIn(proj: Projection, drafts: readonly StoredEvent[]): Set<string> {
  const kinds = CREATION_EVENTS[proj.name];
  const keys = new Set<string>();
  if (!kinds) return keys;
  for (const d of drafts) {
    const key = kinds.has(d.type) ? proj.keyOf(d) : null;
    if (key !== null) keys.add(key);
  }
  return keys;
}

interface Entry {
  readonly sequence: number;
  readonly generation: string;
  readonly state: State;
  readonly at: number;
}

/**
 * The projection rows this process last wrote for a session, valid only at that session sequence.
 *
 * Skipping the read round trip is safe because every projection change goes through an append,
 * every append takes the session's next sequence, and the append statement writes only if the
 * sequence after the one the cache was taken at is still free (`UNIQUE (session_id, sequence)`); a
 * stale entry therefore loses the race (ConcurrencyConflict),
 * is dropped, and the retry reads fresh rows. A projection repair (which rewrites rows without an
 * append) bumps the read-model generation, which the statement also checks. Operational columns are
 * never written from it.
 */
export class SessionStateCache {
  private readonly entries = new Map<string, Entry>();
  /** The read-model generation of the newest entry stored (null: none yet), for a new session's batch. */
  private generation: string | null = null;
  constructor(
    private readonly maxEntries = 2000,
    private readonly ttlMs = 60_000,
  ) {}

  /** The cached state if it covers every row the batch touches, else undefined (read instead). */
  lookup(
    sessionId: string,
    drafts: readonly StoredEvent[],
    nowMs: number,
  ): { state: State; lastSequence: number; generation: string } | undefined {
    const entry = this.entries.get(sessionId);
    if (!entry || nowMs - entry.at > this.ttlMs) return this.newSession(sessionId, drafts);
    for (const proj of PROJECTIONS) {
      if (proj.keyColumn === null) continue;
      const cached = entry.state.get(proj);
      const created = createdIn(proj, drafts);
      for (const d of drafts) {
        const key = proj.name === 'sessions' ? sessionId : proj.keyOf(d);
        if (key === null || cached?.has(key) || created.has(key)) continue;
        return undefined;
      }
    }
    // LRU: a hit moves the entry to the back. The state is handed out as is: the append only reads it,
    // and `store` builds new maps, so an entry is never mutated after it was stored.
    this.entries.delete(sessionId);
    this.entries.set(sessionId, entry);
    return { state: entry.state, lastSequence: entry.sequence, generation: entry.generation };
  }

  /**
   * Records the rows as written at `sequence` (the state read plus the rows the append changed),
   * keeping only the session row and the rows of the runs this batch touched: the next append of a
   * session almost always continues the same run, and an entry that kept every run's rows would grow
   * with the session's history (and so would the work of every later append). A row dropped here is
   * simply read again if a later batch needs it.
   */
  store(
    sessionId: string,
    sequence: number,
    state: State,
    changed: State,
    generation: string,
    nowMs: number,
    runIds: ReadonlySet<string>,
  ): void {
    // Never replace a newer entry with an older one: two appends of one process may record their
    // rows in the other order than they committed (the submit's after the claim it woke), and the
    // older rows would only cost a refused append and a fresh read.
    const current = this.entries.get(sessionId);
    if (current && current.generation === generation && current.sequence > sequence) return;
    const merged: State = new Map();
    const keep = (proj: Projection, key: string, row: Row): void => {
      if (proj.name !== 'sessions' && !runIds.has(String(proj.name === 'runs' ? key : row.run_id))) return;
      let rows = merged.get(proj);
      if (!rows) merged.set(proj, (rows = new Map<string, Row>()));
      rows.set(key, row);
    };
    for (const [proj, rows] of state) if (proj.keyColumn !== null) for (const [k, r] of rows) keep(proj, k, r);
    for (const [proj, rows] of changed) if (proj.keyColumn !== null) for (const [k, r] of rows) keep(proj, k, r);
    this.entries.delete(sessionId);
    this.entries.set(sessionId, { sequence, generation, state: merged, at: nowMs });
    this.generation = generation;
    if (this.entries.size > this.maxEntries) this.entries.delete(this.entries.keys().next().value!);
  }

  /**
   * A batch that creates its session (`session.created` first) on rows nobody can have written yet:
   * the session's own row and rows its creation events build from the event alone (a new run). The
   * state is empty at sequence 0, at the generation last seen (ADR 0053): a stale generation or an
   * existing session makes the statement write nothing, and the appender retries on rows it reads.
   * Anything else the batch touches (an idempotency key) is read as usual.
   */
  private newSession(sessionId: string, drafts: readonly StoredEvent[]) {
    if (this.generation === null || drafts[0]?.type !== 'session.created') return undefined;
    for (const proj of PROJECTIONS) {
      if (proj.keyColumn === null || proj.name === 'sessions') continue;
      const created = createdIn(proj, drafts);
      for (const d of drafts) {
        const key = proj.keyOf(d);
        if (key !== null && !created.has(key)) return undefined;
      }
    }
    return { state: new Map() as State, lastSequence: 0, generation: this.generation };
  }

  forget(sessionId: string): void {
    this.entries.delete(sessionId);
  }
}
