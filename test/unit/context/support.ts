import type { NewEvent } from '../../../src/domain/events/payloads';
import type { BuiltContext, ContextBuildInputs, ContextEngine } from '../../../src/context/engine';
import type { AgentSpec } from '../../../src/domain/agent';
import { LOCAL_PRINCIPAL } from '../../../src/domain/principal';
import type { ToolSpec } from '../../../src/domain/tools/tool-spec';
import type { SessionLogBuilder } from '../../../bench/support/session-history';

export const AGENT: AgentSpec = {
  id: 'general',
  version: 1,
  name: 'General',
  instructions: 'You are a helpful assistant. Answer briefly.',
  modelPolicy: 'fake:x',
  enabledTools: ['math.calculate'],
  enabledSkills: [],
  policyProfile: 'default',
  limits: {
    maxSteps: 10,
    maxModelCalls: 10,
    maxToolCalls: 10,
    maxInputTokens: null,
    maxOutputTokens: 500,
    maxCost: null,
    deadlineSeconds: null,
  },
  metadata: {},
};

export const TOOLS = [
  {
    name: 'math.calculate',
    description: 'Evaluates an arithmetic expression.',
    inputSchema: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] },
  },
] as unknown as ToolSpec[];

let ids = 0;

export function inputs(
  runId: string,
  userMessageId: string | null,
  over: Partial<ContextBuildInputs> = {},
): ContextBuildInputs {
  return {
    sessionId: '00000000-0000-4000-8000-000000000001',
    agent: AGENT,
    principal: LOCAL_PRINCIPAL,
    runId,
    userMessageId,
    step: 1,
    tools: TOOLS,
    nowIso: '2026-11-30T12:00:00.000Z',
    attemptId: 'attempt',
    model: { provider: 'fake', model: 'x', contextLimit: 3_000 },
    newId: () => `00000000-0000-4000-8000-${String(++ids).padStart(12, '0')}`,
    ...over,
  };
}

/**
 * Plays the run loop's part for one turn on an in-memory log: the user message, a build, the
 * build's events and model.request.started appended like the loop does, then the answer.
 */
export async function playTurn(
  engine: ContextEngine,
  log: SessionLogBuilder,
  i: number,
  user: string,
  answer: string,
  over: Partial<ContextBuildInputs> = {},
): Promise<BuiltContext> {
  const runId = `run-${String(i).padStart(6, '0')}`;
  log.push('user.message.created', runId, { messageId: `msg-${i}`, content: [{ type: 'text', text: user }] });
  log.push('run.started', runId, { attempt: 1, deadlineAt: null, traceId: null });
  const built = await engine.build(inputs(runId, `msg-${i}`, over));
  for (const e of built.events) log.push('context.compacted', runId, (e as NewEvent<'context.compacted'>).data);
  log.push('model.request.started', runId, {
    modelCallId: `mc-${i}`,
    step: 1,
    attempt: 1,
    provider: 'fake',
    model: 'x',
    prefixHash: built.request.prefixHash,
    profileName: null,
    profileVersion: null,
    registryVersion: null,
    context: built.record,
  });
  log.push('assistant.message.completed', runId, { messageId: `answer-${i}`, text: answer });
  log.push('run.completed', runId, { messageId: `answer-${i}` });
  return built;
}
