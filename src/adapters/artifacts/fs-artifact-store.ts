import * as fs from 'node:fs';
import * as path from 'node:path';
import { pipeline } from 'node:stream';
import { ArtifactIntegrityError, ArtifactStorageError } from '../../domain/artifacts';
import { ValidationError } from '../../domain/errors';
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

export { storageKeyFor } from './artifact-records';

const TMP_DIR = 'tmp';

export interface FsArtifactStoreOptions {
  readonly db: Database;
  /** The store's root, outside the source tree (`$AGENT_DATA_DIR/artifacts` by default). */
  readonly root: string;
  readonly clock: Clock;
  readonly ids: IdFactory;
  readonly log: Logger;
  /** Where `artifact.created` is recorded for artifacts that belong to a run; omitted, nothing is recorded. */
  readonly events?: EventStore;
  /** Blobs and temp files younger than this are never treated as orphans (a put may be in flight). Default 1 h. */
  readonly orphanGraceMs?: number;
}

/**
 * The filesystem ArtifactStore (plan §7, §18.4). Bytes live under `<root>/sha256/ab/cd/<sha256>`,
 * written once per distinct content (identical content shares one file); metadata lives in the
 * `artifacts` table under an opaque UUID. A put streams into a temp file while hashing, fsyncs it and
 * renames it into place under a per-key advisory lock, in the same transaction that inserts the row,
 * so the sweeper (which takes the same lock) never deletes a blob a new row is about to reference.
 * Reads verify the SHA-256 and size while streaming out and fail the stream with an
 * ArtifactIntegrityError at the end when they differ.
 */
export class FsArtifactStore implements ArtifactStore {
  private readonly orphanGraceMs: number;

  constructor(private readonly opts: FsArtifactStoreOptions) {
    this.orphanGraceMs = opts.orphanGraceMs ?? 3_600_000;
  }

  get root(): string {
    return this.opts.root;
  }

  async put(input: ArtifactPut, body: AsyncIterable<Uint8Array> | Uint8Array | string): Promise<ArtifactMetadata> {
    checkPut(input);
    const { db, clock, ids } = this.opts;
    const tmpDir = path.join(this.opts.root, TMP_DIR);
    await fs.promises.mkdir(tmpDir, { recursive: true, mode: 0o700 });
    const tmp = path.join(tmpDir, `${ids.uuid()}.part`);
    let renamed = false;
    try {
      const { sha256, sizeBytes } = await writeHashed(tmp, body);
      const key = storageKeyFor(sha256);
      const final = path.join(this.opts.root, key);
      await fs.promises.mkdir(path.dirname(final), { recursive: true, mode: 0o700 });
      const meta = metadataOf(input, ids.uuid(), clock.nowIso(), sha256, sizeBytes);
      await db.transaction(async (client) => {
        await lockKey(client, key);
        // Identical content already stored: replacing it with the bytes just hashed is atomic and
        // also repairs a blob that was damaged on disk.
        await fs.promises.rename(tmp, final);
        renamed = true;
        await fsyncDir(path.dirname(final));
        await insertRow(client, meta, key);
      });
      await recordCreated(db, this.opts.events, meta);
      return meta;
    } catch (e) {
      if (!renamed) await fs.promises.rm(tmp, { force: true }).catch(() => undefined);
      if (e instanceof ValidationError || e instanceof ArtifactStorageError) throw e;
      if (isErrno(e)) throw new ArtifactStorageError(`could not store artifact ${input.name}: ${e.code}`, {});
      throw e;
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
    const file = path.join(this.opts.root, row.storage_key);
    let handle: fs.promises.FileHandle;
    try {
      handle = await fs.promises.open(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
    } catch (e) {
      if (isErrno(e) && (e.code === 'ENOENT' || e.code === 'ELOOP')) throw missingContent(artifactId);
      throw e;
    }
    const source = handle.createReadStream();
    const verifier = new VerifyingStream(metadata);
    return { metadata, stream: pipeline(source, verifier, () => undefined) };
  }

  listForRun(tenantId: string, runId: string): Promise<readonly ArtifactMetadata[]> {
    return rowsForRun(this.opts.db, tenantId, runId, this.opts.clock.nowIso());
  }

  /**
   * Deletes expired metadata, then every blob no row references any more: those the deleted rows
   * pointed to, and orphans older than the grace period (a put that crashed between its rename and
   * its commit). Stale temp files are removed too. Returns the number of artifacts deleted.
   */
  async sweepExpired(nowIso: string): Promise<number> {
    const { keys, count } = await deleteExpiredRows(this.opts.db, nowIso);
    for (const key of keys) await this.removeIfUnreferenced(key);
    await this.sweepOrphans(Date.parse(nowIso));
    return count;
  }

  private async removeIfUnreferenced(key: string): Promise<boolean> {
    if (!STORAGE_KEY.test(key)) return false;
    return this.opts.db.transaction(async (client) => {
      await lockKey(client, key);
      if (await isReferenced(client, key)) return false;
      await fs.promises.rm(path.join(this.opts.root, key), { force: true });
      return true;
    });
  }

  private async sweepOrphans(nowMs: number): Promise<void> {
    const before = nowMs - this.orphanGraceMs;
    const old = async (file: string) => {
      const st = await fs.promises.lstat(file).catch(() => null);
      return st !== null && st.mtimeMs < before;
    };
    const tmpDir = path.join(this.opts.root, TMP_DIR);
    for (const name of await readdirSafe(tmpDir)) {
      const file = path.join(tmpDir, name);
      if (await old(file)) await fs.promises.rm(file, { force: true });
    }
    const blobs = path.join(this.opts.root, BLOB_DIR);
    for (const a of await readdirSafe(blobs))
      for (const b of await readdirSafe(path.join(blobs, a)))
        for (const name of await readdirSafe(path.join(blobs, a, b))) {
          const key = `${BLOB_DIR}/${a}/${b}/${name}`;
          if (STORAGE_KEY.test(key) && (await old(path.join(this.opts.root, key)))) {
            if (await this.removeIfUnreferenced(key)) this.opts.log.info('artifact orphan removed', { sha256: name });
          }
        }
  }
}

async function fsyncDir(dir: string): Promise<void> {
  const h = await fs.promises.open(dir, fs.constants.O_RDONLY);
  try {
    await h.sync();
  } finally {
    await h.close();
  }
}

async function readdirSafe(dir: string): Promise<string[]> {
  try {
    return await fs.promises.readdir(dir);
  } catch {
    return [];
  }
}

function isErrno(e: unknown): e is NodeJS.ErrnoException {
  // Duck-typed: errors from another realm (a test VM) are not `instanceof Error` here.
  const code = typeof e === 'object' && e !== null ? (e as NodeJS.ErrnoException).code : undefined;
  return (
    typeof code === 'string' && /^E[A-Z0-9]+$/.test(code) && typeof (e as { syscall?: unknown }).syscall === 'string'
  );
}
