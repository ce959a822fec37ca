import type { EventPayloads, EventType, StoredEvent } from '../../src/domain/events/payloads';
import type { Principal } from '../../src/domain/principal';
import type { HistorySource } from '../../src/context/engine';

/**
 * Synthetic session logs for the context engine's tests and benchmark: `turns` runs of
 * user message -> (tool call + result every `toolEvery` turns) -> assistant answer, with the
 * surrounding lifecycle events a real run writes, so a run averages about ten events.
 */
export interface SyntheticSessionOptions {
  readonly sessionId?: string;
  readonly turns: number;
  readonly toolEvery?: number;
  /** The user text of turn i (1-based). */
  readonly userText?: (turn: number) => string;
  readonly assistantText?: (turn: number) => string;
  readonly prefixHash?: string;
}

export const SYNTHETIC_TENANT = 'local';

export class SessionLogBuilder {
  readonly events: StoredEvent[] = [];
  constructor(readonly sessionId = '00000000-0000-4000-8000-000000000001') {}

  push<T extends EventType>(type: T, runId: string | null, data: EventPayloads[T]): StoredEvent<T> {
    const sequence = this.events.length + 1;
    const e = {
      id: 1000 + sequence,
      sessionId: this.sessionId,
      runId,
      sequence,
      type,
      schemaVersion: 1,
      data,
      actorType: 'worker',
      actorId: null,
      tenantId: SYNTHETIC_TENANT,
      traceId: null,
      createdAt: '2026-11-30T12:00:00.000Z',
    } as unknown as StoredEvent<T>;
    this.events.push(e as unknown as StoredEvent);
    return e;
  }

  /** One run: its user message, optionally a tool call with its result, and the assistant's answer. */
  turn(i: number, opts: { user: string; assistant: string; tool?: boolean; prefixHash?: string }): string {
    const runId = `run-${String(i).padStart(6, '0')}`;
    const prefixHash = opts.prefixHash ?? 'a'.repeat(64);
    this.push('user.message.created', runId, { messageId: `msg-${i}`, content: [{ type: 'text', text: opts.user }] });
    this.push('run.queued', runId, {
      agentId: 'general',
      agentVersion: 1,
      principalId: 'p',
      modelPolicy: 'fake:x',
      userMessageId: `msg-${i}`,
      limits: {
        maxSteps: 10,
        maxModelCalls: 10,
        maxToolCalls: 10,
        maxInputTokens: null,
        maxOutputTokens: null,
        maxCost: null,
        deadlineSeconds: null,
      },
      priority: 0,
      idempotencyKey: null,
      requestHash: null,
      scopes: ['tools.use'],
    });
    this.push('run.started', runId, { attempt: 1, deadlineAt: null, traceId: null });
    const started = (step: number) =>
      this.push('model.request.started', runId, {
        modelCallId: `mc-${i}-${step}`,
        step,
        attempt: 1,
        provider: 'fake',
        model: 'x',
        prefixHash,
        profileName: null,
        profileVersion: null,
        registryVersion: null,
        context: null,
      });
    started(1);
    let step = 1;
    if (opts.tool) {
      const invocationId = `inv-${i}`;
      this.push('tool.call.proposed', runId, {
        invocationId,
        step: 1,
        callId: `call-${i}`,
        toolName: 'math.calculate',
        toolVersion: '1',
        arguments: { expression: `${i} * 2` },
        argumentsHash: 'h',
        idempotencyKey: `k-${i}`,
      });
      this.push('tool.call.completed', runId, {
        invocationId,
        result: { expression: `${i} * 2`, result: String(i * 2) },
        truncated: false,
        latencyMs: 1,
        trust: 'internal_tool',
      });
      this.push('run.checkpointed', runId, { checkpointVersion: 2, step: 1 });
      step = 2;
      started(2);
    }
    this.push('assistant.message.completed', runId, { messageId: `answer-${i}`, text: opts.assistant });
    this.push('run.completed', runId, { messageId: `answer-${i}` });
    void step;
    return runId;
  }
}

/** A session of `turns` runs; returns the builder (its events and the last run's id). */
export function syntheticSession(o: SyntheticSessionOptions): { log: SessionLogBuilder; lastRunId: string } {
  const log = new SessionLogBuilder(o.sessionId);
  let lastRunId = '';
  for (let i = 1; i <= o.turns; i++) {
    lastRunId = log.turn(i, {
      user: o.userText?.(i) ?? `Question number ${i}: what is ${i} times two, and why does it matter?`,
      assistant:
        o.assistantText?.(i) ?? `The answer to question ${i} is ${i * 2}. It matters because it is twice ${i}.`,
      tool: o.toolEvery !== undefined && i % o.toolEvery === 0,
      prefixHash: o.prefixHash,
    });
  }
  return { log, lastRunId };
}

/** An in-memory HistorySource over a growing event list, counting the events it hands out. */
export class MemoryHistorySource implements HistorySource {
  read = 0;
  constructor(private readonly events: StoredEvent[]) {}
  listAfter(_sessionId: string, sequence: number, _principal: Principal, limit = 1_000_000): Promise<StoredEvent[]> {
    const out = this.events.slice(sequence, sequence + limit);
    this.read += out.length;
    return Promise.resolve(out);
  }
}
