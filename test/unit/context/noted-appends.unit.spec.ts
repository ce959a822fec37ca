import { ContextEngine, type HistorySource } from '../../../src/context/engine';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import type { Principal } from '../../../src/domain/principal';
import { SessionLogBuilder } from '../../../bench/support/session-history';
import { inputs } from './support';

/** An in-memory log that counts its reads. */
class CountingSource implements HistorySource {
  reads = 0;
  constructor(private readonly log: SessionLogBuilder) {}
  listAfter(_sessionId: string, sequence: number, _principal: Principal, limit = 1_000_000): Promise<StoredEvent[]> {
    this.reads++;
    return Promise.resolve(this.log.events.slice(sequence, sequence + limit));
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
    // The fold read the other writer's message; it is a run queued behind this one, so this run's
    // request leaves it to its own turn (history.ts, runsQueuedAfter).
    const folded = await engine.history(log.sessionId, inputs(RUN, 'msg-1').principal);
    expect(folded.units.map((u) => u.text)).toContain('A message someone else appended');
    expect(JSON.stringify(built.request)).not.toContain('A message someone else appended');
    expect(JSON.stringify(built.request)).toContain('Forty-two.');
  });

  it('reads when the fold is behind knownSequence (a write the engine was not told about)', async () => {
    const log = new SessionLogBuilder();
    const source = new CountingSource(log);
    const engine = new ContextEngine(source);
    start(log);
    await engine.build(inputs(RUN, 'msg-1'));
    const mine = ownWrite(log, 'Forty-two.');
    const built = await engine.build(inputs(RUN, 'msg-1', { step: 2, knownSequence: mine[0].sequence }));
    expect(source.reads).toBe(2);
    expect(JSON.stringify(built.request)).toContain('Forty-two.');
  });

  it('folds the caller’s own payloads as it would fold them read back, whatever their key order', async () => {
    // The same tool call twice: once with its payloads' keys in the order the writer built them,
    // once in another order (as PostgreSQL's jsonb hands them back); the builds must be byte for byte equal.
    const written = new SessionLogBuilder();
    const read = new SessionLogBuilder();
    for (const log of [written, read]) start(log);
    const writer = new ContextEngine(new CountingSource(written));
    await writer.build(inputs(RUN, 'msg-1'));
    const call = { invocationId: 'inv-1', step: 1, callId: 'call-1', toolName: 'math.calculate', toolVersion: '1' };
    const rest = { argumentsHash: 'h', idempotencyKey: 'k-1' };
    const done = { invocationId: 'inv-1', truncated: false, latencyMs: 1, trust: 'internal_tool' } as const;
    const mine = [
      written.push('tool.call.proposed', RUN, { ...call, arguments: { expression: '6 * 7', precision: 2 }, ...rest }),
      written.push('tool.call.completed', RUN, { ...done, result: { expression: '6 * 7', result: '42' } }),
    ];
    read.push('tool.call.proposed', RUN, { ...rest, ...call, arguments: { precision: 2, expression: '6 * 7' } });
    read.push('tool.call.completed', RUN, { result: { result: '42', expression: '6 * 7' }, ...done });
    writer.noteAppended(written.sessionId, mine);
    const built = await writer.build(inputs(RUN, 'msg-1', { step: 2, knownSequence: mine[1].sequence }));
    const fresh = await new ContextEngine(new CountingSource(read)).build(inputs(RUN, 'msg-1', { step: 2 }));
    expect(JSON.stringify(built.request)).toContain('42');
    expect(JSON.stringify(built.request)).toBe(JSON.stringify(fresh.request));
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
