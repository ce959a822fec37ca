import { ContextEngine } from '../../../src/context/engine';
import { EMPTY_WORKING_STATE } from '../../../src/domain/context/working-state';
import type { Principal } from '../../../src/domain/principal';
import type { StoredEvent } from '../../../src/domain/events/payloads';
import { MemoryHistorySource, SessionLogBuilder } from '../../../bench/support/session-history';
import { inputs, playTurn } from './support';

/** The in-memory log, remembering where each read started. */
class RecordingSource extends MemoryHistorySource {
  readonly from: number[] = [];
  override listAfter(
    sessionId: string,
    sequence: number,
    principal: Principal,
    limit?: number,
  ): Promise<StoredEvent[]> {
    this.from.push(sequence);
    return super.listAfter(sessionId, sequence, principal, limit);
  }
}

describe('context engine: resuming a run from its checkpoint compaction reference', () => {
  it('a fresh engine builds with the summary and working state, reading only events after the compaction point', async () => {
    const log = new SessionLogBuilder();
    const warm = new ContextEngine(new MemoryHistorySource(log.events));
    let i = 0;
    let built = null as Awaited<ReturnType<typeof playTurn>> | null;
    while (i < 40) {
      i += 1;
      built = await playTurn(
        warm,
        log,
        i,
        `Turn ${i}. Always answer in French. ${'Some words to fill the window quickly. '.repeat(20)}`,
        'ok',
      );
      if (built.events.length > 0) break;
    }
    const ref = built!.checkpoint!;
    expect(ref).not.toBeNull();
    const compacted = log.events.find((e) => e.type === 'context.compacted') as StoredEvent<'context.compacted'>;
    expect(ref.compactionId).toBe(compacted.data.compactionId);
    expect(ref.coveredThroughSequence).toBe(compacted.data.coveredThroughSequence);
    expect(ref.readAfterSequence).toBeGreaterThan(0);
    expect(ref.readAfterSequence).toBeLessThan(compacted.sequence);
    expect(ref.workingState.constraints.length).toBeGreaterThan(0);

    // The same run, next step, on another worker: its checkpoint carries `ref`.
    const runId = `run-${String(i).padStart(6, '0')}`;
    const next = inputs(runId, `msg-${i}`, { step: 2 });
    const source = new RecordingSource(log.events);
    const fresh = new ContextEngine(source);
    const resumed = await fresh.build({ ...next, resume: ref });
    expect(source.from).toEqual([ref.readAfterSequence]);
    expect(source.read).toBe(log.events.length - ref.readAfterSequence);

    const expected = await warm.build(next);
    expect(resumed.request.conversation).toEqual(expected.request.conversation);
    expect(resumed.request.prefixHash).toBe(expected.request.prefixHash);
    expect(resumed.record).toEqual(expected.record);
    expect(resumed.events).toEqual([]);
    expect(resumed.checkpoint).toEqual(expected.checkpoint);
    const first = resumed.request.conversation[0];
    expect(first.kind === 'user' && first.messageId).toBe(`context-summary-${ref.compactionId}`);

    // Without the reference a fresh engine reads the session from its start.
    const cold = new RecordingSource(log.events);
    await new ContextEngine(cold).build(next);
    expect(cold.from).toEqual([0]);
  });

  it('a reference that does not lead to a compaction falls back to a fold from the start', async () => {
    const log = new SessionLogBuilder();
    const warm = new ContextEngine(new MemoryHistorySource(log.events));
    await playTurn(warm, log, 1, 'hello', 'hi');
    await playTurn(warm, log, 2, 'again', 'yes');
    const source = new RecordingSource(log.events);
    const built = await new ContextEngine(source).build({
      ...inputs('run-000002', 'msg-2', { step: 2 }),
      resume: {
        compactionId: 'gone',
        coveredThroughSequence: 3,
        readAfterSequence: 3,
        workingState: EMPTY_WORKING_STATE,
      },
    });
    expect(source.from).toEqual([3, 0]);
    expect(built.request.conversation.some((c) => c.kind === 'user' && c.messageId === 'msg-1')).toBe(true);
  });
});
