/**
 * A load of calculator turns through one or more API processes, each run watched over SSE on an
 * API other than the one it was submitted to. Runs in the test process, or on its own (inside a
 * network namespace) as `node drive.js '<json options>'`, printing its report as JSON on stdout.
 * Self-contained (fetch and eventsource-parser) so it bundles into one file.
 */
import { createParser } from 'eventsource-parser';

export interface DriveOptions {
  /** Base URLs of the API processes (`http://host:port`). */
  readonly apis: readonly string[];
  readonly runs: number;
  /** Runs in flight at once. */
  readonly concurrency: number;
  /** Gives up on a run (and reports it unfinished) after this long. */
  readonly runTimeoutMs: number;
  /** A bearer token (AUTH_MODE=token); none in dev mode. */
  readonly token?: string;
  /** Idempotency keys are `<keyPrefix>-<index>` (a principal's keys are unique across sessions); default random. */
  readonly keyPrefix?: string;
  /** First wait this long for every API's /health/ready (a driver started beside starting APIs); default 0. */
  readonly readyTimeoutMs?: number;
  /** Called (in-process use) each time a run's stream ended with its terminal event. */
  readonly onRunDone?: (done: number) => void;
}

export interface DrivenRun {
  readonly index: number;
  readonly sessionId: string;
  readonly runId: string;
  readonly expected: string;
  readonly submittedVia: string;
  readonly watchedVia: string;
  /** The SSE ids (session sequences) received, in arrival order, across reconnects. */
  readonly sseIds: number[];
  /** The terminal event type the stream ended with, or null. */
  terminal: string | null;
  reconnects: number;
  /** Submissions answered 5xx or cut (retried with the same Idempotency-Key). */
  submitRetries: number;
  /** Of those, submissions the server left unanswered for 15 s (given up by this client). */
  submitHangs: number;
  error?: string;
}

export interface DriveReport {
  readonly runs: DrivenRun[];
  readonly elapsedMs: number;
}

const TERMINAL = new Set(['run.completed', 'run.failed', 'run.cancelled']);
const delay = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The i-th question and the demo model's answer to it (distinct operands per run). */
export function question(i: number): { text: string; expected: string } {
  const a = 11 + (i % 89);
  const b = 3 + Math.floor(i / 89);
  return { text: `What is ${a} multiplied by ${b}?`, expected: `The result is ${a * b}.` };
}

/** POST with retries on 5xx and cut connections: the Idempotency-Key makes a retry return the original. */
async function post(
  url: string,
  body: unknown,
  key: string | null,
  auth: Record<string, string>,
  deadline: number,
  onRetry: (hung: boolean) => void,
): Promise<Record<string, unknown>> {
  for (;;) {
    let hung = false;
    try {
      const headers: Record<string, string> = { 'content-type': 'application/json', ...auth };
      if (key) headers['idempotency-key'] = key;
      // A request the failover left hanging (a backend of the lost leader, a cut the proxy never
      // reported) is given up after 15 s and sent again: the Idempotency-Key returns the original.
      const signal = AbortSignal.timeout(Math.max(1, Math.min(15_000, deadline - Date.now())));
      const r = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body), signal });
      const text = await r.text();
      if (r.status < 300) return JSON.parse(text) as Record<string, unknown>;
      if (r.status < 500 && r.status !== 429) throw new Error(`POST ${url}: ${r.status} ${text}`);
    } catch (e) {
      if (e instanceof Error && e.message.startsWith('POST ')) throw e;
      hung = e instanceof Error && e.name === 'TimeoutError';
    }
    onRetry(hung);
    if (Date.now() > deadline) throw new Error(`POST ${url}: no success before the deadline`);
    await delay(250);
  }
}

/** Reads a run's SSE stream until its terminal event, reconnecting with Last-Event-ID after any cut. */
async function watch(base: string, run: DrivenRun, auth: Record<string, string>, deadline: number): Promise<void> {
  let last: number | null = null;
  while (run.terminal === null && Date.now() < deadline) {
    const headers: Record<string, string> = { accept: 'text/event-stream', ...auth };
    if (last !== null) headers['last-event-id'] = String(last);
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), Math.max(1, deadline - Date.now()));
    try {
      const r = await fetch(`${base}/v1/runs/${run.runId}/events`, { headers, signal: abort.signal });
      if (r.status === 200 && r.body) {
        const parser = createParser({
          onEvent: (m) => {
            if (m.id === undefined) return;
            const id = Number(m.id);
            run.sseIds.push(id);
            last = id;
            if (TERMINAL.has(m.event ?? '')) run.terminal = m.event ?? null;
          },
        });
        const decoder = new TextDecoder();
        for await (const chunk of r.body as unknown as AsyncIterable<Uint8Array>)
          parser.feed(decoder.decode(chunk, { stream: true }));
      } else await r.text().catch(() => '');
    } catch {
      /* a cut stream: reconnect below */
    } finally {
      clearTimeout(timer);
    }
    if (run.terminal === null) {
      run.reconnects += 1;
      await delay(200);
    }
  }
}

async function driveOne(o: DriveOptions, index: number): Promise<DrivenRun> {
  const via = o.apis[index % o.apis.length];
  const watchedVia = o.apis[(index + 1) % o.apis.length];
  const { text, expected } = question(index);
  const deadline = Date.now() + o.runTimeoutMs;
  let retries = 0;
  let hangs = 0;
  const onRetry = (hung: boolean) => {
    retries += 1;
    if (hung) hangs += 1;
  };
  const auth: Record<string, string> = o.token ? { authorization: `Bearer ${o.token}` } : {};
  const run: DrivenRun = {
    index,
    sessionId: '',
    runId: '',
    expected,
    submittedVia: via,
    watchedVia,
    sseIds: [],
    terminal: null,
    reconnects: 0,
    submitRetries: 0,
    submitHangs: 0,
  };
  try {
    // A retried session creation may create a second, empty session: harmless, and counted.
    const session = await post(`${via}/v1/sessions`, {}, null, auth, deadline, onRetry);
    const sessionId = String(session.id);
    const submitted = await post(
      `${via}/v1/sessions/${sessionId}/messages`,
      { content: [{ type: 'text', text }] },
      `${o.keyPrefix}-${index}`,
      auth,
      deadline,
      onRetry,
    );
    Object.assign(run, { sessionId, runId: String(submitted.run_id) });
    await watch(watchedVia, run, auth, deadline);
  } catch (e) {
    run.error = e instanceof Error ? e.message : String(e);
  }
  run.submitRetries = retries;
  run.submitHangs = hangs;
  return run;
}

async function untilReady(apis: readonly string[], ms: number): Promise<void> {
  const end = Date.now() + ms;
  for (const base of apis)
    for (;;) {
      const ok = await fetch(`${base}/health/ready`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (ok) break;
      if (Date.now() > end) throw new Error(`${base} was not ready within ${ms} ms`);
      await delay(500);
    }
}

/** Drives `runs` calculator turns, `concurrency` at a time; never throws for a failed run (it is reported). */
export async function driveLoad(options: DriveOptions): Promise<DriveReport> {
  const o = { ...options, keyPrefix: options.keyPrefix ?? `drive-${Math.random().toString(36).slice(2, 10)}` };
  if (o.readyTimeoutMs) await untilReady(o.apis, o.readyTimeoutMs);
  const started = Date.now();
  const runs: DrivenRun[] = [];
  let next = 0;
  let done = 0;
  await Promise.all(
    Array.from({ length: Math.min(o.concurrency, o.runs) }, async () => {
      while (next < o.runs) {
        const r = await driveOne(o, next++);
        runs.push(r);
        if (r.terminal) o.onRunDone?.(++done);
      }
    }),
  );
  runs.sort((a, b) => a.index - b.index);
  return { runs, elapsedMs: Date.now() - started };
}

// As a program: `node drive.js '{"apis":[…],"runs":200,…}'`; progress on stderr, the report on stdout.
if (require.main === module) {
  const opts = JSON.parse(process.argv[2] ?? '{}') as DriveOptions;
  driveLoad({ ...opts, onRunDone: (n) => process.stderr.write(`done ${n}\n`) }).then(
    (report) => process.stdout.write(`${JSON.stringify(report)}\n`),
    (e: unknown) => {
      process.stderr.write(`drive failed: ${String(e)}\n`);
      process.exit(1);
    },
  );
}
