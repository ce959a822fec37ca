import type { StoredEvent } from '../../domain/events/payloads';
import type { Principal } from '../../domain/principal';
import type { EventFeed, FeedListener, FeedSubscription, TransientNotice } from '../../ports/event-feed';
import type { EventStore } from '../../ports/event-store';
import type { Logger } from '../../ports/logger';

/** What a hub delivers to one SSE client. */
export interface StreamClient {
  /** Events of one committed append, in sequence order (read once per process, shared). */
  live(events: readonly StoredEvent[]): void;
  transient(notice: TransientNotice): void;
  /** Notices may have been lost: re-read the log from the last sequence sent. */
  resynchronize(): void;
}

/** The most events one fan-out read takes; a longer merged range is read in several reads. */
const MAX_READ = 500;

/**
 * One hub per session with clients on this process. On each append notice the hub reads the new
 * events once and hands the same batch to every client, so 1,000 clients cost one query per append,
 * not 1,000. One read runs at a time, so batches arrive in sequence order; notices that arrive while
 * a read or a fan-out is in progress are merged into one range and read (and written to each client)
 * together once it is done, so a hub that falls behind catches up with fewer reads and writes instead
 * of queueing one per append. No notice is ever delayed to wait for others.
 */
class SessionHub implements FeedListener {
  readonly clients = new Set<StreamClient>();
  subscription: FeedSubscription | null = null;
  /** The sequences noticed but not read yet. */
  private pending: { tenantId: string; from: number; to: number } | null = null;
  private draining = false;

  constructor(
    private readonly sessionId: string,
    private readonly store: EventStore,
    private readonly log: Logger | undefined,
  ) {}

  appended(n: { tenantId: string; from: number; to: number }): void {
    const p = this.pending;
    if (p === null) this.pending = { tenantId: n.tenantId, from: n.from, to: n.to };
    else {
      p.from = Math.min(p.from, n.from);
      p.to = Math.max(p.to, n.to);
    }
    if (!this.draining) void this.drain();
  }

  private async drain(): Promise<void> {
    this.draining = true;
    try {
      while (this.pending !== null) {
        const n = this.pending;
        this.pending = null;
        if (this.clients.size === 0) continue;
        const reader: Principal = {
          tenantId: n.tenantId,
          principalId: 'sse-fanout',
          roles: new Set(),
          scopes: new Set(),
        };
        const limit = Math.min(n.to - n.from + 1, MAX_READ);
        let events: StoredEvent[];
        try {
          events = await this.store.listAfter(this.sessionId, n.from - 1, reader, limit);
        } catch (e) {
          this.log?.warn('SSE fan-out read failed; clients re-read', {
            sessionId: this.sessionId,
            error: e instanceof Error ? e.message : String(e),
          });
          this.resynchronize();
          continue;
        }
        // The rest of a range longer than one read comes next (before anything noticed meanwhile).
        if (events.length === limit && n.from + limit <= n.to) {
          const rest = { tenantId: n.tenantId, from: n.from + limit, to: n.to };
          const p = this.pending as { tenantId: string; from: number; to: number } | null;
          this.pending =
            p === null
              ? rest
              : { tenantId: n.tenantId, from: Math.min(p.from, rest.from), to: Math.max(p.to, rest.to) };
        }
        for (const c of [...this.clients]) c.live(events);
      }
    } finally {
      this.draining = false;
    }
  }

  transient(n: TransientNotice): void {
    for (const c of [...this.clients]) c.transient(n);
  }

  resynchronize(): void {
    for (const c of [...this.clients]) c.resynchronize();
  }
}

/** The per-process registry of session hubs, over the process's single feed connection. */
export class StreamHubs {
  private readonly hubs = new Map<string, SessionHub>();
  private readonly ready = new Map<string, Promise<void>>();

  constructor(
    private readonly feed: EventFeed,
    private readonly store: EventStore,
    private readonly log?: Logger,
  ) {}

  /** Resolves once notices for the session are being received: a read after this misses nothing. */
  async attach(sessionId: string, client: StreamClient): Promise<() => void> {
    let hub = this.hubs.get(sessionId);
    if (!hub) {
      const created = new SessionHub(sessionId, this.store, this.log);
      hub = created;
      this.hubs.set(sessionId, created);
      const subscribing = this.feed.subscribe(sessionId, created).then((s) => {
        created.subscription = s;
        if (this.hubs.get(sessionId) !== created) s.close(); // everyone left while we subscribed
      });
      this.ready.set(sessionId, subscribing);
      subscribing.catch(() => {
        if (this.hubs.get(sessionId) === created) {
          this.hubs.delete(sessionId);
          this.ready.delete(sessionId);
        }
      });
    }
    hub.clients.add(client);
    const target = hub;
    const detach = () => {
      target.clients.delete(client);
      if (target.clients.size === 0 && this.hubs.get(sessionId) === target) {
        this.hubs.delete(sessionId);
        this.ready.delete(sessionId);
        target.subscription?.close();
      }
    };
    try {
      await this.ready.get(sessionId);
    } catch (e) {
      detach();
      throw e;
    }
    return detach;
  }

  /** Connected SSE clients on this process. */
  clientCount(): number {
    let n = 0;
    for (const h of this.hubs.values()) n += h.clients.size;
    return n;
  }
}
