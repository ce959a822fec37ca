import { createHash, randomBytes } from 'node:crypto';
import { storageKeyFor } from '../../src/adapters/artifacts/artifact-records';
import { ArtifactIntegrityError } from '../../src/domain/artifacts';
import { ValidationError } from '../../src/domain/errors';
import type { ArtifactPut, ArtifactStore } from '../../src/ports/artifact-store';
import type { TestPlatform } from './platform';

/**
 * What every ArtifactStore adapter must do, whatever holds the bytes (ADR 0019, ADR 0045). Each
 * adapter's spec file builds a platform wired to it and passes the hooks that reach its storage
 * directly (to count, tamper with or remove blobs behind the store's back).
 */
export interface ArtifactStoreUnderTest {
  readonly t: TestPlatform;
  readonly store: ArtifactStore;
  /** Every stored blob's storage key, sorted. */
  readonly blobKeys: () => Promise<string[]>;
  /** Overwrites the blob at `key` (tampering). */
  readonly writeBlob: (key: string, bytes: Buffer) => Promise<void>;
  readonly readBlob: (key: string) => Promise<Buffer>;
  readonly removeBlob: (key: string) => Promise<void>;
}

export const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
export const base: ArtifactPut = {
  tenantId: 'tenant-a',
  name: 'out.bin',
  mediaType: 'application/octet-stream',
  source: 'test',
};

export async function readAll(stream: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks);
}

export async function* chunked(buf: Buffer, size: number): AsyncIterable<Uint8Array> {
  for (let i = 0; i < buf.length; i += size) {
    yield buf.subarray(i, i + size);
    await new Promise((r) => setImmediate(r));
  }
}

/** Registers the shared behavioural tests; `get` is called inside each test (after beforeAll). */
export function artifactStoreContract(get: () => ArtifactStoreUnderTest): void {
  const rows = async () =>
    Number((await get().t.platform.db.query<{ n: string }>('SELECT count(*)::text AS n FROM artifacts')).rows[0].n);

  it('hashes a stream on the way in, stores it under a SHA-256-derived key, and streams it back verified', async () => {
    const { store, t, readBlob } = get();
    const bytes = randomBytes(3 * 1024 * 1024 + 17);
    const meta = await store.put(base, chunked(bytes, 64 * 1024));
    expect(meta).toMatchObject({ tenantId: 'tenant-a', name: 'out.bin', sizeBytes: bytes.length, sha256: sha(bytes) });
    expect(meta.id).toMatch(/^[0-9a-f-]{36}$/);
    const row = await t.platform.db.query<{ storage_key: string }>('SELECT storage_key FROM artifacts WHERE id = $1', [
      meta.id,
    ]);
    expect(row.rows[0].storage_key).toBe(storageKeyFor(meta.sha256));
    expect((await readBlob(storageKeyFor(meta.sha256))).equals(bytes)).toBe(true);
    expect(await store.get('tenant-a', meta.id)).toEqual(meta);
    const content = await store.open('tenant-a', meta.id);
    expect(sha(await readAll(content!.stream))).toBe(meta.sha256);
  });

  it('stores identical content once, whatever the artifact, and accepts strings and byte arrays', async () => {
    const { store, blobKeys } = get();
    const before = (await blobKeys()).length;
    const a = await store.put({ ...base, name: 'a.txt', mediaType: 'text/plain' }, 'same bytes');
    const b = await store.put(
      { ...base, tenantId: 'tenant-b', name: 'b.txt', mediaType: 'text/plain' },
      Buffer.from('same bytes'),
    );
    expect(a.id).not.toBe(b.id);
    expect([a.sha256, b.sha256]).toEqual([sha('same bytes'), sha('same bytes')]);
    expect((await blobKeys()).length).toBe(before + 1);
    expect((await readAll((await store.open('tenant-b', b.id))!.stream)).toString()).toBe('same bytes');
  });

  it('fails the read stream with a clear integrity error when the stored bytes were tampered with', async () => {
    const { store, writeBlob, removeBlob } = get();
    const meta = await store.put({ ...base, name: 'tamper.txt' }, 'the original content');
    const key = storageKeyFor(meta.sha256);
    await writeBlob(key, Buffer.from('the 0riginal content')); // same length, one byte changed
    const err = await readAll((await store.open('tenant-a', meta.id))!.stream).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ArtifactIntegrityError);
    expect((err as ArtifactIntegrityError).code).toBe('artifact_integrity_error');
    expect((err as Error).message).toBe(
      `artifact ${meta.id} failed integrity verification: the stored content has SHA-256 ${sha('the 0riginal content')} instead of ${meta.sha256}`,
    );
    await writeBlob(key, Buffer.from('the original content and more'));
    const longer = await readAll((await store.open('tenant-a', meta.id))!.stream).catch((e: Error) => e);
    expect((longer as Error).message).toMatch(/the stored content has more than the recorded 20 bytes/);

    await removeBlob(key);
    await expect(store.open('tenant-a', meta.id)).rejects.toThrow(
      `artifact ${meta.id} failed verification: its stored content is missing`,
    );
    // Storing the same content again repairs the blob for every artifact that shares it.
    await store.put({ ...base, name: 'again.txt' }, 'the original content');
    expect((await readAll((await store.open('tenant-a', meta.id))!.stream)).toString()).toBe('the original content');
  });

  it("never shows one tenant another tenant's artifact", async () => {
    const { store } = get();
    const meta = await store.put({ ...base, name: 'private.txt' }, 'tenant a only');
    expect(await store.get('tenant-b', meta.id)).toBeUndefined();
    expect(await store.open('tenant-b', meta.id)).toBeUndefined();
    expect(await store.get('tenant-a', 'not-a-uuid')).toBeUndefined();
    expect(await store.get('tenant-a', '00000000-0000-4000-8000-000000000000')).toBeUndefined();
  });

  it('refuses a path-like name or a bad media type before writing anything', async () => {
    const { store, blobKeys } = get();
    const n = await rows();
    const blobs = await blobKeys();
    await expect(store.put({ ...base, name: '../../etc/passwd' }, 'x')).rejects.toThrow(ValidationError);
    await expect(store.put({ ...base, name: 'a/b' }, 'x')).rejects.toThrow(/base name/);
    await expect(store.put({ ...base, mediaType: 'not a type' }, 'x')).rejects.toThrow(/is not a media type/);
    await expect(store.put({ ...base, runId: '00000000-0000-4000-8000-000000000000' }, 'x')).rejects.toThrow(
      /must name the run's session/,
    );
    expect(await rows()).toBe(n);
    expect(await blobKeys()).toEqual(blobs);
  });

  it('sweeps expired artifacts, deletes blobs nothing references any more and keeps shared ones', async () => {
    const { store, t, blobKeys } = get();
    const now = Date.now();
    const soon = new Date(now + 60_000).toISOString();
    const gone = await store.put({ ...base, name: 'gone.txt', expiresAt: soon }, `expires alone ${now}`);
    const shared = await store.put({ ...base, name: 'shared-1.txt', expiresAt: soon }, `expires but shared ${now}`);
    const keeper = await store.put({ ...base, name: 'shared-2.txt' }, `expires but shared ${now}`);
    expect(await store.sweepExpired(new Date(now).toISOString())).toBe(0);
    expect(await store.sweepExpired(new Date(now + 61_000).toISOString())).toBe(2);
    expect(
      await t.platform.db.query('SELECT 1 FROM artifacts WHERE id = ANY($1)', [[gone.id, shared.id]]),
    ).toMatchObject({ rowCount: 0 });
    const keys = await blobKeys();
    expect(keys).not.toContain(storageKeyFor(gone.sha256));
    expect(keys).toContain(storageKeyFor(keeper.sha256));
    expect((await readAll((await store.open('tenant-a', keeper.id))!.stream)).toString()).toBe(
      `expires but shared ${now}`,
    );
  });

  it('treats an artifact past its expiry as gone even before the sweeper runs', async () => {
    const { store } = get();
    const past = new Date(Date.now() - 1000).toISOString();
    const meta = await store.put({ ...base, name: 'past.txt', expiresAt: past }, 'old');
    expect(await store.get('tenant-a', meta.id)).toBeUndefined();
    expect(await store.open('tenant-a', meta.id)).toBeUndefined();
  });

  it('records artifact.created on the run’s session — ids, name, type, size and checksum, never a path', async () => {
    const { store, t } = get();
    const { runId, sessionId } = await t.submit('hello'); // queued; no worker runs here
    const local = { ...base, tenantId: 'local', runId, sessionId, principalId: 'local-user' };
    const meta = await store.put({ ...local, name: 'run.txt', mediaType: 'text/plain' }, 'of a run');
    expect(await store.listForRun('local', runId)).toEqual([meta]);
    expect(await store.listForRun('tenant-a', runId)).toEqual([]);
    const created = (await t.events(runId)).filter((e) => e.type === 'artifact.created');
    expect(created).toHaveLength(1);
    expect(created[0]).toMatchObject({ runId, schemaVersion: 2, actorType: 'system' });
    expect(created[0].data).toEqual({
      artifactId: meta.id,
      name: 'run.txt',
      mediaType: 'text/plain',
      sha256: sha('of a run'),
      sizeBytes: 8,
      source: 'test',
      expiresAt: null,
    });
    expect(JSON.stringify(created[0])).not.toMatch(/sha256\/|artifacts\/|s3:/);
    // A session of another tenant: the event is refused, and no metadata is left behind.
    const n = await rows();
    await expect(store.put({ ...local, tenantId: 'tenant-a', name: 'wrong.txt' }, 'x')).rejects.toThrow(
      /not found|session/i,
    );
    expect(await rows()).toBe(n);
  });
}
