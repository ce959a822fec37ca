/**
 * Content-addressed, tenant-authorized storage for files produced by runs (sandbox output, exported
 * workspace files, large tool results, trajectory exports). Plan §7 (ArtifactStore), §18.4.
 *
 * Ids are opaque and never reveal where the bytes live; the storage key is derived from the content's
 * SHA-256 and is never shown to a client. The SHA-256 is computed while the bytes stream in and checked
 * again while they stream out, so a tampered stored file is detected on read.
 */
export interface ArtifactStore {
  /**
   * Streams `body` into the store, computing its SHA-256 and size on the way in, and records metadata.
   * When the artifact belongs to a run (`runId` and `sessionId`), an `artifact.created` event is
   * recorded on that session. Refuses a name that is not a base name or a malformed media type
   * (ValidationError) before writing anything.
   */
  put(input: ArtifactPut, body: AsyncIterable<Uint8Array> | Uint8Array | string): Promise<ArtifactMetadata>;
  /** Metadata for an artifact the tenant may see; `undefined` when unknown or another tenant's (never a 403). */
  get(tenantId: string, artifactId: string): Promise<ArtifactMetadata | undefined>;
  /**
   * Opens the content for reading. The returned stream verifies the SHA-256 as it is consumed and fails
   * with an integrity error (a stream error) when the stored bytes no longer match.
   */
  open(tenantId: string, artifactId: string): Promise<ArtifactContent | undefined>;
  /** Artifacts recorded for one run, oldest first. */
  listForRun(tenantId: string, runId: string): Promise<readonly ArtifactMetadata[]>;
  /** Deletes artifacts whose `expiresAt` has passed; returns how many were removed. */
  sweepExpired(nowIso: string): Promise<number>;
}

export interface ArtifactPut {
  readonly tenantId: string;
  /** The run that produced it, when any (exports and uploads may have none). */
  readonly runId?: string;
  readonly sessionId?: string;
  /** The principal it was produced for (a run's submitter); the HTTP API shows it to that principal only. */
  readonly principalId?: string;
  /** A display name (a file's base name, `stdout.txt`, `export.jsonl`); never a storage path. */
  readonly name: string;
  readonly mediaType: string;
  /** What produced it, for the dashboard and audits: `sandbox.run_command`, `artifact.export`, `trajectory.export`, … */
  readonly source: string;
  /** ISO-8601; absent means kept until deleted. */
  readonly expiresAt?: string;
}

export interface ArtifactMetadata {
  readonly id: string;
  readonly tenantId: string;
  readonly runId?: string;
  readonly sessionId?: string;
  readonly principalId?: string;
  readonly name: string;
  readonly mediaType: string;
  readonly source: string;
  readonly sizeBytes: number;
  /** Lower-case hex SHA-256 of the content. */
  readonly sha256: string;
  readonly createdAt: string;
  readonly expiresAt?: string;
}

export interface ArtifactContent {
  readonly metadata: ArtifactMetadata;
  /** A Node `Readable` in the filesystem adapter; typed as an async iterable so ports stay builtin-free. */
  readonly stream: AsyncIterable<Uint8Array>;
}
