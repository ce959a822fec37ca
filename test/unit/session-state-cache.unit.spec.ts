import { SessionStateCache } from '../../src/adapters/postgres/event-store/session-state-cache';
import { PROJECTIONS, type Projection, type Row } from '../../src/domain/projections';
import type { StoredEvent } from '../../src/domain/events/payloads';

const [sessions, runs] = PROJECTIONS;
const modelCalls = PROJECTIONS.find((p) => p.name === 'model_calls')!;
type State = Map<Projection, Map<string, Row>>;
const state = (entries: [Projection, Row[]][]): State =>
  new Map(entries.map(([p, rows]) => [p, new Map(rows.map((r) => [String(r[p.keyColumn!]), r]))]));
const draft = (type: string, runId: string | null, data: Record<string, unknown> = {}) =>
  ({ sessionId: 's', runId, type, data }) as unknown as StoredEvent;

describe('the session state cache', () => {
  it("keeps the session row and the rows of the batch's runs only, so an entry does not grow with the session's history", () => {
    const cache = new SessionStateCache();
    const read = state([
      [sessions, [{ id: 's', message_count: 40 }]],
      [runs, [{ id: 'old' }, { id: 'r2' }]],
      [modelCalls, [{ id: 'c-old', run_id: 'old' }]],
    ]);
    const changed = state([
      [runs, [{ id: 'r2', step_count: 1 }]],
      [modelCalls, [{ id: 'c2', run_id: 'r2' }]],
    ]);
    cache.store('s', 41, read, changed, '', 0, new Set(['r2']));

    const hit = cache.lookup('s', [draft('model.response.completed', 'r2', { modelCallId: 'c2' })], 1);
    expect(hit?.lastSequence).toBe(41);
    expect([...hit!.state.get(runs)!.keys()]).toEqual(['r2']);
    expect(hit!.state.get(runs)!.get('r2')).toEqual({ id: 'r2', step_count: 1 });
    expect([...hit!.state.get(modelCalls)!.keys()]).toEqual(['c2']);
    expect(hit!.state.get(sessions)!.get('s')).toEqual({ id: 's', message_count: 40 });

    // A row that was dropped is a miss: the append reads it instead of trusting the cache.
    expect(cache.lookup('s', [draft('run.cancel_requested', 'old')], 1)).toBeUndefined();
  });

  it("serves a submitted message's batch from the cache: its user message names the run its run.queued creates", () => {
    const cache = new SessionStateCache();
    cache.store('s', 3, state([[sessions, [{ id: 's', message_count: 2 }]]]), new Map(), 'g1', 0, new Set());
    const submit = [draft('user.message.created', 'r9'), draft('run.queued', 'r9')];
    expect(cache.lookup('s', submit, 1)?.lastSequence).toBe(3);
    // A run-scoped event of a run the batch does not create, and the cache does not hold: read.
    expect(cache.lookup('s', [draft('user.message.created', 'elsewhere')], 1)).toBeUndefined();
  });

  it('hands out the stored state without copying it, and a later store never mutates it', () => {
    const cache = new SessionStateCache();
    cache.store('s', 1, state([[sessions, [{ id: 's', message_count: 1 }]]]), new Map(), '', 0, new Set());
    const first = cache.lookup('s', [draft('user.message.created', null)], 1)!;
    cache.store('s', 2, first.state, state([[sessions, [{ id: 's', message_count: 2 }]]]), '', 1, new Set());
    expect(first.state.get(sessions)!.get('s')).toEqual({ id: 's', message_count: 1 });
    expect(
      cache
        .lookup('s', [draft('user.message.created', null)], 2)!
        .state.get(sessions)!
        .get('s'),
    ).toEqual({
      id: 's',
      message_count: 2,
    });
  });

  it('serves a batch that creates its session from nothing, at the newest generation seen, unless it touches a row it does not create', () => {
    const cache = new SessionStateCache();
    const created = [draft('session.created', null), draft('user.message.created', null), draft('run.queued', 'r1')];
    // No generation seen yet: read.
    expect(cache.lookup('n', created, 0)).toBeUndefined();
    cache.store('other', 3, new Map(), new Map(), 'g7', 0, new Set());
    const hit = cache.lookup('n', created, 1);
    expect(hit).toEqual({ state: new Map(), lastSequence: 0, generation: 'g7' });
    // Not a creation, or a row its events do not build from nothing: read.
    expect(cache.lookup('n', [draft('user.message.created', null)], 1)).toBeUndefined();
    expect(
      cache.lookup('n', [draft('session.created', null), draft('tool.call.completed', 'r1', { invocationId: 'i' })], 1),
    ).toBeUndefined();
  });

  it('keeps the newer of two entries when an older append records its rows last', () => {
    const cache = new SessionStateCache();
    const at = (n: number) => state([[sessions, [{ id: 's', message_count: n }]]]);
    cache.store('s', 6, at(6), new Map(), 'g1', 0, new Set());
    // The submit that committed at sequence 3 records its rows after the claim recorded sequence 6.
    cache.store('s', 3, at(3), new Map(), 'g1', 1, new Set());
    expect(cache.lookup('s', [draft('user.message.created', null)], 2)?.lastSequence).toBe(6);
    // A repair (a new read-model generation) replaces the entry whatever its sequence.
    cache.store('s', 3, at(3), new Map(), 'g2', 2, new Set());
    expect(cache.lookup('s', [draft('user.message.created', null)], 3)?.lastSequence).toBe(3);
  });
});
