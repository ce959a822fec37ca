import { Client } from 'pg';
import { openBenchDatabase } from './support/bench-database';
import { median } from './support/block-readings';
import { envNumber } from './support/env';
import { printTable } from './support/print-table';
import { AgentCoreTurn } from './peers/agent-core-turn';
import { DirectTurn } from './peers/direct-turn';
import { lanes } from './peers/lanes';
import { LangGraphTurn } from './peers/langgraph-turn';
import { perTurn, walBetween, walByRelation, walPosition, type WalTally } from './peers/wal-tally';

const QUESTION = 'What is 17 multiplied by 23?';

interface Contender {
  readonly name: string;
  /** `n` turns, `concurrency` at a time. */
  run(n: number, concurrency: number): Promise<void>;
}

/**
 * `npm run bench -- peers` (issue 35): the calculator turn (2 model calls, 1 tool call, the fake
 * model at 0 ms) created, submitted and finished, in one process against one server, three ways:
 * agent-core end to end (claimed through NOTIFY by an idle worker), LangGraph.js 1.7 with its
 * PostgresSaver, and the turn written directly (6 single-statement transactions).
 *  1. Deterministic, the primary figures: WAL record bytes per turn (pg_walinspect, full-page
 *     images apart), heap inserts, HOT and non-HOT updates, B-tree index entries and commits per turn.
 *  2. Turns per second, sequential and 4 concurrent, as the median of interleaved blocks.
 * BENCH_PEERS_BREAKDOWN=1 prints where each contender's WAL went, by relation and record type.
 * Knobs: BENCH_PEERS_WAL_TURNS (default 100), BENCH_PEERS_BLOCKS (default 5), BENCH_PEERS_BLOCK_TURNS (default 40).
 */
export async function runPeersBench(): Promise<void> {
  const walTurns = envNumber('BENCH_PEERS_WAL_TURNS', 100);
  const blocks = envNumber('BENCH_PEERS_BLOCKS', 5);
  const perBlock = envNumber('BENCH_PEERS_BLOCK_TURNS', 40);
  const bench = await openBenchDatabase((line) => console.error(line));
  const admin = new Client({ connectionString: bench.url });
  await admin.connect();
  await admin.query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
  const agent = await AgentCoreTurn.open(bench.url, 4);
  const graph = await LangGraphTurn.open(bench.url);
  const direct = await DirectTurn.open(bench.url);
  try {
    const answer = await graph.turn(QUESTION);
    if (answer !== 'The result is 391.') throw new Error(`LangGraph answered "${answer}"`);
    const contenders: Contender[] = [
      { name: 'agent-core, end to end', run: (n, c) => agent.turns(QUESTION, n, c) },
      { name: 'LangGraph.js + PostgresSaver', run: (n, c) => lanes(n, c, () => graph.turn(QUESTION)) },
      { name: 'the turn written directly', run: (n, c) => lanes(n, c, () => direct.turn()) },
    ];
    // Warm-up: statements prepared, pools filled, code paths compiled.
    for (const c of contenders) await c.run(10, 1);
    console.error(`WAL per turn: ${walTurns} sequential turns each…`);
    const wal = new Map<string, WalTally>();
    for (const c of contenders) {
      const from = await walPosition(admin);
      await c.run(walTurns, 1);
      const to = await walPosition(admin);
      wal.set(c.name, perTurn(await walBetween(admin, from, to), walTurns));
      if (process.env.BENCH_PEERS_BREAKDOWN === '1') await printBreakdown(admin, c.name, from, to, walTurns);
    }
    console.error(`throughput: ${blocks} interleaved blocks of ${perBlock} turns, sequential and 4 concurrent…`);
    const rates = new Map<string, { one: number[]; four: number[] }>(
      contenders.map((c) => [c.name, { one: [], four: [] }]),
    );
    for (let b = 0; b < blocks; b++)
      for (const c of contenders)
        for (const [key, conc] of [
          ['one', 1],
          ['four', 4],
        ] as const) {
          const t0 = performance.now();
          await c.run(perBlock, conc);
          rates.get(c.name)![key].push(perBlock / ((performance.now() - t0) / 1000));
        }
    report(bench.server, contenders, wal, rates, walTurns);
  } finally {
    await agent.close();
    await graph.close();
    await direct.close();
    await admin.end();
    await bench.close();
  }
}

/** BENCH_PEERS_BREAKDOWN=1: per relation and record type, what one turn wrote (to stderr). */
async function printBreakdown(admin: Client, name: string, from: string, to: string, turns: number): Promise<void> {
  console.error(`\n${name}: WAL per turn by relation and record type`);
  if (name.startsWith('agent-core')) {
    const { rows } = await admin.query<{ event_type: string; n: string; row: string; payload: string }>(
      `SELECT event_type, count(*)::text AS n, avg(pg_column_size(e.*))::int::text AS row,
              avg(pg_column_size(payload))::int::text AS payload
         FROM events e GROUP BY 1 ORDER BY sum(pg_column_size(e.*)) DESC`,
    );
    for (const r of rows)
      console.error(
        `  event ${r.event_type.padEnd(34)} ${r.n.padStart(6)} rows, ${r.row.padStart(5)} B per row (payload ${r.payload} B)`,
      );
  }
  for (const r of await walByRelation(admin, from, to))
    console.error(
      `  ${r.relation.padEnd(40)} ${r.recordType.padEnd(28)} ${(r.count / turns).toFixed(1).padStart(6)} records ${(r.bytes / turns).toFixed(0).padStart(7)} B`,
    );
}

function report(
  server: string,
  contenders: readonly Contender[],
  wal: Map<string, WalTally>,
  rates: Map<string, { one: number[]; four: number[] }>,
  walTurns: number,
): void {
  console.log(
    `\nagent-core peers benchmark: ${server}, calculator turn (2 model calls, 1 tool call), fake model at 0 ms\n`,
  );
  const f1 = (x: number) => x.toFixed(1);
  printTable(
    [
      { header: `per turn (${walTurns} sequential turns)` },
      { header: 'WAL records', right: true },
      { header: 'full-page images', right: true },
      { header: 'heap inserts', right: true },
      { header: 'HOT updates', right: true },
      { header: 'other updates', right: true },
      { header: 'index entries', right: true },
      { header: 'commits', right: true },
    ],
    contenders.map((c) => {
      const w = wal.get(c.name)!;
      return [
        c.name,
        `${(w.recordBytes / 1024).toFixed(1)} kB`,
        `${(w.fpiBytes / 1024).toFixed(1)} kB`,
        f1(w.heapInserts),
        f1(w.heapHotUpdates),
        f1(w.heapUpdates),
        f1(w.indexEntries),
        f1(w.commits),
      ];
    }),
  );
  const lg = rates.get('LangGraph.js + PostgresSaver')!;
  console.log('');
  printTable(
    [
      { header: 'turns/s (median of blocks)' },
      { header: 'sequential', right: true },
      { header: 'time per turn', right: true },
      { header: 'vs LangGraph', right: true },
      { header: '4 concurrent', right: true },
      { header: 'vs LangGraph', right: true },
    ],
    contenders.map((c) => {
      const r = rates.get(c.name)!;
      return [
        c.name,
        f1(median(r.one)),
        `${(1000 / median(r.one)).toFixed(1)} ms`,
        `${(median(r.one) / median(lg.one)).toFixed(2)}x`,
        f1(median(r.four)),
        `${(median(r.four) / median(lg.four)).toFixed(2)}x`,
      ];
    }),
  );
  const ours = wal.get('agent-core, end to end')!;
  const theirs = wal.get('LangGraph.js + PostgresSaver')!;
  console.log(
    `\ntargets (issue 35): WAL per turn ≤ 12 kB — ${(ours.recordBytes / 1024).toFixed(1)} kB (${ours.recordBytes <= 12 * 1024 ? 'met' : 'NOT met'}; ` +
      `LangGraph ${(theirs.recordBytes / 1024).toFixed(1)} kB); sequential ≥ 1.5x LangGraph — ` +
      `${(median(rates.get('agent-core, end to end')!.one) / median(lg.one)).toFixed(2)}x; 4 concurrent ≥ 2x — ` +
      `${(median(rates.get('agent-core, end to end')!.four) / median(lg.four)).toFixed(2)}x`,
  );
}
