/** How one case ended: `pending` cases were not run (their feature does not exist yet). */
export type EvalStatus = 'passed' | 'failed' | 'pending';

/** The structured result of one eval case (also the `--json` output). */
export interface EvalResult {
  /** The case id, e.g. `02_calculator_tool`. */
  readonly name: string;
  readonly status: EvalStatus;
  /** Why the case failed, one assertion per entry, most fundamental first; empty unless failed. */
  readonly failures: readonly string[];
  readonly durationMs: number;
  /** The run the case created; null for pending cases and cases that failed before submitting. */
  readonly runId: string | null;
  /** The case's `pending:` reason; null unless pending. */
  readonly pendingReason: string | null;
}

/** Counts per status, for the summary line. */
export function tally(results: readonly EvalResult[]): Record<EvalStatus, number> {
  const t: Record<EvalStatus, number> = { passed: 0, failed: 0, pending: 0 };
  for (const r of results) t[r.status] += 1;
  return t;
}
