import { createHash, type Hash } from 'node:crypto';
import * as fs from 'node:fs';
import { Transform, type TransformCallback } from 'node:stream';
import type { PoolClient } from 'pg';
import { ArtifactIntegrityError, isValidArtifactName, MEDIA_TYPE_PATTERN } from '../../domain/artifacts';
import { ValidationError } from '../../domain/errors';
import { artifactDecider } from '../../domain/deciders/artifact';
import { eventsOrThrow } from '../../domain/deciders/decider';
import type { ArtifactMetadata, ArtifactPut } from '../../ports/artifact-store';
import type { EventStore } from '../../ports/event-store';
import type { Database, Queryable } from '../postgres';

/**
 * What every content-addressed artifact store shares, whatever holds the bytes (a directory, an S3
 * bucket): the metadata rows in `artifacts`, the storage key scheme, the checks on a put, the
 * verifying read stream and the `artifact.created` event (ADR 0019, ADR 0045).
 */

export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** The only storage keys a store writes or will open: derived from the SHA-256, relative to the root. */
export const STORAGE_KEY = /^sha256\/[0-9a-f]{2}\/[0-9a-f]{2}\/[0-9a-f]{64}$/;
export const BLOB_DIR = 'sha256';

export interface ArtifactRow {
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

/** Refuses a put before any byte is written: a path-like name, a bad media type, ids that are not UUIDs. */
export function checkPut(input: ArtifactPut): void {
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

/** The metadata of a put that stored `sha256`/`sizeBytes` under the new id. */
export function metadataOf(
  input: ArtifactPut,
  id: string,
  createdAt: string,
  sha256: string,
  sizeBytes: number,
): ArtifactMetadata {
  return {
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
}

/** Inserts the metadata row of `meta`, stored under `key`. */
export async function insertRow(q: Queryable, meta: ArtifactMetadata, key: string): Promise<void> {
  await q.query(
    `INSERT INTO artifacts (id, tenant_id, principal_id, session_id, run_id, name, media_type, storage_key,
       sha256, size_bytes, metadata, source, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, '{}', $11, $12, $13)`,
    [
      meta.id,
      meta.tenantId,
      meta.principalId ?? null,
      meta.sessionId ?? null,
      meta.runId ?? null,
      meta.name,
      meta.mediaType,
      key,
      meta.sha256,
      meta.sizeBytes,
      meta.source,
      meta.createdAt,
      meta.expiresAt ?? null,
    ],
  );
}

/** A tenant's unexpired row for `artifactId`, or undefined (also for a malformed id). */
export async function findRow(
  db: Database,
  tenantId: string,
  artifactId: string,
  nowIso: string,
): Promise<ArtifactRow | undefined> {
  if (!UUID.test(artifactId)) return undefined;
  const res = await db.query<ArtifactRow>(
    `SELECT * FROM artifacts WHERE id = $1 AND tenant_id = $2 AND (expires_at IS NULL OR expires_at > $3)`,
    [artifactId, tenantId, nowIso],
  );
  return res.rows[0];
}

/** A run's unexpired artifacts, oldest first. */
export async function rowsForRun(
  db: Database,
  tenantId: string,
  runId: string,
  nowIso: string,
): Promise<ArtifactMetadata[]> {
  if (!UUID.test(runId)) return [];
  const res = await db.query<ArtifactRow>(
    `SELECT * FROM artifacts WHERE tenant_id = $1 AND run_id = $2 AND (expires_at IS NULL OR expires_at > $3)
     ORDER BY created_at, id`,
    [tenantId, runId, nowIso],
  );
  return res.rows.map(toMetadata);
}

/** Deletes expired rows; returns the distinct storage keys they referenced and how many rows went. */
export async function deleteExpiredRows(db: Database, nowIso: string): Promise<{ keys: Set<string>; count: number }> {
  const deleted = await db.query<{ storage_key: string }>(
    `DELETE FROM artifacts WHERE expires_at IS NOT NULL AND expires_at <= $1 RETURNING storage_key`,
    [nowIso],
  );
  return { keys: new Set(deleted.rows.map((r) => r.storage_key)), count: deleted.rowCount ?? 0 };
}

/** True when some row still names `key` (read under the key's lock). */
export async function isReferenced(client: PoolClient, key: string): Promise<boolean> {
  const used = await client.query('SELECT 1 FROM artifacts WHERE storage_key = $1 LIMIT 1', [key]);
  return (used.rowCount ?? 0) > 0;
}

export function toMetadata(r: ArtifactRow): ArtifactMetadata {
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

/** Serializes a put's store+insert against the sweeper's check+delete for one storage key. */
export async function lockKey(client: PoolClient, key: string): Promise<void> {
  await client.query('SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [`artifact:${key}`]);
}

/**
 * `artifact.created` on the run's session (plan §6.8) — ids, name, type, size and checksum; never a
 * path. If the append fails the metadata row goes too (no event, no artifact); the blob is left to
 * the sweeper, since another row may share it.
 */
export async function recordCreated(db: Database, events: EventStore | undefined, meta: ArtifactMetadata) {
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
    await db.query('DELETE FROM artifacts WHERE id = $1', [meta.id]).catch(() => undefined);
    throw e;
  }
}

/** The body of a put as a sequence of byte chunks (strings are UTF-8). */
export async function* chunksOf(body: AsyncIterable<Uint8Array> | Uint8Array | string): AsyncIterable<Uint8Array> {
  if (typeof body === 'string') yield Buffer.from(body, 'utf8');
  else if (body instanceof Uint8Array) yield body;
  else for await (const chunk of body) yield typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
}

/** Writes `body` to a new file (0600, never following a link), hashing and counting it; fsyncs it. */
export async function writeHashed(
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
    for await (const chunk of chunksOf(body)) await write(chunk);
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
export class VerifyingStream extends Transform {
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

/** The error a read of a missing blob gets (the same words in every store). */
export function missingContent(artifactId: string): ArtifactIntegrityError {
  return new ArtifactIntegrityError(`artifact ${artifactId} failed verification: its stored content is missing`, {
    artifactId,
  });
}
