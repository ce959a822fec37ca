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

/**
 * One hub per session with clients on this process. On each append notice the hub reads the new
 * events once and hands the same batch to every client, so 1,000 clients following a session cost
 * one query per append, not 1,000. Reads are chained so batches arrive in sequence order.
 */
class SessionHub implements FeedListener {
  readonly clients = new Set<StreamClient>();
  subscription: FeedSubscription | null = null;
  private chain: Promise<void> = Promise.resolve();

  constructor(
    private readonly sessionId: string,
    private readonly store: EventStore,
    private readonly log: Logger | undefined,
  ) {}

  appended(n: { tenantId: string; from: number; to: number }): void {
    this.chain = this.chain.then(async () => {
      if (this.clients.size === 0) return;
      const reader: Principal = {
        tenantId: n.tenantId,
        principalId: 'sse-fanout',
        roles: new Set(),
        scopes: new Set(),
      };
      let events: StoredEvent[];
      try {
        events = await this.store.listAfter(this.sessionId, n.from - 1, reader, n.to - n.from + 1);
      } catch (e) {
        this.log?.warn('SSE fan-out read failed; clients re-read', {
          sessionId: this.sessionId,
          error: e instanceof Error ? e.message : String(e),
        });
        return this.resynchronize();
      }
      for (const c of [...this.clients]) c.live(events);
    });
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
