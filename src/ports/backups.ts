/** What `agent backup` writes and reports (docs/operations/ha.md). */

/** `manifest.json` of one backup. */
export interface BackupManifest {
  readonly id: string;
  readonly createdAt: string;
  readonly release: string;
  /** The newest applied migration: a restore must reach the same. */
  readonly schemaRevision: string;
  readonly serverVersion: string;
  /** Which program made the dump, and its major version. */
  readonly tool: { readonly path: string; readonly major: number };
  readonly database: { readonly file: string; readonly sha256: string; readonly bytes: number };
  readonly artifacts: { readonly count: number; readonly bytes: number };
}

export interface RestoreReport {
  readonly manifest: BackupManifest;
  readonly artifactsVerified: number;
}
