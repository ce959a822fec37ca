/** A completed run whose memories have not been formed yet (MEMORY_FORMATION, ADR 0043). */
export interface FormationDue {
  readonly runId: string;
  readonly tenantId: string;
  readonly principalId: string;
  readonly sessionId: string;
  readonly agentId: string;
  readonly modelPolicy: string;
}

/** What one run's formation did, kept with its ledger row. */
export interface FormationOutcome {
  readonly mode: 'extractive' | 'model';
  readonly proposed: number;
  readonly written: number;
  readonly refused: number;
  /** Why model-assisted formation fell back to the extractive one; null: it did not. */
  readonly fallback: string | null;
}

/**
 * Which runs' memories were formed: one row per run, claimed before formation and finished after,
 * so formation happens once per run even when a worker dies mid-way (a claim older than the lease
 * is taken over; the writes are idempotent on the run id, so the second attempt records nothing twice).
 */
export interface FormationLedger {
  /** Completed top-level runs since `sinceIso` with no finished formation and no live claim. */
  due(sinceIso: string, staleBeforeIso: string, limit: number): Promise<FormationDue[]>;
  /** Claims the run's formation; false when another worker holds a live claim or finished it. */
  claim(run: FormationDue, nowIso: string, staleBeforeIso: string): Promise<boolean>;
  finish(run: FormationDue, nowIso: string, outcome: FormationOutcome): Promise<void>;
}
