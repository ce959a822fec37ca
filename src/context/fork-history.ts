import type { StoredEvent } from '../domain/events/payloads';
import type { Principal } from '../domain/principal';
import type { HistorySource } from './history-source';

/** Where a forked session's history leaves its parent (`session.forked`). */
interface ForkOrigin {
  readonly parentSessionId: string;
  /** The parent sequence the fork's history ends at; the fork's own stream starts after it. */
  readonly parentSequence: number;
}

/** Sessions whose origin is remembered (a session's origin never changes; the oldest are forgotten first). */
const MAX_REMEMBERED = 4096;

/**
 * A history source that reads a forked session as one log (issue 33, ADR 0038): the parent's events
 * up to the fork point — read through the parent, itself possibly a fork, by reference — followed by
 * the fork's own stream, whose sequences continue the prefix. Any other session reads as the inner
 * source returns it. The event store stays strictly per stream; only the context engine sees
 * through a fork, so a fork's own API views, SSE stream and exports never include its parent's events.
 */
export class ForkAwareHistory implements HistorySource {
  /** Session id → its fork origin, or null for a session that is not a fork. */
  private readonly origins = new Map<string, ForkOrigin | null>();

  constructor(private readonly inner: HistorySource) {}

  async listAfter(
    sessionId: string,
    sequence: number,
    principal: Principal,
    limit = 1_000_000,
  ): Promise<StoredEvent[]> {
    let origin = this.origins.get(sessionId);
    if (origin === undefined && sequence === 0) {
      // The whole log is read anyway: its first event says whether the session is a fork.
      const own = await this.inner.listAfter(sessionId, 0, principal, limit);
      origin = this.remember(sessionId, own[0]);
      if (origin === null) return own;
      return [...(await this.prefix(origin, sequence, principal, limit)), ...own].slice(0, limit);
    }
    if (origin === undefined) {
      // Unknown origin, read from a point (a run resumed from its checkpoint in a fresh process): the
      // own stream alone answers unless it starts above that point — a fork read from inside its
      // inherited prefix — and only then is its first event read to find the parent.
      const own = await this.inner.listAfter(sessionId, sequence, principal, limit);
      if (own.length === 0 || own[0].sequence === sequence + 1) return own;
      origin = this.remember(sessionId, (await this.inner.listAfter(sessionId, 0, principal, 1))[0]);
    }
    if (origin === null || sequence >= origin.parentSequence) {
      return this.inner.listAfter(sessionId, sequence, principal, limit);
    }
    const inherited = await this.prefix(origin, sequence, principal, limit);
    if (inherited.length >= limit) return inherited;
    const own = await this.inner.listAfter(sessionId, origin.parentSequence, principal, limit - inherited.length);
    return [...inherited, ...own];
  }

  /** The parent's events after `sequence` up to the fork point (its virtual stream is gapless, so at most that many). */
  private async prefix(origin: ForkOrigin, sequence: number, principal: Principal, limit: number) {
    if (sequence >= origin.parentSequence) return [];
    const wanted = Math.min(limit, origin.parentSequence - sequence);
    const events = await this.listAfter(origin.parentSessionId, sequence, principal, wanted);
    return events.filter((e) => e.sequence <= origin.parentSequence);
  }

  private remember(sessionId: string, first: StoredEvent | undefined): ForkOrigin | null {
    // An empty stream (a session not visible to this principal) is not remembered: it may appear.
    if (first === undefined) return null;
    const origin =
      first.type === 'session.forked'
        ? { parentSessionId: first.data.parentSessionId, parentSequence: first.data.parentSequence }
        : null;
    this.origins.set(sessionId, origin);
    if (this.origins.size > MAX_REMEMBERED) this.origins.delete(this.origins.keys().next().value as string);
    return origin;
  }
}
