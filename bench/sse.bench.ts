import * as http from 'node:http';
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

function envNumber(name: string, fallback: number): number {
  const n = Number(process.env[name]);
  return Number.isFinite(n) && n > 0 ? n : fallback;
}

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

/** CPU time (user + system, ms) a process has used so far, from /proc; NaN where there is no /proc. */
function cpuMs(pid: number): number {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100; // clock ticks (USER_HZ = 100)
  } catch {
    return NaN;
  }
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
      },
    },
    { type: 'run.cancelled', runId, actorType: 'user', actorId: 'local-user', data: { reason: 'bench' } },
  ];
}

/** One raw SSE client: records, for every `id:` frame, when it arrived. */
function openClient(url: string, onId: (seq: number, at: number) => void): Promise<http.ClientRequest> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { agent: false, headers: { accept: 'text/event-stream' } }, (res) => {
      if (res.statusCode !== 200) return reject(new Error(`SSE status ${res.statusCode}`));
      res.setEncoding('utf8');
      let buf = '';
      res.on('data', (chunk: string) => {
        const at = performance.now();
        buf += chunk;
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const frame = buf.slice(0, i);
          buf = buf.slice(i + 2);
          if (frame.startsWith('id: ')) onId(Number(frame.slice(4, frame.indexOf('\n'))), at);
        }
      });
      res.on('error', () => undefined);
      resolve(req);
    });
    req.on('error', reject);
  });
}

/**
 * `npm run bench -- sse`: BENCH_SSE_CLIENTS (default 1000) SSE clients on one `agent api` process
 * follow one session while this process appends run lifecycles to it event by event. Reports the
 * commit-to-client latency (from the start of each append to its frame arriving at a client, so it
 * includes the append itself), events per second delivered to all clients, the API process's peak
 * RSS, its LISTEN connections, and the latency of 202 submissions. Knobs: BENCH_SECONDS (default 20),
 * BENCH_APPENDS_PER_SECOND (default 10: one busy run; on 2 CPUs shared with the 1,000 clients the process saturates near 44,000 frames/s, i.e. about 45 appends/s), BENCH_SUBMISSIONS (default 300).
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
  const requests: http.ClientRequest[] = [];
  let rssTimer: NodeJS.Timeout | null = null;
  try {
    api = spawn(process.execPath, [entry, 'api'], {
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
    const onId = (seq: number, at: number) => {
      const t0 = appendStart.get(seq);
      if (t0 === undefined) return; // replayed history (session.created)
      latencies.push(at - t0);
      delivered++;
    };
    for (let i = 0; i < clients; i += 100) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(100, clients - i) }, () =>
          openClient(`${base}/v1/sessions/${sessionId}/events`, onId),
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
        appended++;
        if (performance.now() >= deadline) break;
      }
    }
    // Let the last frames arrive.
    const expected = appended * clients;
    for (let i = 0; i < 100 && delivered < expected; i++) await new Promise((r) => setTimeout(r, 100));
    const elapsed = (performance.now() - started) / 1000;
    // CPU per delivered frame is what the fan-out costs, whatever else the machine is doing; the wall
    // latencies above depend on how much of the (shared) CPUs the API and the clients got.
    const apiCpu = cpuMs(api.pid!) - apiCpuBefore;
    const benchCpuUsage = process.cpuUsage(benchCpuBefore);
    const benchCpu = (benchCpuUsage.user + benchCpuUsage.system) / 1000;
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
        ['commit-to-client latency p50', ms(pct(latencies, 50)), '<= 20 ms'],
        ['commit-to-client latency p99', ms(pct(latencies, 99)), '<= 100 ms'],
        ['commit-to-client latency max', ms(latencies[latencies.length - 1] ?? NaN), ''],
        [
          'API process CPU per delivered frame',
          `${((apiCpu * 1000) / Math.max(1, delivered)).toFixed(1)} us (${((apiCpu / 1000 / elapsed) * 100).toFixed(0)}% of a CPU)`,
          '',
        ],
        [
          'bench clients + appender CPU per frame',
          `${((benchCpu * 1000) / Math.max(1, delivered)).toFixed(1)} us (${((benchCpu / 1000 / elapsed) * 100).toFixed(0)}% of a CPU)`,
          '',
        ],
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
