import type OpenAI from 'openai';
import type { ProviderProfile } from '../../../../domain/model/provider-profile';
import type { ModelProvider } from '../../../../ports/model-provider';
import { failureFromSdkError } from '../../shared/failures';
import { createProfileProvider } from '../../shared/profile-provider';
import { createOpenAIClient, openAIErrorInfo } from '../client';
import { ChatEventMapper } from './events';
import { chatRequest } from './request';

/** Keyless local endpoints (Ollama, llama.cpp) still get a syntactically valid key from the SDK. */
export const NO_KEY = 'no-key';

/**
 * The OpenAI-compatible chat_completions adapter (plan §2.3, §10.7): one streamed
 * `POST {base_url}/chat/completions` per attempt. It lives under adapters/model/openai/ because it
 * uses the `openai` SDK, which may be imported only there.
 */
export function createChatCompletionsProvider(
  profile: ProviderProfile,
  apiKey: string | null,
  client: OpenAI = createOpenAIClient(profile, apiKey ?? NO_KEY),
): ModelProvider {
  const name = profile.name;
  return createProfileProvider({
    profile,
    async *streamAttempt(model, request, names, attempt, signal) {
      const mapper = new ChatEventMapper(
        name,
        names,
        attempt.attemptId,
        !profile.stripReasoning,
        model.toolCallFormat === 'xml',
      );
      const stream = await client.chat.completions.create(chatRequest(profile, model, request, names), { signal });
      for await (const chunk of stream) yield* mapper.map(chunk);
      if (signal.aborted) return;
      yield* mapper.end();
    },
    mapError: (error) => failureFromSdkError(name, openAIErrorInfo(error), [apiKey]),
  });
}
