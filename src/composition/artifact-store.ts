import { FsArtifactStore } from '../adapters/artifacts/fs-artifact-store';
import { S3ArtifactStore } from '../adapters/artifacts/s3-artifact-store';
import { S3Blobs } from '../adapters/artifacts/s3-blobs';
import type { Database } from '../adapters/postgres';
import type { Settings } from '../config/settings';
import type { ArtifactStore } from '../ports/artifact-store';
import type { Clock, IdFactory } from '../ports/clock';
import type { EventStore } from '../ports/event-store';
import type { Logger } from '../ports/logger';

export interface ArtifactStoreDeps {
  readonly db: Database;
  readonly clock: Clock;
  readonly ids: IdFactory;
  readonly log: Logger;
  readonly events?: EventStore;
}

/** The configured artifact store and how to release what it holds (the S3 client's sockets). */
export interface OpenedArtifactStore {
  readonly store: ArtifactStore;
  /** Human-readable location, for logs and `agent doctor` (never a credential). */
  readonly location: string;
  close(): void;
}

/**
 * `ARTIFACT_STORE` picks where the bytes live (ADR 0045): `fs` (default) under `AGENT_ARTIFACT_DIR`,
 * `s3` in `S3_BUCKET`. Metadata is in PostgreSQL either way, and both check SHA-256 on every read.
 */
export function openArtifactStore(settings: Settings, deps: ArtifactStoreDeps): OpenedArtifactStore {
  const cfg = settings.artifactStore;
  if (cfg.kind === 's3') {
    const blobs = new S3Blobs(cfg);
    return {
      store: new S3ArtifactStore({ ...deps, blobs }),
      location: blobs.describe(),
      close: () => blobs.close(),
    };
  }
  return {
    store: new FsArtifactStore({ ...deps, root: settings.artifactDir }),
    location: settings.artifactDir,
    close: () => undefined,
  };
}

/** The S3 blobs of the configured bucket, or null when artifacts are on the filesystem (backups, doctor). */
export function s3BlobsOf(settings: Settings): S3Blobs | null {
  const cfg = settings.artifactStore;
  return cfg.kind === 's3' ? new S3Blobs(cfg) : null;
}
