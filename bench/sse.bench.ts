import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import { Database } from '../src/adapters/postgres/database';
import { PgEventStore } from '../src/adapters/postgres/event-store/pg-event-store';
import { systemClock } from '../src/adapters/system-clock';
import { openBenchDatabase } from './support/bench-database';
import { formatCount, printTable } from './support/print-table';
import { randomUUID } from 'node:crypto';
import type { NewEvent } from '../src/domain/events/payloads';
import { DEFAULT_LIMITS } from '../src/domain/run/limits';
import { envNumber } from './support/env';

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(port));
    });
  });
}

const pct = (sorted: number[], p: number) =>
  sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
const ms = (n: number) => `${n.toFixed(1)} ms`;

function rssMb(pid: number): number {
  if (!fs.existsSync(`/proc/${pid}/status`)) return NaN;
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const m = /VmRSS:\s+(\d+) kB/.exec(status);
  return m ? Number(m[1]) / 1024 : NaN;
}

/** CPU time (ms) a process has used so far, user and kernel, from /proc; NaN where there is no /proc. */
function cpuMs(pid: number): { user: number; sys: number } {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return { user: Number(fields[11]) * 10, sys: Number(fields[12]) * 10 }; // clock ticks (USER_HZ = 100)
  } catch {
    return { user: NaN, sys: NaN };
  }
}

/** "<total> us (user <u> / kernel <k>; <n>% of a CPU)" per delivered frame. */
function perFrame(cpu: { user: number; sys: number }, frames: number, seconds: number): string {
  const us = (x: number) => ((x * 1000) / Math.max(1, frames)).toFixed(1);
  const total = cpu.user + cpu.sys;
  return `${us(total)} us (user ${us(cpu.user)} / kernel ${us(cpu.sys)}; ${((total / 1000 / seconds) * 100).toFixed(0)}% of a CPU)`;
}

async function postJson(
  base: string,
  p: string,
  body: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const r = await fetch(`${base}${p}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
}

/**
 * One short turn, appended event by event: a user message, the queued run and its cancellation
 * (the API only forwards events, so their kind does not matter; these payloads are the most stable).
 */
function turn(n: number): NewEvent[] {
  const runId = randomUUID();
  const messageId = randomUUID();
  return [
    {
      type: 'user.message.created',
      runId,
      actorType: 'user',
      actorId: 'local-user',
      data: { messageId, content: [{ type: 'text', text: `What is ${n} times 7?` }] },
    },
    {
      type: 'run.queued',
      runId,
      actorType: 'user',
      actorId: 'local-user',
      data: {
        agentId: 'general',
        agentVersion: 1,
        principalId: 'local-user',
        modelPolicy: 'demo',
        userMessageId: messageId,
        limits: DEFAULT_LIMITS,
        priority: 100,
        idempotencyKey: null,
        requestHash: null,
        scopes: ['tools.use'],
      },
    },
    { type: 'run.cancelled', runId, actorType: 'user', actorId: 'local-user', data: { reason: 'bench' } },
  ];
}

const EMPTY = Buffer.alloc(0);
/** Every client reads into this one buffer: reads are handled synchronously and leftovers copied. */
const READ_BUFFER = Buffer.alloc(256 * 1024);
const LF = 0x0a;

/** The index of the first `\n\n` in `b` at or after `from`, or -1. */
function frameEnd(b: Buffer, from: number): number {
  for (let i = from + 1; i < b.length; i++) if (b[i] === LF && b[i - 1] === LF) return i - 1;
  return -1;
}

/**
 * One SSE client on a raw TCP socket: sends the GET, checks the 200 head, decodes the chunked body and
 * splits it into SSE frames, and records for every `id:` frame when the bytes carrying it were read.
 * It is a complete client (any split of the bytes into reads and chunks is handled), but it reads
 * with `onread` into a shared buffer and parses bytes, without the HTTP client's per-read stream
 * machinery and string decoding: 1,000 of them share the bench process's CPU with the appender, and
 * their own cost is part of the latency measured.
 */
function openClient(port: number, urlPath: string, onId: (seq: number, at: number) => void): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    let head: Buffer | null = EMPTY; // until the response head is complete
    let raw: Buffer = EMPTY; // chunked bytes not yet decoded (a copy, never the read buffer)
    let sse: Buffer = EMPTY; // decoded body bytes after the last complete frame (a copy)
    const frames = (body: Buffer, at: number) => {
      const data = sse.length === 0 ? body : Buffer.concat([sse, body]);
      let start = 0;
      for (let end = frameEnd(data, start); end >= 0; end = frameEnd(data, start)) {
        // `id: <digits>\n` opens a persisted event's frame
        if (data[start] === 0x69 && data[start + 1] === 0x64 && data[start + 2] === 0x3a && data[start + 3] === 0x20) {
          let seq = 0;
          for (let i = start + 4; data[i] >= 0x30 && data[i] <= 0x39; i++) seq = seq * 10 + data[i] - 0x30;
          onId(seq, at);
        }
        start = end + 2;
      }
      sse = start === data.length ? EMPTY : Buffer.from(data.subarray(start));
    };
    const chunks = (bytes: Buffer, at: number) => {
      let pos = 0;
      for (;;) {
        // `<hex size>\r\n<size bytes>\r\n`
        let size = 0;
        let i = pos;
        for (let d = bytes[i]; i < bytes.length && d !== 0x0d; d = bytes[++i]) {
          const v = d <= 0x39 ? d - 0x30 : (d | 0x20) - 0x57;
          if (v < 0 || v > 15) return socket.destroy(new Error('bad chunk header'));
          size = size * 16 + v;
        }
        if (i + 1 >= bytes.length || bytes.length < i + 2 + size + 2) break; // incomplete
        if (size === 0) return socket.end();
        frames(bytes.subarray(i + 2, i + 2 + size), at);
        pos = i + 2 + size + 2;
      }
      raw = pos === bytes.length ? EMPTY : Buffer.from(bytes.subarray(pos));
    };
    const onData = (b: Buffer) => {
      const at = performance.now();
      if (head === null) return chunks(raw.length === 0 ? b : Buffer.concat([raw, b]), at);
      head = Buffer.concat([head, b]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      const text = head.toString('latin1', 0, end);
      const rest = head.subarray(end + 4);
      head = null;
      if (!/^HTTP\/1\.1 200 /.test(text)) return reject(new Error(`SSE answered: ${text.split('\r\n')[0]}`));
      if (!/\r\ntransfer-encoding: *chunked/i.test(text)) return reject(new Error('SSE response is not chunked'));
      resolve(socket);
      chunks(rest, at);
    };
    const socket = net.connect({
      port,
      host: '127.0.0.1',
      noDelay: true,
      onread: {
        buffer: READ_BUFFER,
        callback: (n: number) => {
          onData(READ_BUFFER.subarray(0, n));
          return true;
        },
      },
    });
    socket.on('error', reject);
    socket.write(`GET ${urlPath} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAccept: text/event-stream\r\n\r\n`);
  });
}

/**
 * `npm run bench -- sse`: BENCH_SSE_CLIENTS (default 1000) SSE clients on one `agent api` process
 * follow one session while this process appends run lifecycles to it event by event. Reports the
 * commit-to-client latency of every (event, client) pair: from the append's return (the commit as
 * its writer sees it) to the moment that client read the bytes of that event's frame, which includes
 * the clients' own reading (1,000 clients share this process with the appender); and the same from
 * the append's start, which adds the append itself. Also split per event
 * into the append, the first client's latency and the spread from the first to the last client (the
 * fan-out), and reported: events per second delivered to all clients, CPU per delivered frame of the
 * API process and of this process (user and kernel; independent of how much of a shared machine each
 * got), the API process's peak RSS, its LISTEN connections, database connections, and the latency of
 * 202 submissions. Knobs: BENCH_SECONDS (default 20), BENCH_APPENDS_PER_SECOND (default 10: one busy
 * run), BENCH_SUBMISSIONS (default 300), BENCH_API_NODE_ARGS (node flags for the API process, e.g.
 * `--cpu-prof --cpu-prof-dir=/tmp/prof`).
 */
export async function runSseBench(): Promise<void> {
  const clients = envNumber('BENCH_SSE_CLIENTS', 1000);
  const seconds = envNumber('BENCH_SECONDS', 20);
  const appendsPerSecond = envNumber('BENCH_APPENDS_PER_SECOND', 10);
  const submissions = envNumber('BENCH_SUBMISSIONS', 300);
  const bench = await openBenchDatabase((line) => console.error(line));
  const db = new Database(bench.url, 4);
  const store = new PgEventStore(db, systemClock);
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const entry = path.join(__dirname, '..', 'src', 'main.js');
  let api: ChildProcess | null = null;
  const requests: net.Socket[] = [];
  let rssTimer: NodeJS.Timeout | null = null;
  try {
    // BENCH_API_NODE_ARGS: extra node flags for the API process (e.g. `--cpu-prof --cpu-prof-dir=/tmp/p`).
    const apiNodeArgs = (process.env.BENCH_API_NODE_ARGS ?? '').split(' ').filter((a) => a !== '');
    api = spawn(process.execPath, [...apiNodeArgs, entry, 'api'], {
      env: {
        ...process.env,
        DATABASE_URL: bench.url,
        PORT: String(port),
        LOG_LEVEL: 'warn',
        API_RATE_LIMIT_PER_MINUTE: '0',
        API_MAX_ACTIVE_RUNS_PER_TENANT: '0',
        AUTH_MODE: 'dev',
      },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    api.once('exit', (code, signal) => console.error(`API process exited: code ${code}, signal ${signal}`));
    for (let i = 0; ; i++) {
      const ok = await fetch(`${base}/health/ready`)
        .then((r) => r.status === 200)
        .catch(() => false);
      if (ok) break;
      if (i > 300) throw new Error('the API did not become ready');
      await new Promise((r) => setTimeout(r, 100));
    }
    const session = await postJson(base, '/v1/sessions', {});
    const sessionId = String(session.body.id);
    const connections = async () =>
      (
        await db.query<{ n: string }>(
          `SELECT count(*)::text AS n FROM pg_stat_activity WHERE datname = current_database()`,
        )
      ).rows[0].n;
    const connectionsBefore = await connections();

    // 1. Connect the clients (in batches, so the accept queue is not the thing measured).
    console.error(`connecting ${clients} SSE clients…`);
    const appendStart = new Map<number, number>();
    const latencies: number[] = [];
    let delivered = 0;
    // Per event: when its first and its last client received it (the spread is the fan-out).
    const firstAt = new Map<number, number>();
    const lastAt = new Map<number, number>();
    const appendDone = new Map<number, number>();
    // Every (event, client) arrival, for the latency from the commit computed once all are known.
    const arrivals: { seq: number; at: number }[] = [];
    // A frame read before its append's promise settled in this (busy) process, or replayed history
    // (session.created); matched with its append once the run is over.
    const early: { seq: number; at: number }[] = [];
    const record = (seq: number, at: number, t0: number) => {
      latencies.push(at - t0);
      arrivals.push({ seq, at });
      delivered++;
      if (!firstAt.has(seq) || at < firstAt.get(seq)!) firstAt.set(seq, at);
      if (!lastAt.has(seq) || at > lastAt.get(seq)!) lastAt.set(seq, at);
    };
    const onId = (seq: number, at: number) => {
      const t0 = appendStart.get(seq);
      if (t0 === undefined) early.push({ seq, at });
      else record(seq, at, t0);
    };
    const settleEarly = () => {
      for (const { seq, at } of early.splice(0)) {
        const t0 = appendStart.get(seq);
        if (t0 !== undefined) record(seq, at, t0);
      }
    };
    for (let i = 0; i < clients; i += 100) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(100, clients - i) }, () =>
          openClient(port, `/v1/sessions/${sessionId}/events`, onId),
        ),
      );
      requests.push(...batch);
    }
    const listens = await db.query<{ n: string }>(
      `SELECT count(*)::text AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = 'agent-core-sse'`,
    );
    const connectionsWith = await connections();
    let peakRss = rssMb(api.pid!);
    rssTimer = setInterval(() => (peakRss = Math.max(peakRss, rssMb(api!.pid!) || 0)), 250);

    // 2. Append run lifecycles event by event at a steady pace.
    console.error(`appending at ${appendsPerSecond}/s for ${seconds}s…`);
    const started = performance.now();
    const apiCpuBefore = cpuMs(api.pid!);
    const benchCpuBefore = process.cpuUsage();
    const deadline = started + seconds * 1000;
    const interval = 1000 / appendsPerSecond;
    let appended = 0;
    let n = 0;
    while (performance.now() < deadline) {
      for (const event of turn(n++)) {
        const due = started + appended * interval;
        const wait = due - performance.now();
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        const t0 = performance.now();
        const r = await store.append(sessionId, [event], { tenantId: 'local' });
        appendStart.set(r.lastSequence, t0);
        appendDone.set(r.lastSequence, performance.now());
        appended++;
        if (performance.now() >= deadline) break;
      }
    }
    // Let the last frames arrive.
    const expected = appended * clients;
    for (let i = 0; i < 100 && delivered < expected; i++) {
      settleEarly();
      if (delivered < expected) await new Promise((r) => setTimeout(r, 100));
    }
    settleEarly();
    const elapsed = (performance.now() - started) / 1000;
    // CPU per delivered frame is what the fan-out costs, whatever else the machine is doing; the wall
    // latencies above depend on how much of the (shared) CPUs the API and the clients got.
    const apiCpuAfter = cpuMs(api.pid!);
    const apiCpu = { user: apiCpuAfter.user - apiCpuBefore.user, sys: apiCpuAfter.sys - apiCpuBefore.sys };
    const benchCpuUsage = process.cpuUsage(benchCpuBefore);
    const benchCpu = { user: benchCpuUsage.user / 1000, sys: benchCpuUsage.system / 1000 };
    clearInterval(rssTimer);
    peakRss = Math.max(peakRss, rssMb(api.pid!));
    for (const r of requests) r.destroy();
    requests.length = 0;

    // 3. 202 submission latency: one message to each of `submissions` fresh sessions.
    const sessions: string[] = [];
    for (let i = 0; i < submissions; i++) sessions.push(String((await postJson(base, '/v1/sessions', {})).body.id));
    const submitLatencies: number[] = [];
    for (const id of sessions) {
      const t0 = performance.now();
      const r = await postJson(base, `/v1/sessions/${id}/messages`, {
        content: [{ type: 'text', text: 'What is 17 multiplied by 23?' }],
      });
      if (r.status !== 202) throw new Error(`submission answered ${r.status}`);
      submitLatencies.push(performance.now() - t0);
    }

    latencies.sort((a, b) => a - b);
    // From the client-observed commit (the append's return): PostgreSQL signals the listeners at the
    // commit, just before it answers the appender, so this is within a round trip of the true
    // commit-to-client latency; the figure from the append's start adds the whole append to it.
    const fromCommit = arrivals.map(({ seq, at }) => at - appendDone.get(seq)!).sort((a, b) => a - b);
    const perEvent = (f: (seq: number, t0: number) => number | undefined) =>
      [...appendStart]
        .map(([seq, t0]) => f(seq, t0))
        .filter((x): x is number => x !== undefined)
        .sort((a, b) => a - b);
    const appendMs = perEvent((seq, t0) => appendDone.get(seq)! - t0);
    const firstMs = perEvent((seq, t0) => (firstAt.has(seq) ? firstAt.get(seq)! - t0 : undefined));
    const spreadMs = perEvent((seq) => (firstAt.has(seq) ? lastAt.get(seq)! - firstAt.get(seq)! : undefined));
    submitLatencies.sort((a, b) => a - b);
    console.log(
      `\nagent-core SSE benchmark: ${bench.server}, ${os.cpus().length} CPUs, Node ${process.version}, ${clients} clients on one API process\n`,
    );
    printTable(
      [{ header: 'measure' }, { header: 'value', right: true }, { header: 'target', right: true }],
      [
        ['events appended (one commit each)', formatCount(appended), ''],
        ['frames delivered / expected', `${formatCount(delivered)} / ${formatCount(expected)}`, 'all'],
        ['events/s delivered (all clients)', formatCount(delivered / elapsed), ''],
        ['commit-to-client latency p50', ms(pct(fromCommit, 50)), '<= 20 ms'],
        ['commit-to-client latency p99', ms(pct(fromCommit, 99)), '<= 100 ms'],
        ['commit-to-client latency max', ms(fromCommit[fromCommit.length - 1] ?? NaN), ''],
        ['  from the append’s start instead (p50 / p99)', `${ms(pct(latencies, 50))} / ${ms(pct(latencies, 99))}`, ''],
        ['  of which the append itself (p50 / p99)', `${ms(pct(appendMs, 50))} / ${ms(pct(appendMs, 99))}`, ''],
        ['  first client of an event (p50 / p99)', `${ms(pct(firstMs, 50))} / ${ms(pct(firstMs, 99))}`, ''],
        ['  first to last client of an event (p50 / p99)', `${ms(pct(spreadMs, 50))} / ${ms(pct(spreadMs, 99))}`, ''],
        ['API process CPU per delivered frame', perFrame(apiCpu, delivered, elapsed), ''],
        ['bench clients + appender CPU per frame', perFrame(benchCpu, delivered, elapsed), ''],
        ['API process peak RSS', `${peakRss.toFixed(0)} MB`, '<= 300 MB'],
        ['API LISTEN connections (SSE feed)', listens.rows[0].n, '1'],
        [
          'database connections: before clients / with clients',
          `${connectionsBefore} / ${connectionsWith}`,
          'pool (10) + 1',
        ],
        ['202 submission latency p50', ms(pct(submitLatencies, 50)), ''],
        ['202 submission latency p99', ms(pct(submitLatencies, 99)), ''],
      ],
    );
  } finally {
    for (const r of requests) r.destroy();
    if (rssTimer) clearInterval(rssTimer);
    if (api) {
      api.kill('SIGTERM');
      await new Promise((r) => api!.once('exit', r));
    }
    await db.close();
    await bench.close();
  }
}
