import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { pipeline } from 'node:stream';
import { ArtifactIntegrityError } from '../../domain/artifacts';
import type { ArtifactContent, ArtifactMetadata, ArtifactPut, ArtifactStore } from '../../ports/artifact-store';
import type { Clock, IdFactory } from '../../ports/clock';
import type { EventStore } from '../../ports/event-store';
import type { Logger } from '../../ports/logger';
import type { Database } from '../postgres';
import {
  BLOB_DIR,
  checkPut,
  deleteExpiredRows,
  findRow,
  insertRow,
  isReferenced,
  lockKey,
  metadataOf,
  missingContent,
  recordCreated,
  rowsForRun,
  STORAGE_KEY,
  storageKeyFor,
  toMetadata,
  VerifyingStream,
  writeHashed,
} from './artifact-records';
import type { S3Blobs } from './s3-blobs';

export interface S3ArtifactStoreOptions {
  readonly db: Database;
  readonly blobs: S3Blobs;
  readonly clock: Clock;
  readonly ids: IdFactory;
  readonly log: Logger;
  readonly events?: EventStore;
  /** Where a put's bytes wait, hashed, before the upload (this host's own disk; default the OS temp dir). */
  readonly spoolDir?: string;
  /** Objects younger than this are never treated as orphans (a put may be in flight). Default 1 h. */
  readonly orphanGraceMs?: number;
}

/**
 * The ArtifactStore on an S3-compatible bucket (ADR 0045), for many hosts with no shared directory.
 * Same keys and rows as the filesystem store (`sha256/ab/cd/<sha256>`, metadata in `artifacts`), so
 * the two agree on everything but where the bytes are. A put streams the body to a local spool file
 * while hashing it (the key is the digest, known only at the end), uploads it under its key (multipart
 * when large), then inserts the row under the key's advisory lock, re-uploading if the sweeper removed
 * the object meanwhile. A read streams the object through the same SHA-256 verifier.
 */
export class S3ArtifactStore implements ArtifactStore {
  private readonly orphanGraceMs: number;
  private readonly spoolDir: string;

  constructor(private readonly opts: S3ArtifactStoreOptions) {
    this.orphanGraceMs = opts.orphanGraceMs ?? 3_600_000;
    this.spoolDir = opts.spoolDir ?? os.tmpdir();
  }

  async put(input: ArtifactPut, body: AsyncIterable<Uint8Array> | Uint8Array | string): Promise<ArtifactMetadata> {
    checkPut(input);
    const { db, clock, ids, blobs } = this.opts;
    const spool = await fs.promises.mkdtemp(path.join(this.spoolDir, 'agent-artifact-'));
    try {
      const file = path.join(spool, 'body');
      const { sha256, sizeBytes } = await writeHashed(file, body);
      const key = storageKeyFor(sha256);
      // Always uploaded, even when the key exists: like the filesystem store's rename, this repairs
      // an object that was damaged or removed behind the store's back.
      await blobs.putFile(key, file, sizeBytes);
      const meta = metadataOf(input, ids.uuid(), clock.nowIso(), sha256, sizeBytes);
      await db.transaction(async (client) => {
        await lockKey(client, key);
        // The sweeper may have deleted the object between the upload and the lock (no row named it).
        if ((await blobs.size(key)) !== sizeBytes) await blobs.putFile(key, file, sizeBytes);
        await insertRow(client, meta, key);
      });
      await recordCreated(db, this.opts.events, meta);
      return meta;
    } finally {
      await fs.promises.rm(spool, { recursive: true, force: true }).catch(() => undefined);
    }
  }

  async get(tenantId: string, artifactId: string): Promise<ArtifactMetadata | undefined> {
    const row = await findRow(this.opts.db, tenantId, artifactId, this.opts.clock.nowIso());
    return row ? toMetadata(row) : undefined;
  }

  async open(tenantId: string, artifactId: string): Promise<ArtifactContent | undefined> {
    const row = await findRow(this.opts.db, tenantId, artifactId, this.opts.clock.nowIso());
    if (!row) return undefined;
    const metadata = toMetadata(row);
    if (!STORAGE_KEY.test(row.storage_key))
      throw new ArtifactIntegrityError(`artifact ${artifactId} has an invalid storage key`, { artifactId });
    const source = await this.opts.blobs.read(row.storage_key);
    if (!source) throw missingContent(artifactId);
    return { metadata, stream: pipeline(source, new VerifyingStream(metadata), () => undefined) };
  }

  listForRun(tenantId: string, runId: string): Promise<readonly ArtifactMetadata[]> {
    return rowsForRun(this.opts.db, tenantId, runId, this.opts.clock.nowIso());
  }

  /**
   * Deletes expired metadata, then every object no row references any more: those the deleted rows
   * named, and orphans older than the grace period (a put that crashed between upload and commit).
   * The orphan pass lists the bucket's `sha256/` prefix: on a very large bucket, sweep less often
   * (AGENT_ARTIFACT_SWEEP_SECONDS) on fewer workers.
   */
  async sweepExpired(nowIso: string): Promise<number> {
    const { keys, count } = await deleteExpiredRows(this.opts.db, nowIso);
    for (const key of keys) await this.removeIfUnreferenced(key);
    const before = Date.parse(nowIso) - this.orphanGraceMs;
    for await (const o of this.opts.blobs.list(`${BLOB_DIR}/`))
      if (STORAGE_KEY.test(o.key) && o.lastModified < before && (await this.removeIfUnreferenced(o.key)))
        this.opts.log.info('artifact orphan removed', { sha256: path.basename(o.key) });
    return count;
  }

  private async removeIfUnreferenced(key: string): Promise<boolean> {
    if (!STORAGE_KEY.test(key)) return false;
    return this.opts.db.transaction(async (client) => {
      await lockKey(client, key);
      if (await isReferenced(client, key)) return false;
      await this.opts.blobs.delete(key);
      return true;
    });
  }

  close(): void {
    this.opts.blobs.close();
  }
}
