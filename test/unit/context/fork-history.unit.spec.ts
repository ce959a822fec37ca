import { ForkAwareHistory } from '../../../src/context/fork-history';
import type { HistorySource } from '../../../src/context/history-source';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';

/**
 * A forked session reads as one log (issue 33): the parent's events up to the fork point, then its
 * own stream, whose sequences continue the prefix. The source here is a list of streams; what is
 * asked of it is recorded, so the reads a plain session costs are checked too.
 */
class Streams implements HistorySource {
  readonly calls: string[] = [];
  constructor(private readonly streams: Record<string, StoredEvent[]>) {}
  listAfter(sessionId: string, sequence: number, _p: unknown, limit = 1_000_000): Promise<StoredEvent[]> {
    this.calls.push(`${sessionId}>${sequence}`);
    return Promise.resolve((this.streams[sessionId] ?? []).filter((e) => e.sequence > sequence).slice(0, limit));
  }
}

const ev = (sessionId: string, sequence: number, type = 'user.message.created', data: object = {}) =>
  ({ id: sequence, sessionId, sequence, type, data, runId: null }) as unknown as StoredEvent;
const forkOf = (sessionId: string, parent: string, parentSequence: number) =>
  ev(sessionId, parentSequence + 1, 'session.forked', { parentSessionId: parent, parentSequence });
const range = (sessionId: string, from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => ev(sessionId, from + i));

// A: 1..10. B forks A at 6 (own 7..9). C forks B at 4 — inside B's inherited prefix (own 5..6).
const streams = () =>
  new Streams({
    A: [ev('A', 1, 'session.created'), ...range('A', 2, 10)],
    B: [forkOf('B', 'A', 6), ...range('B', 8, 9)],
    C: [forkOf('C', 'B', 4), ev('C', 6)],
  });
const seqs = (events: StoredEvent[]) => events.map((e) => `${e.sessionId}${e.sequence}`);

describe('ForkAwareHistory', () => {
  it('reads a session that is not a fork with one read, as the source returns it', async () => {
    const s = streams();
    const h = new ForkAwareHistory(s);
    expect(seqs(await h.listAfter('A', 0, LOCAL_PRINCIPAL))).toHaveLength(10);
    expect(s.calls).toEqual(['A>0']);
    expect(seqs(await h.listAfter('A', 8, LOCAL_PRINCIPAL))).toEqual(['A9', 'A10']);
  });

  it('reads a fork as its parent’s prefix then its own stream, one gapless log', async () => {
    const h = new ForkAwareHistory(streams());
    expect(seqs(await h.listAfter('B', 0, LOCAL_PRINCIPAL))).toEqual([
      'A1',
      'A2',
      'A3',
      'A4',
      'A5',
      'A6',
      'B7',
      'B8',
      'B9',
    ]);
    expect(seqs(await h.listAfter('B', 5, LOCAL_PRINCIPAL))).toEqual(['A6', 'B7', 'B8', 'B9']);
    expect(seqs(await h.listAfter('B', 7, LOCAL_PRINCIPAL))).toEqual(['B8', 'B9']);
  });

  it('reads a fork of a fork taken inside its parent’s inherited prefix through both', async () => {
    const h = new ForkAwareHistory(streams());
    expect(seqs(await h.listAfter('C', 0, LOCAL_PRINCIPAL))).toEqual(['A1', 'A2', 'A3', 'A4', 'C5', 'C6']);
  });

  it('honours the limit across the prefix and the own stream', async () => {
    const h = new ForkAwareHistory(streams());
    expect(seqs(await h.listAfter('B', 0, LOCAL_PRINCIPAL, 3))).toEqual(['A1', 'A2', 'A3']);
    expect(seqs(await h.listAfter('B', 4, LOCAL_PRINCIPAL, 4))).toEqual(['A5', 'A6', 'B7', 'B8']);
  });

  it('resumed from a point in a fresh reader: the own stream alone when it continues that point, the parent only when it does not', async () => {
    const s = streams();
    expect(seqs(await new ForkAwareHistory(s).listAfter('B', 7, LOCAL_PRINCIPAL))).toEqual(['B8', 'B9']);
    expect(s.calls).toEqual(['B>7']);
    const t = streams();
    expect(seqs(await new ForkAwareHistory(t).listAfter('B', 3, LOCAL_PRINCIPAL))).toEqual([
      'A4',
      'A5',
      'A6',
      'B7',
      'B8',
      'B9',
    ]);
    expect(t.calls[0]).toBe('B>3');
  });
});
