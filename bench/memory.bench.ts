import { loadSettings } from '../src/config/settings';
import { createPlatform, type Platform } from '../src/composition/platform';
import { takeSnapshot } from '../src/context/memory-section';
import type { Principal } from '../src/domain/principal';
import { envNumber } from './support/env';
import { openBenchDatabase } from './support/bench-database';
import { printTable } from './support/print-table';

/**
 * `npm run bench -- memory` (issue 30): M memories over P principals of one tenant, written through
 * the memory store (the memory decider, events, the projection), then one principal's recall — the
 * SQL hybrid query, full text plus trigram — p50/p95 over 200 queries (target p95 ≤ 20 ms), and what
 * a session's snapshot costs a run's first context build (the same store read plus rendering,
 * target ≤ 2 ms). Knobs: BENCH_MEMORIES (default 100,000), BENCH_PRINCIPALS (default 1,000).
 */
const SUBJECTS = ['team', 'time zone', 'editor', 'project', 'city', 'language', 'manager', 'dog', 'car', 'sport'];
const VALUES = ['Blue Falcon', 'Europe/Paris', 'vim', 'Apollo', 'Lyon', 'French', 'Ada', 'Rex', 'a red Fiat', 'tennis'];

const principalOf = (p: number): Principal => ({
  tenantId: 'bench',
  principalId: `user-${p}`,
  roles: new Set(),
  scopes: new Set(['memory.read', 'memory.write']),
});

export async function runMemoryBench(): Promise<void> {
  const total = envNumber('BENCH_MEMORIES', 100_000);
  const principals = envNumber('BENCH_PRINCIPALS', 1_000);
  const bench = await openBenchDatabase((line) => console.error(line));
  const platform = await createPlatform(
    { ...loadSettings(), fakeModelLatencyMs: 0 },
    { service: 'bench', databaseUrl: bench.url, quiet: true, migrate: false, poolSize: 20 },
  );
  try {
    const writeSeconds = await write(platform, total, principals);
    await platform.db.query('ANALYZE memory_records');
    const recall = await timed(200, (i) =>
      platform.memories.recall({
        tenantId: 'bench',
        principalId: `user-${i % principals}`,
        agentId: 'general',
        query: `what is my ${SUBJECTS[i % SUBJECTS.length]}`,
        limit: 5,
        includeTentative: false,
        requireMatch: true,
        nowIso: new Date().toISOString(),
      }),
    );
    let n = 0;
    const snapshot = await timed(200, (i) =>
      takeSnapshot(
        { store: platform.memories, items: 20 },
        {
          tenantId: 'bench',
          principalId: `user-${i % principals}`,
          agentId: 'general',
          runId: '00000000-0000-4000-8000-000000000001',
          query: 'hello there',
          nowIso: new Date().toISOString(),
          newId: () => `00000000-0000-4000-8000-${String(++n).padStart(12, '0')}`,
        },
      ),
    );
    printTable(
      [{ header: 'measure' }, { header: 'value', right: true }],
      [
        [`${total} memories over ${principals} principals written`, `${writeSeconds.toFixed(1)} s`],
        ['recall, one principal (200 queries): p50', `${recall.p50.toFixed(2)} ms`],
        ['recall p95', `${recall.p95.toFixed(2)} ms`],
        ['session snapshot (20 items, 200 sessions): p50', `${snapshot.p50.toFixed(2)} ms`],
        ['snapshot p95', `${snapshot.p95.toFixed(2)} ms`],
      ],
    );
  } finally {
    await platform.close();
    await bench.close();
  }
}

/** Writes `total` memories, round-robin over the principals, 8 writers at a time. */
async function write(platform: Platform, total: number, principals: number): Promise<number> {
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      for (let i = next++; i < total; i = next++) {
        const k = Math.floor(i / principals);
        await platform.memories.remember({
          principal: principalOf(i % principals),
          actor: { actorType: 'worker' },
          candidate: {
            statement: `my ${SUBJECTS[k % SUBJECTS.length]} is ${VALUES[(k + i) % VALUES.length]} (note ${k})`,
            scope: 'principal',
            agentId: 'general',
            sensitivity: 'personal',
            trust: 'user',
            attribution: null,
            sourceEvents: [],
            sourceSessionId: null,
            sourceRunId: null,
            invocationId: null,
          },
        });
        if (i > 0 && i % 10_000 === 0) console.error(`${i} memories written…`);
      }
    }),
  );
  return (performance.now() - started) / 1000;
}

async function timed(rounds: number, f: (i: number) => Promise<unknown>): Promise<{ p50: number; p95: number }> {
  for (let i = 0; i < 10; i++) await f(i); // warm-up: prepared plans, caches
  const ms: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const s = performance.now();
    await f(i);
    ms.push(performance.now() - s);
  }
  ms.sort((a, b) => a - b);
  return { p50: ms[Math.floor(rounds * 0.5)], p95: ms[Math.floor(rounds * 0.95)] };
}
