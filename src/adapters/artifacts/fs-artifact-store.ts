import { createHash, type Hash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pipeline, Transform, type TransformCallback } from 'node:stream';
import type { PoolClient } from 'pg';
import {
  ArtifactIntegrityError,
  ArtifactStorageError,
  isValidArtifactName,
  MEDIA_TYPE_PATTERN,
} from '../../domain/artifacts';
import { ValidationError } from '../../domain/errors';
import type { ArtifactContent, ArtifactMetadata, ArtifactPut, ArtifactStore } from '../../ports/artifact-store';
import type { Clock, IdFactory } from '../../ports/clock';
import type { EventStore } from '../../ports/event-store';
import type { Logger } from '../../ports/logger';
import type { Database } from '../postgres';
import { artifactDecider } from '../../domain/deciders/artifact';
import { eventsOrThrow } from '../../domain/deciders/decider';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** The only storage keys the store writes or will open: derived from the SHA-256, relative to the root. */
const STORAGE_KEY = /^sha256\/[0-9a-f]{2}\/[0-9a-f]{2}\/[0-9a-f]{64}$/;
const BLOB_DIR = 'sha256';
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

interface ArtifactRow {
  id: string;
  tenant_id: string;
  principal_id: string | null;
  session_id: string | null;
  run_id: string | null;
  name: string;
  media_type: string;
  storage_key: string;
  sha256: string;
  size_bytes: string;
  source: string;
  created_at: Date;
  expires_at: Date | null;
}

/** The storage key of content with this SHA-256: two levels of fan-out, then the full digest. */
export function storageKeyFor(sha256: string): string {
  return `${BLOB_DIR}/${sha256.slice(0, 2)}/${sha256.slice(2, 4)}/${sha256}`;
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
      const id = ids.uuid();
      const createdAt = clock.nowIso();
      await db.transaction(async (client) => {
        await lockKey(client, key);
        // Identical content already stored: replacing it with the bytes just hashed is atomic and
        // also repairs a blob that was damaged on disk.
        await fs.promises.rename(tmp, final);
        renamed = true;
        await fsyncDir(path.dirname(final));
        await client.query(
          `INSERT INTO artifacts (id, tenant_id, principal_id, session_id, run_id, name, media_type, storage_key,
             sha256, size_bytes, metadata, source, created_at, expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, '{}', $11, $12, $13)`,
          [
            id,
            input.tenantId,
            input.principalId ?? null,
            input.sessionId ?? null,
            input.runId ?? null,
            input.name,
            input.mediaType,
            key,
            sha256,
            sizeBytes,
            input.source,
            createdAt,
            input.expiresAt ?? null,
          ],
        );
      });
      const meta: ArtifactMetadata = {
        id,
        tenantId: input.tenantId,
        ...(input.runId ? { runId: input.runId } : {}),
        ...(input.sessionId ? { sessionId: input.sessionId } : {}),
        ...(input.principalId ? { principalId: input.principalId } : {}),
        name: input.name,
        mediaType: input.mediaType,
        source: input.source,
        sizeBytes,
        sha256,
        createdAt,
        ...(input.expiresAt ? { expiresAt: new Date(input.expiresAt).toISOString() } : {}),
      };
      await this.recordCreated(meta);
      return meta;
    } catch (e) {
      if (!renamed) await fs.promises.rm(tmp, { force: true }).catch(() => undefined);
      if (e instanceof ValidationError || e instanceof ArtifactStorageError) throw e;
      if (isErrno(e)) throw new ArtifactStorageError(`could not store artifact ${input.name}: ${e.code}`, {});
      throw e;
    }
  }

  async get(tenantId: string, artifactId: string): Promise<ArtifactMetadata | undefined> {
    const row = await this.row(tenantId, artifactId);
    return row ? toMetadata(row) : undefined;
  }

  async open(tenantId: string, artifactId: string): Promise<ArtifactContent | undefined> {
    const row = await this.row(tenantId, artifactId);
    if (!row) return undefined;
    const metadata = toMetadata(row);
    if (!STORAGE_KEY.test(row.storage_key))
      throw new ArtifactIntegrityError(`artifact ${artifactId} has an invalid storage key`, { artifactId });
    const file = path.join(this.opts.root, row.storage_key);
    let handle: fs.promises.FileHandle;
    try {
      handle = await fs.promises.open(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
    } catch (e) {
      if (isErrno(e) && (e.code === 'ENOENT' || e.code === 'ELOOP'))
        throw new ArtifactIntegrityError(`artifact ${artifactId} failed verification: its stored content is missing`, {
          artifactId,
        });
      throw e;
    }
    const source = handle.createReadStream();
    const verifier = new VerifyingStream(metadata);
    return { metadata, stream: pipeline(source, verifier, () => undefined) };
  }

  async listForRun(tenantId: string, runId: string): Promise<readonly ArtifactMetadata[]> {
    if (!UUID.test(runId)) return [];
    const res = await this.opts.db.query<ArtifactRow>(
      `SELECT * FROM artifacts WHERE tenant_id = $1 AND run_id = $2 AND (expires_at IS NULL OR expires_at > $3)
       ORDER BY created_at, id`,
      [tenantId, runId, this.opts.clock.nowIso()],
    );
    return res.rows.map(toMetadata);
  }

  /**
   * Deletes expired metadata, then every blob no row references any more: those the deleted rows
   * pointed to, and orphans older than the grace period (a put that crashed between its rename and
   * its commit). Stale temp files are removed too. Returns the number of artifacts deleted.
   */
  async sweepExpired(nowIso: string): Promise<number> {
    const { db } = this.opts;
    const deleted = await db.query<{ storage_key: string }>(
      `DELETE FROM artifacts WHERE expires_at IS NOT NULL AND expires_at <= $1 RETURNING storage_key`,
      [nowIso],
    );
    const keys = new Set(deleted.rows.map((r) => r.storage_key));
    for (const key of keys) await this.removeIfUnreferenced(key);
    await this.sweepOrphans(Date.parse(nowIso));
    return deleted.rowCount ?? 0;
  }

  private async removeIfUnreferenced(key: string): Promise<boolean> {
    if (!STORAGE_KEY.test(key)) return false;
    return this.opts.db.transaction(async (client) => {
      await lockKey(client, key);
      const used = await client.query('SELECT 1 FROM artifacts WHERE storage_key = $1 LIMIT 1', [key]);
      if ((used.rowCount ?? 0) > 0) return false;
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

  private async row(tenantId: string, artifactId: string): Promise<ArtifactRow | undefined> {
    if (!UUID.test(artifactId)) return undefined;
    const res = await this.opts.db.query<ArtifactRow>(
      `SELECT * FROM artifacts WHERE id = $1 AND tenant_id = $2 AND (expires_at IS NULL OR expires_at > $3)`,
      [artifactId, tenantId, this.opts.clock.nowIso()],
    );
    return res.rows[0];
  }

  /** `artifact.created` on the run's session (plan §6.8) — ids, name, type, size and checksum; never a path. */
  private async recordCreated(meta: ArtifactMetadata): Promise<void> {
    const { events } = this.opts;
    if (!events || !meta.runId || !meta.sessionId) return;
    try {
      // A new artifact id: the decider's initial state is the artifact's.
      const created = artifactDecider.decide(
        {
          kind: 'CreateArtifact',
          runId: meta.runId,
          actor: { actorType: 'system' },
          artifact: {
            artifactId: meta.id,
            name: meta.name,
            mediaType: meta.mediaType,
            sha256: meta.sha256,
            sizeBytes: meta.sizeBytes,
            source: meta.source,
            expiresAt: meta.expiresAt ?? null,
          },
        },
        artifactDecider.initialState(),
      );
      await events.append(meta.sessionId, eventsOrThrow(created), { tenantId: meta.tenantId });
    } catch (e) {
      // No event, no artifact: the metadata goes; the blob is left to the sweeper (it may be shared).
      await this.opts.db.query('DELETE FROM artifacts WHERE id = $1', [meta.id]).catch(() => undefined);
      throw e;
    }
  }
}

function checkPut(input: ArtifactPut): void {
  const refuse = (field: string, message: string): never => {
    throw new ValidationError(message, { field });
  };
  if (typeof input.tenantId !== 'string' || input.tenantId === '') refuse('tenantId', 'an artifact needs a tenant');
  if (!isValidArtifactName(input.name))
    refuse('name', 'an artifact name must be a base name (1-255 characters, no path separators or control characters)');
  if (!MEDIA_TYPE_PATTERN.test(input.mediaType)) refuse('mediaType', `"${input.mediaType}" is not a media type`);
  if (typeof input.source !== 'string' || input.source === '' || input.source.length > 100)
    refuse('source', 'an artifact needs a source of at most 100 characters');
  for (const f of ['runId', 'sessionId'] as const)
    if (input[f] !== undefined && !UUID.test(input[f])) refuse(f, `${f} must be a UUID`);
  if (input.sessionId === undefined && input.runId !== undefined)
    refuse('sessionId', "an artifact of a run must name the run's session");
  if (input.expiresAt !== undefined && Number.isNaN(Date.parse(input.expiresAt)))
    refuse('expiresAt', 'expiresAt must be an ISO-8601 instant');
}

async function writeHashed(
  file: string,
  body: AsyncIterable<Uint8Array> | Uint8Array | string,
): Promise<{ sha256: string; sizeBytes: number }> {
  const hash = createHash('sha256');
  let sizeBytes = 0;
  const handle = await fs.promises.open(
    file,
    fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW,
    0o600,
  );
  try {
    const write = async (chunk: Uint8Array) => {
      hash.update(chunk);
      sizeBytes += chunk.byteLength;
      let offset = 0;
      while (offset < chunk.byteLength) {
        const { bytesWritten } = await handle.write(chunk, offset, chunk.byteLength - offset);
        offset += bytesWritten;
      }
    };
    if (typeof body === 'string') await write(Buffer.from(body, 'utf8'));
    else if (body instanceof Uint8Array) await write(body);
    else for await (const chunk of body) await write(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk);
    await handle.sync();
  } finally {
    await handle.close();
  }
  return { sha256: hash.digest('hex'), sizeBytes };
}

/**
 * Passes bytes through, hashing them, and fails the stream when they differ from the metadata. The
 * latest chunk is held back until the next one arrives, and the last one until the digest matched, so
 * a consumer never receives the complete (recorded-length) content of a tampered file: an HTTP client
 * whose response already has a Content-Length sees a short body, never a complete wrong one.
 */
class VerifyingStream extends Transform {
  private readonly hash: Hash = createHash('sha256');
  private seen = 0;
  private held: Buffer | null = null;

  constructor(private readonly meta: ArtifactMetadata) {
    super();
  }

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    this.seen += chunk.length;
    if (this.seen > this.meta.sizeBytes)
      return done(this.mismatch(`more than the recorded ${this.meta.sizeBytes} bytes`));
    this.hash.update(chunk);
    const previous = this.held;
    this.held = chunk;
    done(null, previous ?? undefined);
  }

  override _flush(done: TransformCallback): void {
    if (this.seen !== this.meta.sizeBytes)
      return done(this.mismatch(`${this.seen} bytes instead of the recorded ${this.meta.sizeBytes}`));
    const actual = this.hash.digest('hex');
    if (actual !== this.meta.sha256) return done(this.mismatch(`SHA-256 ${actual} instead of ${this.meta.sha256}`));
    done(null, this.held ?? undefined);
  }

  private mismatch(what: string): ArtifactIntegrityError {
    return new ArtifactIntegrityError(
      `artifact ${this.meta.id} failed integrity verification: the stored content has ${what}`,
      { artifactId: this.meta.id, expectedSha256: this.meta.sha256 },
    );
  }
}

function toMetadata(r: ArtifactRow): ArtifactMetadata {
  return {
    id: r.id,
    tenantId: r.tenant_id,
    ...(r.run_id ? { runId: r.run_id } : {}),
    ...(r.session_id ? { sessionId: r.session_id } : {}),
    ...(r.principal_id ? { principalId: r.principal_id } : {}),
    name: r.name,
    mediaType: r.media_type,
    source: r.source,
    sizeBytes: Number(r.size_bytes),
    sha256: r.sha256,
    createdAt: new Date(r.created_at).toISOString(),
    ...(r.expires_at ? { expiresAt: new Date(r.expires_at).toISOString() } : {}),
  };
}

/** Serializes a put's rename+insert against the sweeper's check+unlink for one storage key. */
async function lockKey(client: PoolClient, key: string): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`artifact:${key}`]);
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
