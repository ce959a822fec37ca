import { ContextEngine, type HistorySource } from '../../../src/context/engine';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import type { Principal } from '../../../src/domain/principal';
import { SessionLogBuilder } from '../../../bench/support/session-history';
import { inputs } from './support';

/** An in-memory log that counts its reads; `asRead` hands events back unchanged (no jsonb here). */
class CountingSource implements HistorySource {
  reads = 0;
  constructor(
    private readonly log: SessionLogBuilder,
    readonly withAsRead = true,
  ) {}
  listAfter(_sessionId: string, sequence: number, _principal: Principal, limit = 1_000_000): Promise<StoredEvent[]> {
    this.reads++;
    return Promise.resolve(this.log.events.slice(sequence, sequence + limit));
  }
  get asRead(): HistorySource['asRead'] {
    return this.withAsRead ? (events) => events.map((e) => ({ ...e })) : undefined;
  }
}

const RUN = 'run-000001';

function start(log: SessionLogBuilder): void {
  log.push('user.message.created', RUN, { messageId: 'msg-1', content: [{ type: 'text', text: 'What is 6 * 7?' }] });
  log.push('run.started', RUN, { attempt: 1, deadlineAt: null, traceId: null });
}

/** What the run's own write appends after the first build: the assistant's answer, for this test. */
function ownWrite(log: SessionLogBuilder, text: string): StoredEvent[] {
  return [log.push('assistant.message.completed', RUN, { messageId: `a-${text.length}`, text })];
}

describe('ContextEngine.noteAppended and knownSequence', () => {
  it('folds the caller’s own contiguous events and skips the read when the fold reaches knownSequence', async () => {
    const log = new SessionLogBuilder();
    const source = new CountingSource(log);
    const engine = new ContextEngine(source);
    start(log);
    await engine.build(inputs(RUN, 'msg-1'));
    expect(source.reads).toBe(1);
    const mine = ownWrite(log, 'Forty-two.');
    engine.noteAppended(log.sessionId, mine);
    const built = await engine.build(inputs(RUN, 'msg-1', { step: 2, knownSequence: mine[0].sequence }));
    expect(source.reads).toBe(1);
    const fresh = await new ContextEngine(new CountingSource(log)).build(inputs(RUN, 'msg-1', { step: 2 }));
    expect(JSON.stringify(built.request)).toBe(JSON.stringify(fresh.request));
    expect(JSON.stringify(built.request)).toContain('Forty-two.');
  });

  it('ignores events that do not continue the fold (another writer appended in between) and reads instead', async () => {
    const log = new SessionLogBuilder();
    const source = new CountingSource(log);
    const engine = new ContextEngine(source);
    start(log);
    await engine.build(inputs(RUN, 'msg-1'));
    log.push('user.message.created', 'run-000002', {
      messageId: 'msg-2',
      content: [{ type: 'text', text: 'A message someone else appended' }],
    });
    const mine = ownWrite(log, 'Forty-two.');
    engine.noteAppended(log.sessionId, mine);
    const built = await engine.build(inputs(RUN, 'msg-1', { step: 2, knownSequence: mine[0].sequence }));
    expect(source.reads).toBe(2);
    expect(JSON.stringify(built.request)).toContain('A message someone else appended');
    expect(JSON.stringify(built.request)).toContain('Forty-two.');
  });

  it('reads when the fold is behind knownSequence, and when the source cannot hand events back as read', async () => {
    for (const withAsRead of [true, false]) {
      const log = new SessionLogBuilder();
      const source = new CountingSource(log, withAsRead);
      const engine = new ContextEngine(source);
      start(log);
      await engine.build(inputs(RUN, 'msg-1'));
      const mine = ownWrite(log, 'Forty-two.');
      // With asRead, a write the engine was not told about leaves the fold behind; without it, telling changes nothing.
      if (!withAsRead) engine.noteAppended(log.sessionId, mine);
      const built = await engine.build(inputs(RUN, 'msg-1', { step: 2, knownSequence: mine[0].sequence }));
      expect(source.reads).toBe(2);
      expect(JSON.stringify(built.request)).toContain('Forty-two.');
    }
  });

  it('does nothing for a session it holds no fold of', async () => {
    const log = new SessionLogBuilder();
    const source = new CountingSource(log);
    const engine = new ContextEngine(source);
    start(log);
    engine.noteAppended(log.sessionId, log.events);
    await engine.build(inputs(RUN, 'msg-1', { knownSequence: 2 }));
    expect(source.reads).toBe(1);
  });
});

describe('ContextEngine.noteRead (the claim’s session tail)', () => {
  it('starts the fold of a session from a tail that begins at its first event: the first build reads nothing', async () => {
    const log = new SessionLogBuilder();
    const source = new CountingSource(log);
    const engine = new ContextEngine(source);
    start(log);
    engine.noteRead(log.sessionId, log.events);
    const built = await engine.build(inputs(RUN, 'msg-1', { knownSequence: log.events.length }));
    expect(source.reads).toBe(0);
    const fresh = await new ContextEngine(new CountingSource(log)).build(inputs(RUN, 'msg-1'));
    expect(JSON.stringify(built.request)).toBe(JSON.stringify(fresh.request));
  });

  it('folds only the part of a tail after the fold, and ignores a tail that leaves a gap or does not start the session', async () => {
    const log = new SessionLogBuilder();
    const source = new CountingSource(log);
    const engine = new ContextEngine(source);
    start(log);
    await engine.build(inputs(RUN, 'msg-1'));
    expect(source.reads).toBe(1);
    // The tail overlaps the fold (its first event is already folded): the rest continues it.
    const mine = ownWrite(log, 'Forty-two.');
    engine.noteRead(log.sessionId, log.events.slice(1));
    const built = await engine.build(inputs(RUN, 'msg-1', { step: 2, knownSequence: mine[0].sequence }));
    expect(source.reads).toBe(1);
    expect(JSON.stringify(built.request)).toContain('Forty-two.');

    // A gap: the event after the fold is not in the tail.
    ownWrite(log, 'Skipped.');
    const later = ownWrite(log, 'After the gap.');
    engine.noteRead(log.sessionId, later);
    await engine.build(inputs(RUN, 'msg-1', { step: 3, knownSequence: later[0].sequence }));
    expect(source.reads).toBe(2);

    // No fold, and the tail does not begin the session: nothing is folded, the build reads.
    const other = new ContextEngine(source);
    other.noteRead(log.sessionId, log.events.slice(2));
    await other.build(inputs(RUN, 'msg-1', { step: 3, knownSequence: log.events.length }));
    expect(source.reads).toBe(3);
  });
});
