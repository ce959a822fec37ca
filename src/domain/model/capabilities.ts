/**
 * What a model can do (plan §6.7). The router refuses a model that lacks a capability a run needs
 * (tool calling when the agent has tools), naming the profile and the missing piece.
 */
export interface ModelCapabilities {
  readonly toolCalling: boolean;
  readonly parallelToolCalls: boolean;
  readonly structuredOutput: boolean;
  readonly streaming: boolean;
  readonly vision: boolean;
  readonly audio: boolean;
  readonly providerManagedState: boolean;
  /** Emits provider reasoning (items, signed thinking blocks or in-band `<think>` text). */
  readonly reasoning: boolean;
  readonly maxContextTokens: number | null;
}

/** The scripted offline providers (fake, demo) can do everything a test asks of them. */
export const OFFLINE_CAPABILITIES: ModelCapabilities = {
  toolCalling: true,
  parallelToolCalls: true,
  structuredOutput: false,
  streaming: true,
  vision: false,
  audio: false,
  providerManagedState: false,
  reasoning: false,
  maxContextTokens: null,
};

/** What a run needs from its model. */
export interface ModelRequirements {
  readonly toolCalling?: boolean;
  readonly parallelToolCalls?: boolean;
  readonly vision?: boolean;
}

/** The snake_case names (as written in provider profiles) of the capabilities `caps` lacks. */
export function missingCapabilities(caps: ModelCapabilities, needs: ModelRequirements): string[] {
  const missing: string[] = [];
  if (needs.toolCalling === true && !caps.toolCalling) missing.push('tool_calling');
  if (needs.parallelToolCalls === true && !caps.parallelToolCalls) missing.push('parallel_tool_calls');
  if (needs.vision === true && !caps.vision) missing.push('vision');
  return missing;
}
