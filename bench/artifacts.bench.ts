import { createHash, randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { FsArtifactStore } from '../src/adapters/artifacts/fs-artifact-store';
import { silentLogger } from '../src/adapters/logging/pino-logger';
import { Database } from '../src/adapters/postgres/database';
import { randomIds, systemClock } from '../src/adapters/system-clock';
import { openBenchDatabase } from './support/bench-database';
import { formatCount, printTable } from './support/print-table';

const TENANT = 'bench';

/** Yields `total` bytes in 64 KiB chunks without holding them (a producer that streams). */
async function* stream(total: number, chunk: Buffer): AsyncIterable<Uint8Array> {
  for (let sent = 0; sent < total; sent += chunk.length) yield chunk.subarray(0, Math.min(chunk.length, total - sent));
}

async function drain(s: AsyncIterable<Uint8Array>): Promise<number> {
  let n = 0;
  for await (const c of s) n += c.length;
  return n;
}

/** Plain filesystem baseline for the same bytes: write + fsync, then read + SHA-256. */
async function baseline(dir: string, total: number, chunk: Buffer): Promise<{ put: number; read: number }> {
  const file = path.join(dir, `baseline-${randomIds.uuid()}`);
  const t0 = performance.now();
  const h = await fs.promises.open(file, 'w');
  const hash = createHash('sha256');
  for await (const c of stream(total, chunk)) {
    hash.update(c);
    await h.write(c);
  }
  await h.sync();
  await h.close();
  hash.digest();
  const t1 = performance.now();
  const r = createHash('sha256');
  for await (const c of fs.createReadStream(file)) r.update(c as Buffer);
  r.digest();
  const t2 = performance.now();
  await fs.promises.rm(file);
  return { put: t1 - t0, read: t2 - t1 };
}

/**
 * `npm run bench -- artifacts`: the filesystem artifact store (issue 8) — puts per second for small
 * artifacts (hash, temp file, fsync, rename and metadata row each), and MiB/s for large ones streamed
 * in and verified out, beside a plain write+fsync / read+SHA-256 of the same bytes; plus the RSS
 * growth while one 256 MiB artifact streams in and out (it must stay flat: nothing is held whole).
 */
export async function runArtifactsBench(): Promise<void> {
  const bench = await openBenchDatabase((line) => console.error(line));
  const db = new Database(bench.url, 10);
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'agent-artifacts-bench-'));
  const store = new FsArtifactStore({ db, root, clock: systemClock, ids: randomIds, log: silentLogger });
  const chunk = randomBytes(64 * 1024);
  const rows: string[][] = [];
  try {
    for (const [label, size, count] of [
      ['1 KiB', 1024, 500],
      ['1 MiB', 1024 * 1024, 50],
      ['64 MiB', 64 * 1024 * 1024, 3],
    ] as const) {
      let putMs = 0;
      let readMs = 0;
      let basePut = 0;
      let baseRead = 0;
      for (let i = 0; i < count; i++) {
        // Distinct content each time (no dedup shortcut): the first 8 bytes carry the index.
        const first = Buffer.from(chunk);
        first.writeUInt32BE(i, 0);
        first.writeUInt32BE(size, 4);
        const body = async function* () {
          yield first.subarray(0, Math.min(first.length, size));
          yield* stream(Math.max(0, size - first.length), chunk);
        };
        const t0 = performance.now();
        const meta = await store.put(
          { tenantId: TENANT, name: 'bench.bin', mediaType: 'application/octet-stream', source: 'bench' },
          body(),
        );
        const t1 = performance.now();
        const content = await store.open(TENANT, meta.id);
        await drain(content!.stream);
        const t2 = performance.now();
        putMs += t1 - t0;
        readMs += t2 - t1;
        const b = await baseline(root, size, chunk);
        basePut += b.put;
        baseRead += b.read;
      }
      const mibs = (ms: number) => ((size * count) / 1048576 / (ms / 1000)).toFixed(1);
      rows.push([
        label,
        String(count),
        formatCount((count * 1000) / putMs),
        mibs(putMs),
        mibs(basePut),
        mibs(readMs),
        mibs(baseRead),
      ]);
    }
    printTable(
      [
        { header: 'size' },
        { header: 'n', right: true },
        { header: 'puts/s', right: true },
        { header: 'put MiB/s', right: true },
        { header: 'fs write+fsync MiB/s', right: true },
        { header: 'open+verify MiB/s', right: true },
        { header: 'fs read+sha256 MiB/s', right: true },
      ],
      rows,
    );

    const big = 256 * 1024 * 1024;
    global.gc?.();
    const before = process.memoryUsage().rss;
    let peak = before;
    const sample = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    const meta = await store.put(
      { tenantId: TENANT, name: 'big.bin', mediaType: 'application/octet-stream', source: 'bench' },
      stream(big, chunk),
    );
    await drain((await store.open(TENANT, meta.id))!.stream);
    clearInterval(sample);
    console.log(
      `256 MiB streamed in and verified out: RSS grew by at most ${((peak - before) / 1048576).toFixed(1)} MiB`,
    );
    console.log(`database: ${bench.server}; store: ${root} (${os.cpus().length} CPUs)`);
  } finally {
    await db.close();
    await bench.close();
    fs.rmSync(root, { recursive: true, force: true });
  }
}
