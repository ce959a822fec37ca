import { createParser } from 'eventsource-parser';
import type { RunningApi } from '../running-api';
import { EXIT } from '../exit-codes';
import { formatEvent } from '../format-event';
import { approvalHint, questionHint } from '../run-hints';
import type { EventPayloads, StoredEvent } from '../../domain/events/payloads';
import { RUN_ENDING_EVENTS } from '../../domain/run/status';

/**
 * `agent run "<message>"` against a running platform, through its HTTP API: create the session (or
 * use `--session`), submit, stream `GET /v1/runs/{id}/events` and print the same lines as the
 * in-process path. The platform's own workers execute the run. Nothing here loads Nest, TypeORM
 * or pg, which is what makes it fast (ADR 0028).
 */
export interface HttpRunOpts {
  readonly session?: string;
  readonly idempotencyKey?: string;
  readonly waitTimeout: string;
}

/** An API refusal carrying the CLI exit code of its status, for withExitCode below. */
class ApiRefusal extends Error {
  constructor(
    message: string,
    readonly exit: number,
  ) {
    super(message);
  }
}

function exitForStatus(status: number): number {
  if (status === 400 || status === 413 || status === 401 || status === 403) return EXIT.usage;
  if (status === 404) return EXIT.notFound;
  if (status === 409) return EXIT.conflict;
  return EXIT.unavailable;
}

async function call<T>(
  api: RunningApi,
  method: string,
  path: string,
  body?: unknown,
  headers: Record<string, string> = {},
): Promise<T> {
  const r = await fetch(`${api.base}${path}`, {
    method,
    headers: {
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(api.token ? { authorization: `Bearer ${api.token}` } : {}),
      ...headers,
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  const parsed = text ? (JSON.parse(text) as unknown) : null;
  if (r.ok) return parsed as T;
  const message = (parsed as { error?: { message?: string } } | null)?.error?.message ?? `HTTP ${r.status}`;
  throw new ApiRefusal(message, exitForStatus(r.status));
}

/** The API's wire event (`GET /v1/runs/{id}/events`) in the shape the terminal formatter reads. */
export interface WireEvent {
  readonly type: string;
  readonly sequence: number;
  readonly run_id: string | null;
  readonly created_at: string;
  readonly payload: Record<string, unknown>;
}

/** The wire's snake_case keys back to the domain's camelCase; the same opaque fields as the presenter. */
const OPAQUE = new Set(['arguments', 'result', 'metadata', 'request']);
const camelCase = (k: string): string => k.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());
function camelPayload(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(camelPayload);
  if (v === null || typeof v !== 'object') return v;
  return Object.fromEntries(
    Object.entries(v as Record<string, unknown>).map(([k, x]) => [camelCase(k), OPAQUE.has(k) ? x : camelPayload(x)]),
  );
}

/** Only what formatEvent and the hints read; the rest of a stored event is not on the wire. */
export function displayEvent(w: WireEvent, sessionId: string): StoredEvent {
  return {
    id: 0,
    sessionId,
    runId: w.run_id,
    sequence: w.sequence,
    type: w.type,
    schemaVersion: 0,
    data: camelPayload(w.payload),
    actorType: 'system',
    actorId: null,
    tenantId: '',
    traceId: null,
    createdAt: w.created_at,
  } as StoredEvent;
}

/** Streams the run's SSE until its terminal event (resolved) or the timeout (null). */
async function streamRun(
  api: RunningApi,
  runId: string,
  onEvent: (w: WireEvent) => void,
  timeoutMs: number,
): Promise<WireEvent | null> {
  const abort = new AbortController();
  const timer = setTimeout(() => abort.abort(), timeoutMs);
  let terminal: WireEvent | null = null;
  const parser = createParser({
    onEvent: (m) => {
      if (terminal) return;
      const w = JSON.parse(m.data) as WireEvent;
      if (typeof w.sequence !== 'number') return; // transient frames (streamed deltas) are not printed
      onEvent(w);
      if (RUN_ENDING_EVENTS.has(w.type)) terminal = w;
    },
  });
  try {
    const r = await fetch(`${api.base}/v1/runs/${runId}/events`, {
      headers: { accept: 'text/event-stream', ...(api.token ? { authorization: `Bearer ${api.token}` } : {}) },
      signal: abort.signal,
    });
    if (!r.ok || !r.body) throw new ApiRefusal(`the run's event stream answered ${r.status}`, exitForStatus(r.status));
    const decoder = new TextDecoder();
    for await (const chunk of r.body) {
      parser.feed(decoder.decode(chunk, { stream: true }));
      if (terminal) break;
    }
    return terminal;
  } catch (e) {
    if (abort.signal.aborted) return terminal;
    throw e;
  } finally {
    clearTimeout(timer);
    abort.abort();
  }
}

export async function runMessageOverHttp(api: RunningApi, text: string, opts: HttpRunOpts): Promise<number> {
  try {
    const sessionId = opts.session ?? (await call<{ id: string }>(api, 'POST', '/v1/sessions', {})).id;
    const submitted = await call<{ run_id: string }>(
      api,
      'POST',
      `/v1/sessions/${sessionId}/messages`,
      { content: [{ type: 'text', text }] },
      opts.idempotencyKey ? { 'idempotency-key': opts.idempotencyKey } : {},
    );
    const runId = submitted.run_id;
    process.stdout.write(`run ${runId} (session ${sessionId})\n`);
    let answer: string | null = null;
    const terminal = await streamRun(
      api,
      runId,
      (w) => {
        const e = displayEvent(w, sessionId);
        if (e.type === 'assistant.message.completed') answer = e.data.text;
        if (e.type === 'approval.requested') process.stdout.write(approvalHint(e.data));
        if (e.type === 'run.waiting_for_user') process.stdout.write(questionHint(runId, e.data));
        process.stdout.write(`${formatEvent(e)}\n`);
      },
      Number(opts.waitTimeout) * 1000,
    );
    return finish(runId, terminal, answer, opts.waitTimeout);
  } catch (e) {
    if (!(e instanceof ApiRefusal)) throw e;
    process.stderr.write(`error: ${e.message}\n`);
    return e.exit;
  }
}

function finish(runId: string, terminal: WireEvent | null, answer: string | null, waitTimeout: string): number {
  if (!terminal) {
    process.stderr.write(`run ${runId} did not finish within ${waitTimeout}s; it continues (agent run get ${runId})\n`);
    return EXIT.failed;
  }
  if (answer !== null) process.stdout.write(`\n${answer}\n`);
  if (terminal.type === 'run.failed') {
    const f = terminal.payload as EventPayloads['run.failed'];
    process.stdout.write(`\nrun failed: ${f.reason}: ${f.message}\n`);
  }
  if (terminal.type === 'run.cancelled') process.stdout.write('\nrun cancelled\n');
  return terminal.type === 'run.completed' ? EXIT.ok : EXIT.failed;
}
