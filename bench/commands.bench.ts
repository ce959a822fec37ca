import type { INestApplication } from '@nestjs/common';
import { CommandBus } from '@nestjs/cqrs';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { loadSettings } from '../src/config/settings';
import { createPlatform, type Platform } from '../src/composition/platform';
import { createHttpApp } from '../src/composition/http';
import { CreateSessionCommand, CreateSessionHandler } from '../src/application/sessions/create-session';
import { SubmitMessageCommand, SubmitMessageHandler } from '../src/application/runs/submit-message';
import { CancelRunCommand } from '../src/application/runs/cancel-run';
import { LOCAL_PRINCIPAL } from '../src/domain/principal';
import { openBenchDatabase } from './support/bench-database';
import { median } from './support/block-readings';
import { envNumber } from './support/env';
import { printTable } from './support/print-table';
import { QueryCounter, type QueryRecord } from './support/query-counter';

const QUESTION = 'What is 17 multiplied by 23?';

/** One measured operation: its latencies (ms) over all blocks, its per-block p50s and round trips per call. */
interface Series {
  readonly name: string;
  readonly p50s: number[];
  readonly p99s: number[];
  roundTrips: number;
  calls: number;
  /** This process's CPU time (user + system) during the timed calls, µs. */
  cpuMicros: number;
}

/**
 * `npm run bench -- commands` (issue 35 item 4): the latency of the two commands a turn starts with,
 * `CreateSession` and `SubmitMessage`, called in-process through their handlers (as the peers bench's
 * agent-core turn builds them) on a platform with no worker (the runs stay queued, nothing else
 * competes), and of the HTTP submit (`POST /v1/sessions/{id}/messages` → 202) and the HTTP create with
 * an initial message (`POST /v1/sessions` → 201) on an idle API on an ephemeral port. Each block times
 * every operation `BENCH_COMMANDS_PER_BLOCK` times, one at a time, the operations interleaved block by
 * block; printed: the median over blocks of each block's p50 and p99, and round trips per call
 * (statements sent by any `pg` client of the process, counted at the client; deterministic).
 * Knobs: BENCH_COMMANDS_BLOCKS (default 7), BENCH_COMMANDS_PER_BLOCK (default 200), BENCH_COMMANDS_ONLY
 * (only the operations whose name contains it, e.g. `in-process` for a CPU profile).
 */
export async function runCommandsBench(): Promise<void> {
  const blocks = envNumber('BENCH_COMMANDS_BLOCKS', 7);
  const perBlock = envNumber('BENCH_COMMANDS_PER_BLOCK', 200);
  const bench = await openBenchDatabase((line) => console.error(line));
  const platform = await createPlatform(
    { ...loadSettings(), fakeModelLatencyMs: 0, pollIntervalMs: 60_000, apiRateLimitPerMinute: 0 },
    { service: 'bench', databaseUrl: bench.url, quiet: true, migrate: false, poolSize: 10 },
  );
  let app: INestApplication | null = null;
  try {
    app = await createHttpApp(platform);
    await app.listen(0, '127.0.0.1');
    const server = app.getHttpServer() as Server;
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const combined = await createsWithMessage(base);
    const only = process.env.BENCH_COMMANDS_ONLY ?? '';
    const ops = operations(platform, base).filter(
      (o) => (combined || !o.name.includes('{message}')) && o.name.includes(only),
    );
    const bus = app.get(CommandBus);
    const cancel = (runId: string) => bus.execute(new CancelRunCommand(LOCAL_PRINCIPAL, runId));
    const series: Series[] = ops.map((o) => ({
      name: o.name,
      p50s: [],
      p99s: [],
      roundTrips: 0,
      calls: 0,
      cpuMicros: 0,
    }));
    console.error('warm-up…');
    for (const o of ops) await timeBlock(o, Math.min(perBlock, 100), cancel, null);
    const counter = new QueryCounter();
    counter.start();
    for (let b = 0; b < blocks; b++) {
      for (let i = 0; i < ops.length; i++) await timeBlock(ops[i], perBlock, cancel, { s: series[i], counter });
      console.error(`block ${b + 1}/${blocks}`);
    }
    counter.stop();
    printTable(
      [
        { header: 'operation' },
        { header: 'p50 ms', right: true },
        { header: 'p99 ms', right: true },
        { header: 'statements', right: true },
        { header: 'CPU ms', right: true },
      ],
      series.map((s) => [
        s.name,
        median(s.p50s).toFixed(3),
        median(s.p99s).toFixed(3),
        (s.roundTrips / s.calls).toFixed(1),
        (s.cpuMicros / 1000 / s.calls).toFixed(3),
      ]),
    );
    console.log(
      `${blocks} blocks × ${perBlock} calls each, one at a time; p50/p99: the median over blocks of each block's percentile; ` +
        "statements: sent per call by this process's pg clients (a pipelined one not counted; two sent concurrently count two); " +
        'CPU: this process per call (user + system; for HTTP it includes the client)',
    );
  } finally {
    await app?.close();
    await platform.close();
    await bench.close();
  }
}

interface Operation {
  readonly name: string;
  /** Sets up what `n` calls need (untimed), returns the call for the i-th (its run id, if it queued one). */
  prepare(n: number): Promise<(i: number) => Promise<string | null>>;
}

function operations(p: Platform, base: string): Operation[] {
  const settings = { defaultAgentId: p.settings.defaultAgentId, maxMessageChars: 32_000 };
  const sessions = new CreateSessionHandler(p.store, p.agents, p.ids, settings);
  const messages = new SubmitMessageHandler(p.store, p.sessions, p.agents, p.ids, settings, p.runs, p.toolRecords);
  const fresh = async (n: number) => {
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push((await sessions.execute(new CreateSessionCommand(LOCAL_PRINCIPAL))).id);
    return ids;
  };
  const ask = { content: [{ type: 'text', text: QUESTION }] };
  return [
    {
      name: 'CreateSession (in-process)',
      prepare: async () => async () => {
        await sessions.execute(new CreateSessionCommand(LOCAL_PRINCIPAL));
        return null;
      },
    },
    {
      name: 'SubmitMessage (in-process)',
      prepare: async (n) => {
        const ids = await fresh(n);
        return async (i) => (await messages.execute(new SubmitMessageCommand(LOCAL_PRINCIPAL, ids[i], QUESTION))).runId;
      },
    },
    {
      name: 'POST /v1/sessions/{id}/messages → 202',
      prepare: async (n) => {
        const ids = await fresh(n);
        return async (i) => (await post(`${base}/v1/sessions/${ids[i]}/messages`, ask, 202)).run_id as string;
      },
    },
    {
      name: 'POST /v1/sessions → 201',
      prepare: async () => async () => {
        await post(`${base}/v1/sessions`, {}, 201);
        return null;
      },
    },
    {
      name: 'POST /v1/sessions {message} → 201',
      prepare: async () => async () => (await post(`${base}/v1/sessions`, { message: ask }, 201)).run_id as string,
    },
  ];
}

/** Whether this build's `POST /v1/sessions` takes `message` (ADR 0053; an older build answers 400). */
async function createsWithMessage(base: string): Promise<boolean> {
  const r = await fetch(`${base}/v1/sessions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ message: { content: [{ type: 'text', text: QUESTION }] } }),
  });
  const body = (await r.json()) as { run_id?: string };
  return r.status === 201 && typeof body.run_id === 'string';
}

async function post(url: string, body: unknown, expected: number): Promise<Record<string, unknown>> {
  const r = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  const text = await r.text();
  if (r.status !== expected) throw new Error(`${url}: ${r.status} ${text}`);
  return JSON.parse(text) as Record<string, unknown>;
}

/**
 * Times `n` calls of `op`, one at a time; records the block's p50/p99 and the round trips of the
 * timed calls into `into`. A run a call queued is cancelled after it (untimed), so the tenant's
 * active runs stay at 0 as on an idle platform (the HTTP submit counts them against a ceiling).
 */
async function timeBlock(
  op: Operation,
  n: number,
  cancel: (runId: string) => Promise<unknown>,
  into: { s: Series; counter: QueryCounter } | null,
): Promise<void> {
  const call = await op.prepare(n);
  const ms: number[] = [];
  for (let i = 0; i < n; i++) {
    const from = into?.counter.all.length ?? 0;
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const runId = await call(i);
    ms.push(performance.now() - t0);
    const cpu = process.cpuUsage(cpu0);
    if (into) into.s.cpuMicros += cpu.user + cpu.system;
    if (into) {
      const sent = into.counter.all.slice(from);
      into.s.roundTrips += sent.filter((r) => !r.pipelined).length;
      if (i === 0 && process.env.BENCH_COMMANDS_TRACE === '1') traceStatements(op.name, sent);
    }
    if (runId !== null) await cancel(runId);
  }
  if (!into) return;
  ms.sort((a, b) => a - b);
  into.s.p50s.push(ms[Math.floor(n / 2)]);
  into.s.p99s.push(ms[Math.min(n - 1, Math.floor(n * 0.99))]);
  into.s.calls += n;
  into.counter.reset();
}

/** BENCH_COMMANDS_TRACE=1: the statements one call sent, first line of each (where its round trips go). */
function traceStatements(name: string, sent: readonly QueryRecord[]): void {
  console.error(`${name}:`);
  for (const r of sent)
    console.error(`  ${r.pipelined ? '+' : ' '} ${r.kind.padEnd(6)} ${r.text.replace(/\s+/g, ' ').slice(0, 110)}`);
}
