import { redactSecrets, StreamRedactor } from '../../../domain/events/stream-redaction';
import type { Logger } from '../../../ports/logger';
import type { TransientPublisher } from '../../../ports/run-store';
import type { Database } from '../database';

/** NOTIFY payloads must stay under 8000 bytes; we chunk text well below that. */
const MAX_CHUNK_CHARS = 1500;
/** Payloads per statement: a backlog is sent in a few round trips, not one huge one. */
const MAX_PAYLOADS_PER_STATEMENT = 200;
export const TRANSIENT_CHANNEL = 'agent_transient';
/** A progress message's longest published form (a server's words, not a log). */
const MAX_PROGRESS_MESSAGE = 500;

type Kind = 'text_delta' | 'reasoning_delta';

/** Text of one kind waiting to be sent, and the publishers waiting for it. */
interface Pending {
  readonly kind: Kind;
  text: string;
  readonly waiters: { resolve(): void; reject(e: unknown): void }[];
}

/** One run's deltas: at most one send in flight, the rest waiting in order. */
interface Lane {
  readonly sessionId: string;
  readonly runId: string;
  queue: Pending[];
}

/**
 * Publishes text/reasoning deltas through NOTIFY: live only, never stored, no SSE id.
 *
 * Per run, one send is in flight at a time. The first delta goes out once the current turn of the
 * event loop is over (`setImmediate`: the deltas of one burst join it, with no timer and no added
 * latency worth the name); deltas that arrive while a send is in flight are queued, consecutive
 * ones of the same kind concatenated (clients concatenate deltas anyway), and all of them go out in
 * one statement when it finishes. A fast stream (the fake model, a local server bursting chunks)
 * then costs a few round trips per turn instead of one per delta. Serialising a run's sends also
 * keeps its frames in order, which concurrent sends over pooled connections did not promise.
 *
 * `supersede` drops what a run has not sent yet when the text it previews is about to be committed
 * (a final answer: `assistant.message.completed` carries it whole, and clients replace the deltas
 * with it), so a turn whose answer arrives faster than its previews could be sent sends none.
 *
 * Every delta first goes through the events' credential scan (`StreamRedactor`, ADR 0042): a
 * credential is published as `[REDACTED:<pattern>]`, never raw. Text that could still become a
 * credential (a word starting `sk-`, a private-key block, …) is held per run and kind until it is
 * complete or the model's stream ends (`endOfStream`).
 */
export class PgTransientPublisher implements TransientPublisher {
  private readonly lanes = new Map<string, Lane>();
  /** Per run and kind: the redactor holding what may not be published yet. */
  private readonly redactors = new Map<string, StreamRedactor>();

  /** `log`, when given, hears of each credential kind redacted from a run's stream (never the value). */
  constructor(
    private readonly db: Database,
    private readonly log?: Logger,
  ) {}

  /**
   * Resolves once `frame.text` (redacted, and as far as it is not held back) has been sent, rejects
   * if that send failed (callers ignore it).
   */
  publish(frame: { sessionId: string; runId: string; kind: Kind; text: string }): Promise<void> {
    const rkey = `${frame.sessionId}\u0000${frame.runId}\u0000${frame.kind}`;
    let redactor = this.redactors.get(rkey);
    if (!redactor) this.redactors.set(rkey, (redactor = new StreamRedactor()));
    const seen = redactor.kinds.length;
    const text = redactor.push(frame.text);
    this.reportRedactions(frame, redactor, seen);
    return this.enqueue({ ...frame, text });
  }

  private reportRedactions(
    frame: { sessionId: string; runId: string; kind: Kind },
    redactor: StreamRedactor,
    seen: number,
  ): void {
    for (const pattern of redactor.kinds.slice(seen))
      this.log?.warn('credential redacted from a transient frame', {
        sessionId: frame.sessionId,
        runId: frame.runId,
        frameKind: frame.kind,
        pattern,
      });
  }

  /** The model's stream of this run ended: what the redactors held is published, redacted. */
  endOfStream(sessionId: string, runId: string): Promise<void> {
    const sends: Promise<void>[] = [];
    for (const kind of ['text_delta', 'reasoning_delta'] as const) {
      const rkey = `${sessionId}\u0000${runId}\u0000${kind}`;
      const redactor = this.redactors.get(rkey);
      if (!redactor) continue;
      this.redactors.delete(rkey);
      const seen = redactor.kinds.length;
      const text = redactor.end();
      this.reportRedactions({ sessionId, runId, kind }, redactor, seen);
      sends.push(this.enqueue({ sessionId, runId, kind, text }));
    }
    return Promise.all(sends).then(() => undefined);
  }

  /**
   * A tool call's progress: one NOTIFY of its own (not joined with deltas: each report stands
   * alone), the message credential-scanned and cut to MAX_PROGRESS_MESSAGE characters.
   */
  async progress(frame: {
    sessionId: string;
    runId: string;
    invocationId: string;
    toolName: string;
    progress: number;
    total: number | null;
    message: string | null;
  }): Promise<void> {
    const message = frame.message === null ? '' : redactSecrets(frame.message.slice(0, MAX_PROGRESS_MESSAGE)).text;
    const payload = JSON.stringify({
      s: frame.sessionId,
      r: frame.runId,
      k: 'tool.call.progress',
      t: message,
      g: { i: frame.invocationId, n: frame.toolName, p: frame.progress, T: frame.total },
    });
    await this.db.query({
      name: 'agent_transient_progress',
      text: 'SELECT pg_notify($1, $2)',
      values: [TRANSIENT_CHANNEL, payload],
    });
  }

  private enqueue(frame: { sessionId: string; runId: string; kind: Kind; text: string }): Promise<void> {
    if (frame.text.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      const key = `${frame.sessionId}\u0000${frame.runId}`;
      const waiter = { resolve, reject };
      const lane = this.lanes.get(key);
      if (lane) {
        const last = lane.queue.at(-1);
        if (last && last.kind === frame.kind) {
          last.text += frame.text;
          last.waiters.push(waiter);
        } else {
          lane.queue.push({ kind: frame.kind, text: frame.text, waiters: [waiter] });
        }
        return;
      }
      const fresh: Lane = {
        sessionId: frame.sessionId,
        runId: frame.runId,
        queue: [{ kind: frame.kind, text: frame.text, waiters: [waiter] }],
      };
      this.lanes.set(key, fresh);
      setImmediate(() => void this.drain(key, fresh));
    });
  }

  /**
   * The run's streamed text is about to be committed whole (its final answer): deltas not sent yet
   * are dropped, their publishers resolved (nothing failed; the committed text replaces them), and
   * so is what the redactors held back. A send already in flight completes.
   */
  supersede(sessionId: string, runId: string): void {
    // What the redactors hold is part of the same preview: dropped with it.
    for (const kind of ['text_delta', 'reasoning_delta'])
      this.redactors.delete(`${sessionId}\u0000${runId}\u0000${kind}`);
    const lane = this.lanes.get(`${sessionId}\u0000${runId}`);
    if (!lane) return;
    const dropped = lane.queue;
    lane.queue = [];
    for (const p of dropped) for (const w of p.waiters) w.resolve();
  }

  /** Sends the lane's queue, batch after batch, until nothing arrived during the last send. */
  private async drain(key: string, lane: Lane): Promise<void> {
    while (lane.queue.length > 0) {
      const batch = lane.queue;
      lane.queue = [];
      const payloads = batch.flatMap((p) =>
        chunks(p.text).map((t) => JSON.stringify({ s: lane.sessionId, r: lane.runId, k: p.kind, t })),
      );
      try {
        for (const group of statements(payloads)) {
          // Named: parsed and planned once per pooled connection, not for every send. The NOTIFYs
          // of one statement (one transaction) are delivered in the order they were issued.
          await this.db.query({
            name: 'agent_transient_notify',
            text: 'SELECT count(pg_notify($1, p)) FROM unnest($2::text[]) AS p',
            values: [TRANSIENT_CHANNEL, group],
          });
        }
        for (const p of batch) for (const w of p.waiters) w.resolve();
      } catch (e) {
        // Live-only frames: a lost batch is not retried; later deltas still go out.
        for (const p of batch) for (const w of p.waiters) w.reject(e);
      }
    }
    this.lanes.delete(key);
  }
}

/** `text` in pieces of at most MAX_CHUNK_CHARS, never splitting a surrogate pair. */
function chunks(text: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length;) {
    let end = Math.min(i + MAX_CHUNK_CHARS, text.length);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && end - 1 > i && last >= 0xd800 && last <= 0xdbff) end--;
    out.push(text.slice(i, end));
    i = end;
  }
  return out;
}

/**
 * Groups payloads into statements. PostgreSQL delivers identical payloads on one channel within one
 * transaction only once, so a repeat (the same chunk twice, e.g. a long run of one character) starts
 * a new statement instead of being folded away.
 */
function statements(payloads: readonly string[]): string[][] {
  const out: string[][] = [];
  let group: string[] = [];
  let seen = new Set<string>();
  for (const p of payloads) {
    if (seen.has(p) || group.length >= MAX_PAYLOADS_PER_STATEMENT) {
      out.push(group);
      group = [];
      seen = new Set();
    }
    group.push(p);
    seen.add(p);
  }
  if (group.length > 0) out.push(group);
  return out;
}
