/** Replaying the event log into fresh read models (docs/projections.md): options, progress and report. */
/** Progress of a running rebuild, reported after every replayed batch and at each phase change. */
export interface RebuildProgress {
  /** In order: 'prepare', 'replay', 'catch-up', 'compare', 'lock', 'catch-up', then 'verify' or 'swap', 'done'. */
  readonly phase: string;
  readonly eventsDone: number;
  /** Events in the log when the rebuild started (appends made during the rebuild are replayed on top). */
  readonly eventsTotal: number;
  readonly eventsPerSecond: number;
  /** Seconds left in the replay at the current rate, or null when unknown. */
  readonly etaSeconds: number | null;
}

export interface RebuildOptions {
  /** Projection names to rebuild (default: all of `PROJECTIONS`). */
  readonly projections?: readonly string[];
  /** true: compare and report, leave live tables untouched. false: replace live rows with the rebuilt ones. */
  readonly verify: boolean;
  /** Events read per page of the replay (default 5000). */
  readonly batchSize?: number;
  readonly onProgress?: (p: RebuildProgress) => void;
}

export type DifferenceKind = 'missing_in_live' | 'missing_in_rebuild' | 'different';

/** One differing row (column null: the whole row is missing on one side) or one differing column of a row. */
export interface RebuildDifference {
  /** Primary key of the row; composite keys are joined with '/'. */
  readonly key: string;
  readonly column: string | null;
  /** The live value (for a missing row: the live row's projection columns, or null). */
  readonly live: unknown;
  /** The rebuilt value (for a missing row: the rebuilt row's projection columns, or null). */
  readonly rebuilt: unknown;
  readonly kind: DifferenceKind;
}

export interface ProjectionReport {
  readonly name: string;
  /** Rows the replay produced. */
  readonly rows: number;
  /** How many rows differ in total (the `differences` list covers only the first few, by key). */
  readonly differingRows: number;
  /** Differences of the first rows (by key) that differ; in repair mode, what was replaced. */
  readonly differences: readonly RebuildDifference[];
}

export interface RebuildReport {
  /** Events folded, including sessions replayed again during the catch-up. */
  readonly eventsReplayed: number;
  /** Wall-clock duration of the whole rebuild. */
  readonly seconds: number;
  /** eventsReplayed / seconds. */
  readonly eventsPerSecond: number;
  readonly projections: readonly ProjectionReport[];
  /** true when the live tables were replaced (repair mode committed). */
  readonly swapped: boolean;
}
