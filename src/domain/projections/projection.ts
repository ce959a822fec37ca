import type { StoredEvent } from '../events/payloads';

/** A read-model row keyed by column name, with JSON-compatible values (what `to_jsonb(row)` yields). */
export type Row = Record<string, unknown>;

/**
 * A projection is a pure fold of the event stream into rows of one table. The same code runs inline
 * in the append transaction and in the rebuild, which is what makes the rebuild a proof.
 */
export interface Projection {
  readonly name: string;
  readonly table: string;
  /** Bump when evolve changes meaning; recorded in projection_watermarks. */
  readonly version: number;
  /** Primary-key column (single uuid column), or null for insert-only projections keyed otherwise. */
  readonly keyColumn: string | null;
  /** Columns written by the projection (everything else is operational and left untouched). */
  readonly columns: readonly string[];
  /** Key of the row this event touches, or null when the event does not concern this projection. */
  keyOf(event: StoredEvent): string | null;
  /** Next state of the row; `undefined` means "no row". Must be pure and deterministic. */
  evolve(row: Row | undefined, event: StoredEvent): Row | undefined;
}
