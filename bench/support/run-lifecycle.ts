import { randomUUID } from 'node:crypto';
import type { NewEvent } from '../../src/domain/events/payloads';
import { DEFAULT_LIMITS } from '../../src/domain/run/limits';

/** The first event of every benchmark session. */
export function sessionCreated(n: number): NewEvent {
  return {
    type: 'session.created',
    actorType: 'user',
    actorId: 'bench-user',
    data: {
      agentId: 'general',
      agentVersion: 1,
      principalId: 'bench-user',
      title: `bench session ${n}`,
      metadata: { bench: true },
    },
  };
}

/**
 * The events of one ordinary run, in the order the runtime appends them: a user message, the queued
 * run, claim and start, a model call proposing a tool call, the tool call's authorization and result,
 * a checkpoint, a second model call answering, and completion. 15 events touching sessions, runs,
 * model_calls and tool_invocations, so every append does realistic projection work.
 */
export function runLifecycle(n: number): NewEvent[] {
  const runId = randomUUID();
  const messageId = randomUUID();
  const answerId = randomUUID();
  const invocationId = randomUUID();
  const [call1, call2] = [randomUUID(), randomUUID()];
  const traceId = `bench-trace-${n}`;
  const callId = `call_${n}`;
  const usage = {
    uncachedInputTokens: 812,
    cachedInputTokens: 1024,
    cacheWriteTokens: 0,
    outputTokens: 64,
    reasoningTokens: 0,
  };
  const modelDone = (modelCallId: string, step: number, stopReason: 'tool_use' | 'end_turn'): NewEvent => ({
    type: 'model.response.completed',
    runId,
    traceId,
    data: {
      modelCallId,
      step,
      attempt: 1,
      stopReason,
      usage,
      cost: '0.00153',
      costSource: 'catalog_price',
      toolCalls: stopReason === 'tool_use' ? [{ callId, name: 'calculator' }] : [],
      textLength: stopReason === 'tool_use' ? 0 : 24,
      latencyMs: 420,
    },
  });
  return [
    {
      type: 'user.message.created',
      actorType: 'user',
      actorId: 'bench-user',
      data: { messageId, content: [{ type: 'text', text: `What is ${n} * 7?` }] },
    },
    {
      type: 'run.queued',
      runId,
      data: {
        agentId: 'general',
        agentVersion: 1,
        principalId: 'bench-user',
        modelPolicy: 'demo',
        userMessageId: messageId,
        limits: DEFAULT_LIMITS,
        priority: 100,
        idempotencyKey: `bench-${runId}`,
        requestHash: `hash-${n}`,
        scopes: ['tools.use'],
      },
    },
    {
      type: 'run.claimed',
      runId,
      actorType: 'worker',
      actorId: 'bench-worker',
      data: { workerId: 'bench-worker', leaseEpoch: 1, attempt: 1 },
    },
    { type: 'run.started', runId, actorType: 'worker', traceId, data: { attempt: 1, deadlineAt: null, traceId } },
    {
      type: 'model.request.started',
      runId,
      traceId,
      data: {
        modelCallId: call1,
        step: 1,
        attempt: 1,
        provider: 'fake',
        model: 'fake-1',
        prefixHash: 'prefix-1',
        profileName: null,
        profileVersion: null,
        registryVersion: null,
        context: null,
      },
    },
    modelDone(call1, 1, 'tool_use'),
    {
      type: 'tool.call.proposed',
      runId,
      data: {
        invocationId,
        step: 1,
        callId,
        toolName: 'calculator',
        toolVersion: '1',
        arguments: { expression: `${n} * 7` },
        argumentsHash: `args-${n}`,
        idempotencyKey: `${runId}:1:${callId}`,
      },
    },
    {
      type: 'tool.call.authorized',
      runId,
      data: { invocationId, decision: 'allow', reasonCode: 'low_risk', policyVersion: 'v1' },
    },
    { type: 'tool.call.started', runId, data: { invocationId } },
    {
      type: 'tool.call.completed',
      runId,
      data: { invocationId, result: { value: n * 7 }, truncated: false, latencyMs: 1, trust: 'internal_tool' },
    },
    { type: 'run.checkpointed', runId, data: { checkpointVersion: 1, step: 1 } },
    {
      type: 'model.request.started',
      runId,
      traceId,
      data: {
        modelCallId: call2,
        step: 2,
        attempt: 1,
        provider: 'fake',
        model: 'fake-1',
        prefixHash: 'prefix-2',
        profileName: null,
        profileVersion: null,
        registryVersion: null,
        context: null,
      },
    },
    modelDone(call2, 2, 'end_turn'),
    { type: 'assistant.message.completed', runId, data: { messageId: answerId, text: `${n} * 7 = ${n * 7}` } },
    { type: 'run.completed', runId, data: { messageId: answerId } },
  ];
}
