import type { ProviderProfile, ProviderRegistry } from '../../../domain/model/provider-profile';
import type { ModelProvider } from '../../../ports/model-provider';
import { createAnthropicProvider } from '../anthropic/anthropic-provider';
import { createChatCompletionsProvider } from '../openai/chat-completions/chat-completions-provider';
import { createOpenAIResponsesProvider } from '../openai/responses/responses-provider';

/** A profile with its adapter, or why it has none (structurally the router's ProfileBinding). */
export interface BoundProfile {
  readonly profile: ProviderProfile;
  readonly provider: ModelProvider | null;
  readonly unavailable?: string;
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * Builds one adapter per profile. A profile whose credential variable is unset is not an error
 * here (most deployments configure one or two providers); it is bound as unavailable, and routing
 * to it is refused with a message naming the profile and the variable. The key itself is read
 * here, handed to the adapter, and never stored anywhere else.
 */
export function bindProfiles(registry: ProviderRegistry, env: Env = process.env): BoundProfile[] {
  return registry.profiles.map((profile) => {
    const key = profile.credentialEnv === null ? null : (env[profile.credentialEnv] ?? '').trim();
    if (profile.credentialEnv !== null && !key) {
      return {
        profile,
        provider: null,
        unavailable: `provider profile "${profile.name}" (${profile.source}) needs its API key in the environment variable ${profile.credentialEnv}, which is not set`,
      };
    }
    return { profile, provider: createAdapter(profile, key) };
  });
}

function createAdapter(profile: ProviderProfile, key: string | null): ModelProvider {
  switch (profile.apiMode) {
    case 'responses':
      return createOpenAIResponsesProvider(profile, key ?? '');
    case 'anthropic':
      return createAnthropicProvider(profile, key ?? '');
    case 'chat_completions':
      return createChatCompletionsProvider(profile, key);
    default: {
      const unknown: never = profile.apiMode;
      throw new Error(`unknown api mode ${String(unknown)}`);
    }
  }
}
