import type { NewEvent } from '../../../src/domain/events/payloads';
import type { CheckpointState } from '../../../src/domain/run/checkpoint';
import { checkpointsOfBatch, type KnownCheckpoint } from '../../../src/runtime/lease-scope';

const state = (step: number, phase: CheckpointState['phase']): CheckpointState => ({
  schema: 1,
  step,
  phase,
  pendingToolCalls: [],
  malformedToolCalls: [],
  providerContinuation: null,
  conversationRange: { fromSequence: 1 },
});
const cp = (version: number, phase: CheckpointState['phase']) => ({
  checkpoint: { version, state: state(1, phase) } as KnownCheckpoint,
});
const checkpointed = (checkpointVersion: number): NewEvent => ({
  type: 'run.checkpointed',
  runId: 'r',
  data: { checkpointVersion, step: 1 },
});
const other: NewEvent = { type: 'tool.call.started', runId: 'r', data: {} as never };

describe('checkpointsOfBatch (ADR 0057): a commit writes its last state only', () => {
  it('keeps the last checkpoint of the batch: the earlier one can never be the latest', () => {
    const written = checkpointsOfBatch([cp(1, 'model_completed'), cp(2, 'tools_completed')], [other, checkpointed(2)]);
    expect(written.map((w) => w.checkpoint.version)).toEqual([2]);
  });

  it('keeps one or none as it is', () => {
    expect(checkpointsOfBatch([], [other])).toEqual([]);
    expect(checkpointsOfBatch([cp(3, 'model_completed')], [other]).map((w) => w.checkpoint.version)).toEqual([3]);
  });

  it('still writes an earlier one a run.checkpointed of the batch names, so no event names a missing version', () => {
    const written = checkpointsOfBatch(
      [cp(1, 'model_completed'), cp(2, 'tools_completed'), cp(3, 'model_completed')],
      [checkpointed(2), other],
    );
    expect(written.map((w) => w.checkpoint.version)).toEqual([2, 3]);
  });
});
