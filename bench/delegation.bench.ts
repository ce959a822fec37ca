import { loadSettings } from '../src/config/settings';
import { createPlatform, type Platform } from '../src/composition/platform';
import { CreateSessionCommand, CreateSessionHandler } from '../src/application/sessions/create-session';
import { SubmitMessageCommand, SubmitMessageHandler } from '../src/application/runs/submit-message';
import { LOCAL_PRINCIPAL } from '../src/domain/principal';
import { openBenchDatabase } from './support/bench-database';
import { blocksText, median, targetVerdict } from './support/block-readings';
import { envNumber } from './support/env';
import { printTable } from './support/print-table';

/**
 * `npm run bench -- delegation` (issue 32): a parent run that delegates four briefs (`delegate.run`
 * through the demo model, each child a calculator turn in its own session) against the same work as
 * five independent runs, with the demo model at zero latency and one worker (4 concurrent runs):
 *  1. join latency: the last child's terminal commit → the parent's join (`run.children_joined`,
 *     the resumption, target p50 ≤ 5 ms), and → the parent's next claim by a worker;
 *  2. throughput: the time for P parents with their 4 children each over the time for 5·P
 *     independent runs (target ≥ 0.8), in interleaved blocks (median of per-block ratios and pooled).
 * Times are event stamps of this process's clock (millisecond resolution).
 * Knob: BENCH_PARENTS (parents per arm, default 40, in blocks of 8).
 */
const TERMINAL = ['completed', 'failed', 'cancelled'];
const delegateText = (i: number) =>
  `delegate: what is ${i} times 2; what is ${i} times 3; what is ${i} times 4; what is ${i} times 5`;
const childText = (i: number, k: number) => `what is ${i} times ${k}`;

type Submit = (text: string) => Promise<string>;

export async function runDelegationBench(): Promise<void> {
  const parents = envNumber('BENCH_PARENTS', 40);
  const bench = await openBenchDatabase((line) => console.error(line));
  const platform = await createPlatform(
    { ...loadSettings(), fakeModelLatencyMs: 0, delegationEnabled: true, pollIntervalMs: 1000 },
    { service: 'bench', databaseUrl: bench.url, quiet: true, migrate: false, poolSize: 20 },
  );
  const worker = platform.createWorker({ concurrency: 4, pollIntervalMs: 1000, drainMs: 1000 });
  try {
    await worker.start();
    const submit = submitter(platform);
    const per = Math.min(8, parents);
    const blocks = Math.max(1, Math.ceil(parents / per));
    console.error(`delegation: ${blocks} blocks of ${per} parents (4 children each) and ${5 * per} independent runs…`);
    const parentIds: string[] = [];
    const ratios: number[] = [];
    let delegated = 0;
    let independent = 0;
    for (let b = 0; b < blocks; b++) {
      const d = await timedBatch(platform, per, (i) => submit(delegateText(b * per + i + 1)));
      parentIds.push(...d.ids);
      const f = await timedBatch(platform, 5 * per, (i) => submit(childText(b * per + i + 1, 2 + (i % 4))));
      delegated += d.seconds;
      independent += f.seconds;
      ratios.push(f.seconds / d.seconds);
    }
    await expectCompleted(platform, parentIds);
    const join = await joinLatencies(platform, parentIds);
    const pooled = independent / delegated;
    printTable(
      [{ header: 'measure' }, { header: 'value', right: true }],
      [
        [`parents (4 children each)`, String(parentIds.length)],
        ['last child ended → parent joined (resumed): p50', `${pct(join.joined, 50)} ms`],
        ['… p99', `${pct(join.joined, 99)} ms`],
        ['last child ended → parent claimed again: p50', `${pct(join.claimed, 50)} ms`],
        ['… p99', `${pct(join.claimed, 99)} ms`],
        ['parent + 4 children vs 5 independent runs, time ratio (pooled)', pooled.toFixed(2)],
        ['… median of blocks', `${median(ratios).toFixed(2)} (blocks ${blocksText(ratios)})`],
        ['target ≥ 0.8', targetVerdict(pooled, median(ratios), 0.8)],
        ['join target p50 ≤ 5 ms', pct(join.joined, 50) <= 5 ? 'met' : 'NOT met'],
      ],
    );
  } finally {
    await worker.stop();
    await platform.close();
    await bench.close();
  }
}

function submitter(p: Platform): Submit {
  const appSettings = { defaultAgentId: 'general', maxMessageChars: 32_000 };
  const sessions = new CreateSessionHandler(p.store, p.agents, p.ids, appSettings);
  const messages = new SubmitMessageHandler(p.store, p.sessions, p.agents, p.ids, appSettings, p.runs, p.toolRecords);
  return async (text) => {
    const s = await sessions.execute(new CreateSessionCommand(LOCAL_PRINCIPAL));
    return (await messages.execute(new SubmitMessageCommand(LOCAL_PRINCIPAL, s.id, text))).runId;
  };
}

/** Submits `n` runs at once to the running worker and waits for all to end; the seconds that took. */
async function timedBatch(p: Platform, n: number, submit: (i: number) => Promise<string>) {
  const t0 = performance.now();
  const ids = await Promise.all(Array.from({ length: n }, (_, i) => submit(i)));
  for (;;) {
    const r = await p.db.query<{ n: string }>(
      `SELECT count(*) AS n FROM runs WHERE id = ANY($1::uuid[]) AND status = ANY($2::text[])`,
      [ids, TERMINAL],
    );
    if (Number(r.rows[0].n) === ids.length) break;
    await new Promise((res) => setTimeout(res, 5));
  }
  return { ids, seconds: (performance.now() - t0) / 1000 };
}

async function expectCompleted(p: Platform, parentIds: string[]): Promise<void> {
  const r = await p.db.query<{ n: string }>(
    `SELECT count(*) AS n FROM runs
      WHERE (id = ANY($1::uuid[]) OR parent_run_id = ANY($1::uuid[])) AND status <> 'completed'`,
    [parentIds],
  );
  if (Number(r.rows[0].n) > 0) throw new Error(`${r.rows[0].n} benchmark runs did not complete`);
}

/** Per parent: its last child's terminal event → its `run.children_joined`, and → its next `run.claimed`. */
async function joinLatencies(p: Platform, parentIds: string[]) {
  const r = await p.db.query<{ joined: string; claimed: string }>(
    `WITH kids AS (
       SELECT r.parent_run_id AS parent, max(e.created_at) AS ended
         FROM runs r JOIN events e ON e.run_id = r.id
        WHERE r.parent_run_id = ANY($1::uuid[]) AND e.event_type IN ('run.completed', 'run.failed', 'run.cancelled')
        GROUP BY r.parent_run_id)
     SELECT extract(epoch FROM (min(e.created_at) FILTER (WHERE e.event_type = 'run.children_joined') - k.ended)) * 1000 AS joined,
            extract(epoch FROM (min(e.created_at) FILTER (WHERE e.event_type = 'run.claimed') - k.ended)) * 1000 AS claimed
       FROM kids k JOIN events e ON e.run_id = k.parent AND e.created_at >= k.ended
      GROUP BY k.parent, k.ended`,
    [parentIds],
  );
  const sorted = (k: 'joined' | 'claimed') => r.rows.map((x) => Number(x[k])).sort((a, b) => a - b);
  return { joined: sorted('joined'), claimed: sorted('claimed') };
}

const pct = (sorted: readonly number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? NaN;
