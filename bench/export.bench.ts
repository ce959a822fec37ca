import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomUUID } from 'node:crypto';
import { loadAgentFiles } from '../src/adapters/config/yaml-agent-catalog';
import { Database } from '../src/adapters/postgres/database';
import { PgEventStore } from '../src/adapters/postgres/event-store/pg-event-store';
import { systemClock } from '../src/adapters/system-clock';
import { AtomicLineFile } from '../src/adapters/trajectory/export-file';
import { TrajectoryExporter } from '../src/adapters/trajectory/exporter';
import { projectRoot } from '../src/config/project-root';
import { PLATFORM_POLICY } from '../src/context/context-builder';
import type { NewEvent } from '../src/domain/events/payloads';
import { openBenchDatabase } from './support/bench-database';
import { measureFor } from './support/measure';
import { formatCount, printTable } from './support/print-table';
import { runLifecycle, sessionCreated } from './support/run-lifecycle';
import { envNumber } from './support/env';

const TENANT = 'bench';
const PRINCIPAL = 'bench-user';

const mib = (bytes: number) => `${(bytes / 1048576).toFixed(1)} MiB`;

/** One stored run with the consent stamp its first start writes (the principal granted consent). */
function consentedRun(n: number): NewEvent[] {
  const events = runLifecycle(n);
  const started = events.findIndex((e) => e.type === 'run.started');
  const runId = events[started].runId ?? null;
  events.splice(started + 1, 0, {
    type: 'run.consent_stamped',
    runId,
    actorType: 'system',
    data: { principalId: PRINCIPAL, trajectoryExport: 'granted', consentVersion: 1 },
  });
  return events;
}

/**
 * `npm run bench -- export`: trajectory export throughput (plan §31, issue 9): runs exported per
 * second over BENCH_EXPORT_RUNS (default 10,000) stored runs — each built from its events, redacted,
 * verified and written as one JSON line — with RSS and heap printed while it streams, to show that
 * memory stays flat (the exporter reads a page of runs at a time and never holds the whole export).
 * Seeding appends whole runs through the event store, 8 sessions concurrently. Target ≥ 500 runs/s.
 */
export async function runExportBench(): Promise<void> {
  const runs = envNumber('BENCH_EXPORT_RUNS', 10_000);
  const bench = await openBenchDatabase((line) => console.error(line));
  const db = new Database(bench.url, 10);
  const store = new PgEventStore(db, systemClock);
  const out = path.join(os.tmpdir(), `agent-export-bench-${process.pid}.jsonl`);
  try {
    await db.query(
      `INSERT INTO trajectory_consents (tenant_id, principal_id, status, version, changed_at, changed_by)
       VALUES ($1, $2, 'granted', 1, now(), 'bench')`,
      [TENANT, PRINCIPAL],
    );
    console.error(`seeding ${formatCount(runs)} runs (whole-run appends, 8 sessions at a time)…`);
    let next = 0;
    const seed = await measureFor(3600, 8, async () => {
      if (next >= runs) return null;
      const first = next;
      const count = Math.min(10, runs - next);
      next += count;
      const sessionId = randomUUID();
      await store.append(sessionId, [sessionCreated(first)], { tenantId: TENANT });
      for (let i = 0; i < count; i++) await store.append(sessionId, consentedRun(first + i), { tenantId: TENANT });
      return count;
    });
    console.error(`seeded ${formatCount(seed.ops)} runs in ${seed.seconds.toFixed(1)} s`);

    const agents = new Map(loadAgentFiles(path.join(projectRoot(), 'config', 'agents')).map((a) => [a.id, a]));
    const exporter = new TrajectoryExporter({
      db,
      systemPrompt: (id) =>
        Promise.resolve(
          agents.has(id)
            ? `${PLATFORM_POLICY}\n\n# Agent instructions\n${agents.get(id)?.instructions.trim() ?? ''}`
            : null,
        ),
    });
    global.gc?.();
    const samples: { exported: number; rss: number; heap: number }[] = [];
    const sample = (exported: number) => {
      const m = process.memoryUsage();
      samples.push({ exported, rss: m.rss, heap: m.heapUsed });
    };
    sample(0);
    let lastPrinted = 0;
    const file = AtomicLineFile.open(out);
    const started = performance.now();
    const { summary } = await exporter.export(TENANT, { status: 'all' }, file.write, (p) => {
      if (p.exported - lastPrinted >= 1000 || p.exported === runs) {
        lastPrinted = p.exported;
        sample(p.exported);
        const s = samples[samples.length - 1];
        console.error(`  exported ${formatCount(p.exported)} · rss ${mib(s.rss)} · heap ${mib(s.heap)}`);
      }
    });
    await file.commit();
    const seconds = (performance.now() - started) / 1000;
    sample(summary.exported);
    const size = fs.statSync(out).size;
    const after = samples.slice(1);
    const rss = after.map((s) => s.rss);
    const heap = after.map((s) => s.heap);

    console.log(`\nagent-core trajectory export benchmark: ${bench.server}, ${os.cpus().length} CPUs\n`);
    printTable(
      [{ header: 'measure' }, { header: 'value', right: true }],
      [
        ['runs stored', formatCount(runs)],
        ['runs exported', formatCount(summary.exported)],
        ['skipped without consent', formatCount(summary.skippedNoConsent)],
        ['export time', `${seconds.toFixed(2)} s`],
        ['runs exported per second', `${formatCount(Math.round(summary.exported / seconds))} (target ≥ 500)`],
        ['output', `${mib(size)} (${formatCount(Math.round(size / Math.max(1, summary.exported)))} bytes/run)`],
        [
          'RSS before / min / max during',
          `${mib(samples[0].rss)} / ${mib(Math.min(...rss))} / ${mib(Math.max(...rss))}`,
        ],
        [
          'heap before / min / max during',
          `${mib(samples[0].heap)} / ${mib(Math.min(...heap))} / ${mib(Math.max(...heap))}`,
        ],
      ],
    );
    console.log(
      '\nMemory is flat when RSS and heap during the export stay within a band that does not grow with the runs\n' +
        'exported (one page of 250 runs, plus one read ahead, is held at a time; the file is written as it goes).',
    );
  } finally {
    fs.rmSync(out, { force: true });
    await db.close();
    await bench.close();
  }
}
