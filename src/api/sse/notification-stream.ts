import type { Principal } from '../../domain/principal';
import type {
  FeedSubscription,
  NotificationFeed,
  NotificationFeedListener,
  NotificationNotice,
} from '../../ports/event-feed';
import type { Logger } from '../../ports/logger';
import { streamIdOf, type NotificationInbox, type StreamPosition } from '../../ports/notifications';
import { presentNotification } from '../presenters';
import type { SseSink } from './event-stream';
import { SseFrame } from './sse-frame';

const RETRY = SseFrame.of('retry: 1000\n\n');
const HEARTBEAT = SseFrame.of(': heartbeat\n\n');
const PAGE = 200;
/** A row behind the horizon (its transaction was still running, or an older one was) is looked for again after this. */
const HELD_RETRY_MS = 100;

/** One client of the notification stream, nudged by the hub when its tenant gets a notification. */
export interface NotificationClient {
  readonly principal: Principal;
  nudge(): void;
}

/**
 * The process's notification stream clients over its one LISTEN connection (the feed's
 * `agent_notifications` channel). A notice names the tenant and the recipients; only clients of that
 * tenant whose principal is named (or, for "the session's owner", every client of the tenant) read.
 */
export class NotificationHubs implements NotificationFeedListener {
  private readonly byTenant = new Map<string, Set<NotificationClient>>();
  private subscription: Promise<FeedSubscription> | null = null;

  constructor(private readonly feed: NotificationFeed) {}

  /** Resolves once notices are being received: a read after this misses nothing. */
  async attach(client: NotificationClient): Promise<() => void> {
    const tenant = client.principal.tenantId;
    let set = this.byTenant.get(tenant);
    if (!set) this.byTenant.set(tenant, (set = new Set()));
    set.add(client);
    const detach = () => {
      const s = this.byTenant.get(tenant);
      s?.delete(client);
      if (s?.size === 0) this.byTenant.delete(tenant);
    };
    if (!this.subscription) {
      this.subscription = this.feed.subscribeNotifications(this);
      this.subscription.catch(() => (this.subscription = null));
    }
    try {
      await this.subscription;
    } catch (e) {
      detach();
      throw e;
    }
    return detach;
  }

  notified(n: NotificationNotice): void {
    const owners = n.principalIds.includes(null);
    for (const c of [...(this.byTenant.get(n.tenantId) ?? [])])
      if (owners || n.principalIds.includes(c.principal.principalId)) c.nudge();
  }

  resynchronize(): void {
    for (const set of this.byTenant.values()) for (const c of [...set]) c.nudge();
  }

  clientCount(): number {
    let n = 0;
    for (const s of this.byTenant.values()) n += s.size;
    return n;
  }
}

export interface NotificationStreamOptions {
  readonly principal: Principal;
  /** Last-Event-ID: the stream position the client already has (null: from the start). */
  readonly after: StreamPosition | null;
  readonly heartbeatMs: number;
  readonly maxBufferedBytes: number;
}

/**
 * `GET /v1/notifications/events` for one client (ADR 0036), shaped like the run streams: attach to
 * the hub (the LISTEN is active), replay from the database after Last-Event-ID, then read again on
 * every nudge. Frames carry `id: <transaction>-<position>`; reads only ever move forward, and only
 * over rows whose transaction is behind every running one, so nothing is skipped or sent twice.
 */
export class NotificationStream implements NotificationClient {
  private last: StreamPosition | null;
  private reading = false;
  private again = false;
  private ended = false;
  private heartbeat: NodeJS.Timeout | null = null;
  private heldTimer: NodeJS.Timeout | null = null;
  private detach: (() => void) | null = null;
  private resolveEnd: () => void = () => undefined;

  constructor(
    private readonly sink: SseSink,
    private readonly inbox: NotificationInbox,
    private readonly hubs: NotificationHubs,
    private readonly opts: NotificationStreamOptions,
    private readonly log?: Logger,
  ) {
    this.last = opts.after;
  }

  get principal(): Principal {
    return this.opts.principal;
  }

  /** Streams until the client goes away (or a read fails). */
  async run(onEnd: (listener: () => void) => void): Promise<void> {
    const finished = new Promise<void>((resolve) => (this.resolveEnd = resolve));
    onEnd(() => this.end());
    this.write(RETRY);
    this.heartbeat = setInterval(() => this.write(HEARTBEAT), this.opts.heartbeatMs);
    this.heartbeat.unref();
    try {
      this.detach = await this.hubs.attach(this);
      if (this.ended) this.detach();
      else await this.read();
    } catch (e) {
      this.fail(e);
    }
    return finished;
  }

  nudge(): void {
    if (!this.ended) void this.read().catch((e: unknown) => this.fail(e));
  }

  /** Reads after the last position until nothing new is visible and no nudge arrived meanwhile. */
  private async read(): Promise<void> {
    if (this.reading) {
      this.again = true;
      return;
    }
    this.reading = true;
    try {
      for (;;) {
        this.again = false;
        const page = await this.inbox.streamAfter(this.opts.principal, this.last, PAGE);
        for (const n of page.items) {
          if (this.ended) return;
          this.last = n.at;
          this.write(
            SseFrame.of(
              `id: ${streamIdOf(n.at)}\nevent: notification\ndata: ${JSON.stringify(presentNotification(n))}\n\n`,
            ),
          );
        }
        if (this.ended) return;
        if (page.held && !this.heldTimer) {
          this.heldTimer = setTimeout(() => {
            this.heldTimer = null;
            this.nudge();
          }, HELD_RETRY_MS);
          this.heldTimer.unref();
        }
        if (page.items.length < PAGE && !this.again) return;
      }
    } finally {
      this.reading = false;
    }
  }

  private write(frame: SseFrame): void {
    if (this.ended || this.sink.closed) return;
    this.sink.write(frame);
    // A client that cannot keep up is cut off; it reconnects with Last-Event-ID and replays.
    if (this.sink.bufferedBytes > this.opts.maxBufferedBytes) this.end();
  }

  private fail(e: unknown): void {
    this.log?.warn('notification stream failed', { error: e instanceof Error ? e.message : String(e) });
    this.end();
  }

  private end(): void {
    if (this.ended) return;
    this.ended = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    if (this.heldTimer) clearTimeout(this.heldTimer);
    this.detach?.();
    if (!this.sink.closed) this.sink.end();
    this.resolveEnd();
  }
}
