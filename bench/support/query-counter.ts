import { Client } from 'pg';

/** What kind of round trip a statement is, for the per-turn cost table. */
export type QueryKind = 'append' | 'read' | 'write' | 'begin' | 'commit' | 'rollback' | 'notify' | 'other';

export interface QueryRecord {
  readonly kind: QueryKind;
  readonly text: string;
  /** Whether it ran inside an explicit transaction (between BEGIN and COMMIT/ROLLBACK on its client). */
  readonly inTransaction: boolean;
  /**
   * Written while an earlier statement of its client was still unanswered (a pipelined connection,
   * e.g. an append and the COMMIT behind it): it shares that statement's round trip.
   */
  readonly pipelined: boolean;
  readonly startMs: number;
  durationMs: number;
}

export interface QueryTally {
  /** Waits for the server: every statement sent, except one pipelined behind an unanswered one. */
  readonly roundTrips: number;
  /** Transactions committed: autocommit writes (appends, updates) plus explicit COMMITs. */
  readonly commits: number;
  /** Event-store append statements (each is one commit unless inside a transaction). */
  readonly appends: number;
  /** Autocommit reads (SELECTs outside a transaction, excluding pg_notify). */
  readonly reads: number;
  /** Standalone pg_notify statements (the append's NOTIFYs ride in its own statement: none). */
  readonly notifies: number;
}

const IN_TX = Symbol('benchInTransaction');
const UNANSWERED = Symbol('benchUnanswered');

function classify(text: string): QueryKind {
  const t = text.trimStart().slice(0, 32).toUpperCase();
  // The event store's append statement, named or (a large batch) not (append-statement.ts).
  if (t.startsWith('WITH SW AS (') || t.startsWith('WITH EV AS (')) return 'append';
  if (t.startsWith('BEGIN')) return 'begin';
  if (t.startsWith('COMMIT')) return 'commit';
  if (t.startsWith('ROLLBACK')) return 'rollback';
  // A batch of notifications (`SELECT count(pg_notify(c, p)) FROM unnest(…)`, the transient publisher's).
  if (t.startsWith('SELECT PG_NOTIFY') || t.startsWith('SELECT COUNT(PG_NOTIFY')) return 'notify';
  if (t.startsWith('SELECT') || t.startsWith('WITH')) return 'read';
  if (t.startsWith('UPDATE') || t.startsWith('INSERT') || t.startsWith('DELETE')) return 'write';
  return 'other';
}

/**
 * Counts (and optionally records) every statement any `pg` client of this process sends, by
 * patching `Client.prototype.query` for the duration of a measurement. Deterministic where timing
 * is not: the number of round trips and commits per turn does not depend on machine load.
 */
export class QueryCounter {
  private records: QueryRecord[] = [];
  private original: ((...args: unknown[]) => unknown) | null = null;
  private readonly t0 = performance.now();

  start(): void {
    if (this.original) return;
    const proto = Client.prototype as unknown as { query: (...args: unknown[]) => unknown };
    const original = proto.query;
    this.original = original;
    const records = this.records;
    const t0 = this.t0;
    proto.query = function patched(this: Client & { [IN_TX]?: boolean; [UNANSWERED]?: number }, ...args: unknown[]) {
      const first = args[0];
      const text =
        typeof first === 'string'
          ? first
          : first && typeof first === 'object' && 'text' in first
            ? String(first.text)
            : '';
      const name = first && typeof first === 'object' && 'name' in first ? String(first.name) : '';
      // The event store's append statements are named agent_append_<hash> (append-statement.ts).
      const kind = name.startsWith('agent_append_') ? 'append' : classify(text);
      if (kind === 'begin') this[IN_TX] = true;
      const unanswered = this[UNANSWERED] ?? 0;
      const rec: QueryRecord = {
        kind,
        text,
        inTransaction: this[IN_TX] === true && kind !== 'begin',
        pipelined: unanswered > 0,
        startMs: performance.now() - t0,
        durationMs: NaN,
      };
      if (kind === 'commit' || kind === 'rollback') this[IN_TX] = false;
      records.push(rec);
      this[UNANSWERED] = unanswered + 1;
      const done = () => {
        this[UNANSWERED] = (this[UNANSWERED] ?? 1) - 1;
        rec.durationMs = performance.now() - t0 - rec.startMs;
      };
      // The pool calls `query(text, values, callback)`; direct callers get a promise.
      const last = args[args.length - 1];
      if (typeof last === 'function') {
        args[args.length - 1] = (...cbArgs: unknown[]) => {
          done();
          return (last as (...a: unknown[]) => unknown)(...cbArgs);
        };
      }
      const out = original.apply(this, args);
      if (out && typeof (out as Promise<unknown>).then === 'function') {
        (out as Promise<unknown>).then(done, done);
      }
      return out;
    };
  }

  stop(): void {
    if (this.original) (Client.prototype as unknown as { query: unknown }).query = this.original;
    this.original = null;
  }

  reset(): void {
    this.records.length = 0;
  }

  get all(): readonly QueryRecord[] {
    return this.records;
  }

  tally(filter: (r: QueryRecord) => boolean = () => true): QueryTally {
    const rs = this.records.filter(filter);
    const autocommitWrites = rs.filter((r) => !r.inTransaction && (r.kind === 'append' || r.kind === 'write')).length;
    return {
      roundTrips: rs.filter((r) => !r.pipelined).length,
      commits: autocommitWrites + rs.filter((r) => r.kind === 'commit').length,
      appends: rs.filter((r) => r.kind === 'append').length,
      reads: rs.filter((r) => !r.inTransaction && r.kind === 'read').length,
      notifies: rs.filter((r) => r.kind === 'notify').length,
    };
  }
}
