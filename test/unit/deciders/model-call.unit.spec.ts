import { event } from '../../../src/domain/deciders/decider';
import { modelCallDecider, type ModelCallCommand } from '../../../src/domain/deciders/model-call';
import type { EventPayloads } from '../../../src/domain/events/payloads';
import { deciderSpec } from '../../support/decider-spec';
import { given, RUN, WORKER } from './fixtures';

const spec = deciderSpec(modelCallDecider);
const CALL = '66666666-6666-4666-8666-666666666666';
const w = { runId: RUN, actorType: 'worker' as const };
const started: EventPayloads['model.request.started'] = {
  modelCallId: CALL,
  step: 1,
  attempt: 1,
  provider: 'fake',
  model: 'fake-1',
  prefixHash: 'p',
  profileName: null,
  profileVersion: null,
  registryVersion: null,
  context: null,
};
const response: EventPayloads['model.response.completed'] = {
  modelCallId: CALL,
  step: 1,
  attempt: 1,
  stopReason: 'end_turn',
  usage: { uncachedInputTokens: 1, cachedInputTokens: 0, cacheWriteTokens: 0, outputTokens: 1, reasoningTokens: 0 },
  cost: '0',
  costSource: 'free',
  toolCalls: [],
  textLength: 2,
  latencyMs: 5,
};
const failure: EventPayloads['model.request.failed'] = {
  modelCallId: CALL,
  step: 1,
  attempt: 1,
  errorCode: 'model_transient_error',
  message: '503',
  retryable: true,
  latencyMs: 5,
};
const compaction: EventPayloads['context.compacted'] = {
  compactionId: '77777777-7777-4777-8777-777777777777',
  step: 1,
  compactor: 'extractive',
  fallbackReason: null,
  summary: { goal: null, constraints: [], unresolvedQuestions: [], toolResults: [], dialogue: [], elidedSpans: 0 },
  workingState: {
    objective: null,
    constraints: [],
    tasks: [],
    establishedFacts: [],
    openQuestions: [],
    nextAction: null,
  },
  sourceSequences: [1],
  coveredThroughSequence: 1,
  tokensBefore: 10,
  tokensAfter: 5,
};
const cmd = {
  compact: { kind: 'RecordCompaction', runId: RUN, actor: WORKER, compaction } as ModelCallCommand,
  start: { kind: 'StartModelCall', runId: RUN, actor: WORKER, call: started } as ModelCallCommand,
  respond: { kind: 'RecordModelResponse', runId: RUN, actor: WORKER, response } as ModelCallCommand,
  fail: { kind: 'RecordModelFailure', runId: RUN, actor: WORKER, failure } as ModelCallCommand,
};
const startedEvent = event('model.request.started', started, w);

describe('model call decider', () => {
  it('the context build records its compactions, then the call starts', () => {
    spec
      .given([])
      .when(cmd.compact)
      .then([event('context.compacted', compaction, w)]);
    spec.given([]).when(cmd.start).then([startedEvent]);
  });

  it('a started call gets one outcome: a response or a failure', () => {
    spec
      .given(given([startedEvent]))
      .when(cmd.respond)
      .then([event('model.response.completed', response, w)]);
    spec
      .given(given([startedEvent]))
      .when(cmd.fail)
      .then([event('model.request.failed', failure, w)]);
    spec
      .given(given([startedEvent, event('model.request.failed', failure, w)]))
      .when(cmd.respond)
      .thenRefuses('invalid_state_transition');
  });

  it('refuses an outcome for a call not started, or another call', () => {
    spec.given([]).when(cmd.respond).thenRefuses('invalid_state_transition');
    spec.given([]).when(cmd.fail).thenRefuses('invalid_state_transition');
    spec
      .given(given([startedEvent]))
      .when(cmd.start)
      .thenRefuses('invalid_state_transition');
    spec
      .given(given([startedEvent]))
      .when({ ...cmd.respond, response: { ...response, modelCallId: 'other' } } as ModelCallCommand)
      .thenRefuses('invalid_state_transition');
  });
});
