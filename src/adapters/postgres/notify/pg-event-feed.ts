import createSubscriber, { type Subscriber } from 'pg-listen';
import type {
  AppendNotice,
  EventFeed,
  FeedListener,
  FeedSubscription,
  NotificationFeed,
  NotificationFeedListener,
  NotificationNotice,
  TransientNotice,
} from '../../../ports/event-feed';
import type { Logger } from '../../../ports/logger';
import { TRANSIENT_CHANNEL } from './pg-transient-publisher';

/** The channel PgEventStore notifies after each committed append. */
export const EVENTS_CHANNEL = 'agent_events';
/** The channel the append statement notifies when it creates notification rows (ADR 0036). */
export const NOTIFICATIONS_CHANNEL = 'agent_notifications';

/**
 * One LISTEN connection per process (opened on the first subscription) that fans committed-append
 * and transient notices out to every listener of the session. No listener ever holds a database
 * connection of its own. After a reconnect every listener is told to re-read the log, because
 * PostgreSQL drops the NOTIFYs sent while nobody was listening.
 */
export class PgEventFeed implements EventFeed, NotificationFeed {
  private readonly listeners = new Map<string, Set<FeedListener>>();
  private readonly notificationListeners = new Set<NotificationFeedListener>();
  private starting: Promise<Subscriber> | null = null;
  private connectedOnce = false;
  private closed = false;

  constructor(
    private readonly url: string,
    private readonly log: Logger,
  ) {}

  async subscribe(sessionId: string, listener: FeedListener): Promise<FeedSubscription> {
    if (this.closed) throw new Error('event feed is closed');
    let set = this.listeners.get(sessionId);
    if (!set) this.listeners.set(sessionId, (set = new Set()));
    set.add(listener);
    try {
      await this.ensureStarted();
    } catch (e) {
      this.remove(sessionId, listener);
      throw e;
    }
    return { close: () => this.remove(sessionId, listener) };
  }

  async subscribeNotifications(listener: NotificationFeedListener): Promise<FeedSubscription> {
    if (this.closed) throw new Error('event feed is closed');
    this.notificationListeners.add(listener);
    try {
      await this.ensureStarted();
    } catch (e) {
      this.notificationListeners.delete(listener);
      throw e;
    }
    return { close: () => this.notificationListeners.delete(listener) };
  }

  /** Listeners currently attached (for tests and the benchmark). */
  listenerCount(): number {
    let n = 0;
    for (const set of this.listeners.values()) n += set.size;
    return n;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    this.notificationListeners.clear();
    const starting = this.starting;
    this.starting = null;
    if (starting) await (await starting.catch(() => null))?.close().catch(() => undefined);
  }

  /** Nest lifecycle hook: the API process closes its LISTEN connection on shutdown. */
  async onApplicationShutdown(): Promise<void> {
    await this.close();
  }

  private remove(sessionId: string, listener: FeedListener): void {
    const set = this.listeners.get(sessionId);
    if (!set) return;
    set.delete(listener);
    if (set.size === 0) this.listeners.delete(sessionId);
  }

  private ensureStarted(): Promise<Subscriber> {
    if (!this.starting) {
      this.starting = this.start();
      this.starting.catch(() => (this.starting = null));
    }
    return this.starting;
  }

  private async start(): Promise<Subscriber> {
    const sub = createSubscriber(
      { connectionString: this.url, application_name: 'agent-core-sse' },
      { retryInterval: 500, retryLimit: Infinity, retryTimeout: Infinity, paranoidChecking: 10_000 },
    );
    sub.events.on('error', (e: Error) => this.log.error('event feed LISTEN failed permanently', { error: e.message }));
    sub.events.on('reconnect', (attempt: number) => this.log.warn('event feed reconnecting', { attempt }));
    sub.events.on('connected', () => {
      if (this.connectedOnce) {
        this.everyListener((l) => l.resynchronize());
        for (const l of [...this.notificationListeners]) this.safely(() => l.resynchronize());
      }
      this.connectedOnce = true;
    });
    sub.notifications.on(EVENTS_CHANNEL, (p: unknown) => this.onAppend(p));
    sub.notifications.on(TRANSIENT_CHANNEL, (p: unknown) => this.onTransient(p));
    sub.notifications.on(NOTIFICATIONS_CHANNEL, (p: unknown) => this.onNotification(p));
    await sub.connect();
    await sub.listenTo(EVENTS_CHANNEL);
    await sub.listenTo(TRANSIENT_CHANNEL);
    await sub.listenTo(NOTIFICATIONS_CHANNEL);
    return sub;
  }

  private onAppend(p: unknown): void {
    const n = p as { s?: unknown; t?: unknown; r?: unknown; from?: unknown; to?: unknown } | null;
    if (!n || typeof n.s !== 'string') return;
    const set = this.listeners.get(n.s);
    if (!set) return;
    const notice: AppendNotice = {
      sessionId: n.s,
      tenantId: String(n.t),
      runIds: Array.isArray(n.r) ? n.r.map(String) : [],
      from: Number(n.from),
      to: Number(n.to),
    };
    for (const l of [...set]) this.safely(() => l.appended(notice));
  }

  private onTransient(p: unknown): void {
    const n = p as { s?: unknown; r?: unknown; k?: unknown; t?: unknown; g?: unknown } | null;
    if (!n || typeof n.s !== 'string') return;
    if (n.k !== 'text_delta' && n.k !== 'reasoning_delta' && n.k !== 'tool.call.progress') return;
    const set = this.listeners.get(n.s);
    if (!set) return;
    const g = n.g as { i?: unknown; n?: unknown; p?: unknown; T?: unknown } | undefined;
    if (n.k === 'tool.call.progress' && (typeof g?.i !== 'string' || typeof g.p !== 'number')) return;
    const notice: TransientNotice = {
      sessionId: n.s,
      runId: String(n.r),
      kind: n.k,
      text: typeof n.t === 'string' ? n.t : '',
      ...(n.k === 'tool.call.progress'
        ? {
            progress: {
              invocationId: String(g!.i),
              toolName: String(g!.n),
              progress: Number(g!.p),
              total: typeof g!.T === 'number' ? g!.T : null,
            },
          }
        : {}),
    };
    for (const l of [...set]) this.safely(() => l.transient(notice));
  }

  private onNotification(p: unknown): void {
    const n = p as { t?: unknown; s?: unknown; p?: unknown } | null;
    if (!n || typeof n.t !== 'string' || this.notificationListeners.size === 0) return;
    const notice: NotificationNotice = {
      tenantId: n.t,
      sessionId: String(n.s),
      principalIds: Array.isArray(n.p) ? n.p.map((x) => (typeof x === 'string' ? x : null)) : [null],
    };
    for (const l of [...this.notificationListeners]) this.safely(() => l.notified(notice));
  }

  private everyListener(fn: (l: FeedListener) => void): void {
    for (const set of this.listeners.values()) for (const l of [...set]) this.safely(() => fn(l));
  }

  private safely(fn: () => void): void {
    try {
      fn();
    } catch (e) {
      this.log.error('event feed listener threw', { error: e instanceof Error ? e.message : String(e) });
    }
  }
}
