import { OFFLINE_CAPABILITIES, type ModelCapabilities } from '../../../../src/domain/model/capabilities';
import type { ModelAttempt, ModelEvent, ModelRequest, ResolvedModel } from '../../../../src/domain/model/model-events';
import type { ApiMode, ProfileModel, ProviderProfile } from '../../../../src/domain/model/provider-profile';

/** The key the replay tests use: shaped like a real one, so a leak would trip the secret scanner. */
export const TEST_KEY = 'sk-test-replay-0123456789abcdefghijklmnopqrstuv';

export const TOOL_CAPS: ModelCapabilities = { ...OFFLINE_CAPABILITIES, parallelToolCalls: true, reasoning: true };

export function testModel(id: string, overrides: Partial<ProfileModel> = {}): ProfileModel {
  return {
    id,
    aliases: ['default'],
    capabilities: TOOL_CAPS,
    contextLimit: 200_000,
    maxOutputTokens: 1024,
    prices: {
      uncachedInputPerMillion: '0.25',
      cachedInputPerMillion: '0.025',
      cacheWritePerMillion: '0',
      outputPerMillion: '2.00',
    },
    priceOverride: null,
    reasoningEffort: null,
    reasoningSummary: null,
    thinkingBudgetTokens: null,
    toolCallFormat: 'native',
    ...overrides,
  };
}

export function testProfile(
  apiMode: ApiMode,
  baseUrl: string,
  model: ProfileModel,
  overrides: Partial<ProviderProfile> = {},
): ProviderProfile {
  return {
    name: apiMode === 'responses' ? 'openai' : apiMode === 'anthropic' ? 'anthropic' : 'local',
    version: 1,
    apiMode,
    baseUrl,
    credentialEnv: 'TEST_KEY',
    models: [model],
    stripReasoning: apiMode === 'chat_completions',
    streamUsage: true,
    timeoutMs: 10_000,
    source: 'test',
    ...overrides,
  };
}

export function resolved(profile: ProviderProfile): ResolvedModel {
  return { provider: profile.name, model: profile.models[0].id, contextLimit: profile.models[0].contextLimit };
}

export function attempt(overrides: Partial<ModelAttempt> = {}): ModelAttempt {
  return { attemptId: 'attempt-1', attemptNumber: 1, deadlineMs: null, ...overrides };
}

export function calculatorRequest(overrides: Partial<ModelRequest> = {}): ModelRequest {
  return {
    modelPolicy: 'test',
    system: 'You are a test agent.',
    tools: [
      {
        name: 'math.calculate',
        description: 'Evaluates an arithmetic expression.',
        inputSchema: { type: 'object', properties: { expression: { type: 'string' } }, required: ['expression'] },
      },
    ],
    conversation: [
      { kind: 'user', messageId: 'm1', content: [{ type: 'text', text: 'What is 17 multiplied by 23?' }] },
    ],
    maximumOutputTokens: null,
    temperature: null,
    cacheHints: [],
    prefixHash: 'a'.repeat(64),
    metadata: { step: '1', run_id: 'run-1', attempt_id: 'attempt-1' },
    ...overrides,
  };
}

export async function collect(events: AsyncIterable<ModelEvent>): Promise<ModelEvent[]> {
  const out: ModelEvent[] = [];
  for await (const e of events) out.push(e);
  return out;
}
