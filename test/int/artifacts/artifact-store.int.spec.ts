import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FsArtifactStore, storageKeyFor } from '../../../src/adapters/artifacts/fs-artifact-store';
import type { ArtifactStore } from '../../../src/ports/artifact-store';
import { createTestDb, type TestDb } from '../../support/test-db';
import { createTestPlatform, type TestPlatform } from '../../support/platform';
import { artifactStoreContract, base, chunked, sha } from '../../support/artifact-store-contract';

let tdb: TestDb;
let t: TestPlatform;
let root: string;
let store: ArtifactStore;

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
  artifactStoreContract(() => ({
    t,
    store,
    blobKeys: async () => blobFiles(),
    writeBlob: async (key, bytes) => fs.writeFileSync(path.join(root, key), bytes),
    readBlob: async (key) => fs.readFileSync(path.join(root, key)),
    removeBlob: async (key) => fs.rmSync(path.join(root, key)),
  }));

  it('keeps blobs private to this user (0600), leaves no temp file and never shows the storage path', async () => {
    const bytes = Buffer.from('private bytes');
    const meta = await store.put(base, chunked(bytes, 4));
    expect(JSON.stringify(meta)).not.toContain(root);
    const stored = path.join(root, storageKeyFor(meta.sha256));
    expect(sha(fs.readFileSync(stored))).toBe(meta.sha256);
    expect(fs.statSync(stored).mode & 0o077).toBe(0);
    expect(fs.readdirSync(path.join(root, 'tmp'))).toEqual([]);
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
});
