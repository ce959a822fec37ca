import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FsArtifactStore, storageKeyFor } from '../../../src/adapters/artifacts/fs-artifact-store';
import type { ArtifactStore } from '../../../src/ports/artifact-store';
import { ArtifactIntegrityError } from '../../../src/domain/artifacts';
import { ValidationError } from '../../../src/domain/errors';
import type { ArtifactPut } from '../../../src/ports/artifact-store';
import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform, type TestPlatform } from '../../support/platform';

let tdb: TestDb;
let t: TestPlatform;
let root: string;
let store: ArtifactStore;

const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');
const base: ArtifactPut = {
  tenantId: 'tenant-a',
  name: 'out.bin',
  mediaType: 'application/octet-stream',
  source: 'test',
};

async function readAll(stream: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(Buffer.from(c));
  return Buffer.concat(chunks);
}

async function* chunked(buf: Buffer, size: number): AsyncIterable<Uint8Array> {
  for (let i = 0; i < buf.length; i += size) {
    yield buf.subarray(i, i + size);
    await new Promise((r) => setImmediate(r));
  }
}

function blobFiles(): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.existsSync(d) ? fs.readdirSync(d, { withFileTypes: true }) : []) {
      if (e.isDirectory()) walk(path.join(d, e.name));
      else out.push(path.relative(root, path.join(d, e.name)));
    }
  };
  walk(path.join(root, 'sha256'));
  return out.sort();
}

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-artifacts-'));
  tdb = await createTestDb();
  t = await createTestPlatform(tdb.url, { artifactDir: root });
  store = t.platform.artifacts;
});
afterAll(async () => {
  await t.close();
  await tdb.drop();
  fs.rmSync(root, { recursive: true, force: true });
});

describe('the filesystem artifact store', () => {
  it('hashes a stream on the way in, stores it under a SHA-256-derived key, and streams it back verified', async () => {
    const bytes = randomBytes(3 * 1024 * 1024 + 17);
    const meta = await store.put(base, chunked(bytes, 64 * 1024));
    expect(meta).toMatchObject({ tenantId: 'tenant-a', name: 'out.bin', sizeBytes: bytes.length, sha256: sha(bytes) });
    expect(meta.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(JSON.stringify(meta)).not.toContain(root);
    const stored = path.join(root, storageKeyFor(meta.sha256));
    expect(fs.readFileSync(stored).equals(bytes)).toBe(true);
    expect(fs.statSync(stored).mode & 0o077).toBe(0);
    expect(fs.readdirSync(path.join(root, 'tmp'))).toEqual([]);

    const row = await t.platform.db.query<{ storage_key: string }>('SELECT storage_key FROM artifacts WHERE id = $1', [
      meta.id,
    ]);
    expect(row.rows[0].storage_key).toBe(`sha256/${meta.sha256.slice(0, 2)}/${meta.sha256.slice(2, 4)}/${meta.sha256}`);
    expect(await store.get('tenant-a', meta.id)).toEqual(meta);
    const content = await store.open('tenant-a', meta.id);
    expect(sha(await readAll(content!.stream))).toBe(meta.sha256);
  });

  it('stores identical content once, whatever the artifact, and accepts strings and byte arrays', async () => {
    const before = blobFiles().length;
    const a = await store.put({ ...base, name: 'a.txt', mediaType: 'text/plain' }, 'same bytes');
    const b = await store.put(
      { ...base, tenantId: 'tenant-b', name: 'b.txt', mediaType: 'text/plain' },
      Buffer.from('same bytes'),
    );
    expect(a.id).not.toBe(b.id);
    expect(a.sha256).toBe(b.sha256);
    expect(a.sha256).toBe(sha('same bytes'));
    expect(blobFiles().length).toBe(before + 1);
    expect((await readAll((await store.open('tenant-b', b.id))!.stream)).toString()).toBe('same bytes');
  });

  it('fails the read stream with a clear integrity error when the stored bytes were tampered with', async () => {
    const meta = await store.put({ ...base, name: 'tamper.txt' }, 'the original content');
    const file = path.join(root, storageKeyFor(meta.sha256));
    fs.writeFileSync(file, 'the 0riginal content'); // same length, one byte changed
    const content = await store.open('tenant-a', meta.id);
    const err = await readAll(content!.stream).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ArtifactIntegrityError);
    expect((err as ArtifactIntegrityError).code).toBe('artifact_integrity_error');
    expect((err as Error).message).toBe(
      `artifact ${meta.id} failed integrity verification: the stored content has SHA-256 ${sha('the 0riginal content')} instead of ${meta.sha256}`,
    );
    expect((err as Error).message).not.toContain(root);

    fs.appendFileSync(file, ' and more');
    const longer = await readAll((await store.open('tenant-a', meta.id))!.stream).catch((e: Error) => e);
    expect((longer as Error).message).toMatch(
      /failed integrity verification: the stored content has more than the recorded 20 bytes/,
    );

    fs.rmSync(file);
    await expect(store.open('tenant-a', meta.id)).rejects.toThrow(
      `artifact ${meta.id} failed verification: its stored content is missing`,
    );
    // Storing the same content again repairs the blob for every artifact that shares it.
    await store.put({ ...base, name: 'again.txt' }, 'the original content');
    expect((await readAll((await store.open('tenant-a', meta.id))!.stream)).toString()).toBe('the original content');
  });

  it("never shows one tenant another tenant's artifact", async () => {
    const meta = await store.put({ ...base, name: 'private.txt' }, 'tenant a only');
    expect(await store.get('tenant-b', meta.id)).toBeUndefined();
    expect(await store.open('tenant-b', meta.id)).toBeUndefined();
    expect(await store.get('tenant-a', 'not-a-uuid')).toBeUndefined();
    expect(await store.get('tenant-a', '00000000-0000-4000-8000-000000000000')).toBeUndefined();
  });

  it('refuses a path-like name or a bad media type before writing anything', async () => {
    const rows = async () =>
      Number((await t.platform.db.query<{ n: string }>('SELECT count(*)::text AS n FROM artifacts')).rows[0].n);
    const n = await rows();
    const blobs = blobFiles();
    await expect(store.put({ ...base, name: '../../etc/passwd' }, 'x')).rejects.toThrow(ValidationError);
    await expect(store.put({ ...base, name: 'a/b' }, 'x')).rejects.toThrow(/base name/);
    await expect(store.put({ ...base, mediaType: 'not a type' }, 'x')).rejects.toThrow(/is not a media type/);
    await expect(store.put({ ...base, runId: '00000000-0000-4000-8000-000000000000' }, 'x')).rejects.toThrow(
      /must name the run's session/,
    );
    expect(await rows()).toBe(n);
    expect(blobFiles()).toEqual(blobs);
    expect(fs.readdirSync(path.join(root, 'tmp'))).toEqual([]);
  });

  it('sweeps expired artifacts, deletes blobs nothing references any more and keeps shared ones', async () => {
    const now = Date.now();
    const soon = new Date(now + 60_000).toISOString();
    const gone = await store.put({ ...base, name: 'gone.txt', expiresAt: soon }, 'expires alone');
    const shared = await store.put({ ...base, name: 'shared-1.txt', expiresAt: soon }, 'expires but shared');
    const keeper = await store.put({ ...base, name: 'shared-2.txt' }, 'expires but shared');
    expect(await store.get('tenant-a', gone.id)).toBeDefined();

    expect(await store.sweepExpired(new Date(now).toISOString())).toBe(0);
    expect(await store.sweepExpired(new Date(now + 61_000).toISOString())).toBe(2);
    expect(
      await t.platform.db.query('SELECT 1 FROM artifacts WHERE id = ANY($1)', [[gone.id, shared.id]]),
    ).toMatchObject({
      rowCount: 0,
    });
    expect(fs.existsSync(path.join(root, storageKeyFor(gone.sha256)))).toBe(false);
    expect(fs.existsSync(path.join(root, storageKeyFor(keeper.sha256)))).toBe(true);
    expect((await readAll((await store.open('tenant-a', keeper.id))!.stream)).toString()).toBe('expires but shared');
  });

  it('treats an artifact past its expiry as gone even before the sweeper runs', async () => {
    const meta = await store.put(
      { ...base, name: 'past.txt', expiresAt: new Date(Date.now() - 1000).toISOString() },
      'old',
    );
    expect(await store.get('tenant-a', meta.id)).toBeUndefined();
    expect(await store.open('tenant-a', meta.id)).toBeUndefined();
  });

  it('removes orphaned blobs and stale temp files past the grace period, never referenced ones', async () => {
    const sweeper = new FsArtifactStore({
      db: t.platform.db,
      root,
      clock: t.platform.clock,
      ids: t.platform.ids,
      log: t.platform.log,
      orphanGraceMs: 1000,
    });
    const orphanSha = sha('orphan');
    const orphan = path.join(root, storageKeyFor(orphanSha));
    fs.mkdirSync(path.dirname(orphan), { recursive: true });
    fs.writeFileSync(orphan, 'orphan');
    const tmp = path.join(root, 'tmp', 'crashed.part');
    fs.writeFileSync(tmp, 'half');
    const referenced = await store.put({ ...base, name: 'kept.txt' }, 'kept forever');
    const keptFile = path.join(root, storageKeyFor(referenced.sha256));
    const old = new Date(Date.now() - 10_000);
    for (const f of [orphan, tmp, keptFile]) fs.utimesSync(f, old, old);

    await sweeper.sweepExpired(new Date().toISOString());
    expect(fs.existsSync(orphan)).toBe(false);
    expect(fs.existsSync(tmp)).toBe(false);
    expect(fs.existsSync(keptFile)).toBe(true);
  });

  it('is swept by every worker on its housekeeping schedule (AGENT_ARTIFACT_SWEEP_SECONDS)', async () => {
    const w = await createTestPlatform(tdb.url, { artifactDir: root, artifactSweepSeconds: 1 });
    const worker = w.platform.createWorker({ concurrency: 1, pollIntervalMs: 200, drainMs: 1000 });
    try {
      const meta = await store.put(
        { ...base, name: 'swept.txt', expiresAt: new Date(Date.now() - 1000).toISOString() },
        'swept by the worker',
      );
      const blob = path.join(root, storageKeyFor(meta.sha256));
      await worker.start();
      const end = Date.now() + 15_000;
      // The sweep removes the metadata row first and the unreferenced blob right after it.
      const swept = async () =>
        (await t.platform.db.query('SELECT 1 FROM artifacts WHERE id = $1', [meta.id])).rowCount === 0 &&
        !fs.existsSync(blob);
      while (!(await swept())) {
        if (Date.now() > end) throw new Error('the worker did not sweep the expired artifact and its blob');
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(fs.existsSync(blob)).toBe(false);
    } finally {
      await worker.stop();
      await w.close();
    }
  });

  it('records artifact.created on the run’s session — ids, name, type, size and checksum, never a path', async () => {
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
    expect(JSON.stringify(created[0])).not.toMatch(/sha256\/|artifacts\//);

    // A session of another tenant: the event is refused, and no metadata is left behind.
    const before = await t.platform.db.query('SELECT id FROM artifacts');
    await expect(store.put({ ...local, tenantId: 'tenant-a', name: 'wrong.txt' }, 'x')).rejects.toThrow(
      /not found|session/i,
    );
    expect((await t.platform.db.query('SELECT id FROM artifacts')).rowCount).toBe(before.rowCount);
  });
});
