/**
 * Trajectory export (plan §31, ADR 0016): consent records, export runs and export jobs.
 * Everything is tenant-scoped: an export covers exactly one tenant.
 */

export type ConsentStatus = 'granted' | 'withdrawn';

export interface ConsentRecord {
  readonly tenantId: string;
  readonly principalId: string;
  /** `absent` when the principal never recorded a choice (treated as not granted). */
  readonly status: ConsentStatus | 'absent';
  /** Bumped on every change; runs are stamped with it, so a withdrawal reaches back over older runs. */
  readonly version: number | null;
  readonly changedAt: string | null;
  readonly changedBy: string | null;
}

export interface ConsentChange {
  readonly record: ConsentRecord;
  /** Stored exports deleted because they contained this principal's runs (withdrawal only). */
  readonly exportsDeleted: number;
}

export interface ConsentRegistry {
  get(tenantId: string, principalId: string): Promise<ConsentRecord>;
  grant(tenantId: string, principalId: string, changedBy: string): Promise<ConsentChange>;
  /** Withdraws and deletes every stored export that contains one of the principal's runs. */
  withdraw(tenantId: string, principalId: string, changedBy: string): Promise<ConsentChange>;
}

export type ExportStatusFilter = 'completed' | 'failed' | 'all';

export interface ExportFilters {
  readonly sessionId?: string;
  readonly runId?: string;
  /** ISO-8601: runs that ended at or after it. */
  readonly since?: string;
  readonly status: ExportStatusFilter;
  /** Resume after this position (the `cursor` of an earlier summary). */
  readonly cursor?: string;
  /** Stop after this many exported runs (the summary's cursor resumes there). */
  readonly limit?: number;
}

export interface ExportSummary {
  /** Runs examined (terminal runs matching the filters). */
  readonly scanned: number;
  readonly exported: number;
  readonly skippedNoConsent: number;
  readonly byLabel: { readonly succeeded: number; readonly failed: number };
  /** Credentials replaced (layer 2), over all exported documents. */
  readonly redactions: number;
  readonly bytes: number;
  /** Resume here (`--cursor`); null when nothing was scanned and no cursor was given. */
  readonly cursor: string | null;
  /** Exported runs per principal (what withdrawal of consent must reach). */
  readonly principals: Readonly<Record<string, number>>;
  /** True when a transaction still in progress held the export back; resume later with the cursor. */
  readonly heldBack: boolean;
}

export interface ExportProgress {
  readonly scanned: number;
  readonly exported: number;
  readonly skippedNoConsent: number;
}

export interface TrajectoryExportJob {
  readonly id: string;
  readonly tenantId: string;
  readonly requestedBy: string;
  readonly filters: ExportFilters;
  readonly status: 'queued' | 'running' | 'succeeded' | 'failed' | 'deleted';
  readonly artifactId: string | null;
  readonly summary: ExportSummary | null;
  readonly error: { readonly code: string; readonly message: string } | null;
  readonly createdAt: string;
  readonly finishedAt: string | null;
}

/** One export pass: the summary, and the consent version each exported principal was exported under. */
export interface ExportRun {
  readonly summary: ExportSummary;
  /** The consent version each exported principal was exported under (re-checked before storing). */
  readonly consentVersions: ReadonlyMap<string, number>;
}

/** Exports matching terminal runs as JSON lines (docs/trajectories.md). */
export interface TrajectoryExports {
  /**
   * Hands every matching run's document to `write` (awaited, for backpressure). Throws
   * TrajectoryVerificationError when a finished document still holds a credential; the caller then
   * discards what it wrote.
   */
  export(
    tenantId: string,
    filters: ExportFilters,
    write: (line: string) => Promise<void>,
    onProgress?: (p: ExportProgress) => void,
  ): Promise<ExportRun>;
}

/** Export jobs run in the background for the HTTP API, their output stored as an artifact. */
export interface TrajectoryExportJobs {
  create(tenantId: string, requestedBy: string, filters: ExportFilters): Promise<TrajectoryExportJob>;
  get(tenantId: string, id: string): Promise<TrajectoryExportJob>;
  /** Waits for the jobs in flight (shutdown). */
  drain(): Promise<void>;
}

/** A JSON-lines file written to a temporary name and moved into place only when complete. */
export interface LineFile {
  readonly target: string;
  readonly write: (line: string) => Promise<void>;
  /** Moves the finished file into place; returns its path. */
  commit(): Promise<string>;
  /** Removes the temporary file; nothing appears at the target. */
  discard(): Promise<void>;
}
