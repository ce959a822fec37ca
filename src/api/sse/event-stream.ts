import type { StoredEvent } from '../../domain/events/payloads';
import type { Principal } from '../../domain/principal';
import type { TransientNotice } from '../../ports/event-feed';
import type { EventStore } from '../../ports/event-store';
import type { Logger } from '../../ports/logger';
import { presentEvent } from '../presenters';
import { SseFrame } from './sse-frame';
import type { StreamClient, StreamHubs } from './stream-hubs';

const TERMINAL = new Set(['run.completed', 'run.failed', 'run.cancelled']);

/**
 * The frame of a persisted event, serialized and encoded once: the hub hands the same event objects
 * to every client of a session, so 1,000 clients cost one JSON.stringify, one encoding and one chunk
 * header per event, not 1,000, and every client's socket is given the same bytes.
 */
const frames = new WeakMap<StoredEvent, SseFrame>();
function frameOf(e: StoredEvent): SseFrame {
  let f = frames.get(e);
  if (f === undefined) {
    f = SseFrame.of(`id: ${e.sequence}\nevent: ${e.type}\ndata: ${JSON.stringify(presentEvent(e))}\n\n`);
    frames.set(e, f);
  }
  return f;
}

/**
 * The frames of a whole batch as one chunk, built once per batch: a client that takes every event
 * of a live batch (a session stream that is up to date) gets one write for the batch.
 */
const batchFrames = new WeakMap<readonly StoredEvent[], SseFrame>();
function batchFrameOf(events: readonly StoredEvent[]): SseFrame {
  let f = batchFrames.get(events);
  if (f === undefined) {
    f = events.length === 1 ? frameOf(events[0]) : SseFrame.concat(events.map(frameOf));
    batchFrames.set(events, f);
  }
  return f;
}
/** A transient delta's frame (no `id:`), encoded once for every client the hub hands the notice to. */
const transientFrames = new WeakMap<TransientNotice, SseFrame>();
function transientFrameOf(n: TransientNotice): SseFrame {
  let f = transientFrames.get(n);
  if (f === undefined) {
    const data = n.progress
      ? {
          type: n.kind,
          run_id: n.runId,
          invocation_id: n.progress.invocationId,
          tool_name: n.progress.toolName,
          progress: n.progress.progress,
          total: n.progress.total,
          message: n.text === '' ? null : n.text,
        }
      : { type: n.kind, run_id: n.runId, text: n.text };
    f = SseFrame.of(`event: ${n.kind}\ndata: ${JSON.stringify(data)}\n\n`);
    transientFrames.set(n, f);
  }
  return f;
}

const RETRY = SseFrame.of('retry: 1000\n\n');
const HEARTBEAT = SseFrame.of(': heartbeat\n\n');

const PAGE = 500;

/** Where an SSE stream writes its frames (an HTTP response; see sse-response.ts). */
export interface SseSink {
  write(frame: SseFrame): void;
  end(): void;
  /** Bytes written but not yet handed to the kernel. */
  readonly bufferedBytes: number;
  /** The connection is gone. */
  readonly closed: boolean;
}

export interface StreamOptions {
  readonly sessionId: string;
  /** Only this run's events (a run stream), or every event of the session. */
  readonly runId: string | null;
  /** Last-Event-ID: the session sequence the client already has. */
  readonly afterSequence: number;
  readonly principal: Principal;
  /** The run was already terminal when the client connected: end once the replay is done. */
  readonly endAfterReplay: boolean;
  readonly heartbeatMs: number;
  readonly maxBufferedBytes: number;
}

/**
 * One SSE client (ADR 0011). Order of operations on connect: attach to the hub (the
 * LISTEN is active), replay from the database after Last-Event-ID, then forward live batches.
 * Everything is de-duplicated by session sequence: `lastSent` only grows, a batch that starts past
 * `lastSent + 1` (a gap) or a resynchronize makes the client re-read the log, and batches that
 * arrive while it is reading are dropped in favour of one more read. Persisted frames carry
 * `id: <sequence>`; transient deltas carry none.
 */
export class EventStream implements StreamClient {
  private lastSent: number;
  private reading = false;
  private again = false;
  private ended = false;
  private heartbeat: NodeJS.Timeout | null = null;
  private detach: (() => void) | null = null;

  constructor(
    private readonly sink: SseSink,
    private readonly store: EventStore,
    private readonly hubs: StreamHubs,
    private readonly opts: StreamOptions,
    private readonly log?: Logger,
  ) {
    this.lastSent = opts.afterSequence;
  }

  /** Starts streaming; resolves when the stream has ended (client gone, run over, or error). */
  async run(onEnd: (listener: () => void) => void): Promise<void> {
    const finished = new Promise<void>((resolve) => (this.resolveEnd = resolve));
    onEnd(() => this.end());
    this.write(RETRY);
    this.heartbeat = setInterval(() => this.write(HEARTBEAT), this.opts.heartbeatMs);
    this.heartbeat.unref();
    try {
      this.detach = await this.hubs.attach(this.opts.sessionId, this);
      if (this.ended) {
        this.detach();
        return await finished;
      }
      await this.readLog();
      if (this.opts.endAfterReplay) this.end();
    } catch (e) {
      this.log?.warn('SSE stream failed', {
        sessionId: this.opts.sessionId,
        error: e instanceof Error ? e.message : String(e),
      });
      this.end();
    }
    return finished;
  }

  private resolveEnd: () => void = () => undefined;

  live(events: readonly StoredEvent[]): void {
    if (this.ended) return;
    if (this.reading) {
      this.again = true;
      return;
    }
    // Keep the hub's own array when nothing is filtered out, so its batch frame is shared.
    const fresh =
      events.length > 0 && events[0].sequence > this.lastSent
        ? events
        : events.filter((e) => e.sequence > this.lastSent);
    if (fresh.length === 0) return;
    if (fresh[0].sequence !== this.lastSent + 1) return void this.readLog().catch((e: unknown) => this.fail(e));
    this.deliver(fresh);
  }

  transient(n: TransientNotice): void {
    if (this.ended || (this.opts.runId !== null && n.runId !== this.opts.runId)) return;
    this.write(transientFrameOf(n));
  }

  resynchronize(): void {
    if (!this.ended) void this.readLog().catch((e: unknown) => this.fail(e));
  }

  /** Reads the log after `lastSent` until it is exhausted and no live batch arrived meanwhile. */
  private async readLog(): Promise<void> {
    if (this.reading) {
      this.again = true;
      return;
    }
    this.reading = true;
    try {
      for (;;) {
        this.again = false;
        const page = await this.store.listAfter(this.opts.sessionId, this.lastSent, this.opts.principal, PAGE);
        this.deliver(page);
        if (this.ended) return;
        if (page.length < PAGE && !this.again) return;
      }
    } finally {
      this.reading = false;
    }
  }

  private deliver(events: readonly StoredEvent[]): void {
    // The common live case: a session stream receiving a whole batch it has not seen yet.
    if (this.opts.runId === null && events.length > 0 && events[0].sequence === this.lastSent + 1) {
      let contiguous = true;
      for (let i = 1; i < events.length && contiguous; i++)
        contiguous = events[i].sequence === events[i - 1].sequence + 1;
      if (contiguous) {
        this.lastSent = events[events.length - 1].sequence;
        this.write(batchFrameOf(events));
        return;
      }
    }
    for (const e of events) {
      if (this.ended) return;
      if (e.sequence <= this.lastSent) continue;
      this.lastSent = e.sequence;
      if (this.opts.runId !== null && e.runId !== this.opts.runId) continue;
      this.write(frameOf(e));
      if (this.opts.runId !== null && TERMINAL.has(e.type)) this.end();
    }
  }

  private write(frame: SseFrame): void {
    if (this.ended || this.sink.closed) return;
    this.sink.write(frame);
    // A client that cannot keep up is cut off rather than buffered without bound; it reconnects
    // with Last-Event-ID and replays from the database.
    if (this.sink.bufferedBytes > this.opts.maxBufferedBytes) this.end();
  }

  private fail(e: unknown): void {
    this.log?.warn('SSE read failed', {
      sessionId: this.opts.sessionId,
      error: e instanceof Error ? e.message : String(e),
    });
    this.end();
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.detach?.();
    if (!this.sink.closed) this.sink.end();
    this.resolveEnd();
  }
}
