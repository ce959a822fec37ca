import type OpenAI from 'openai';
import type { ProviderProfile } from '../../../../domain/model/provider-profile';
import type { ModelProvider } from '../../../../ports/model-provider';
import { failed, failureFromSdkError } from '../../shared/failures';
import { createProfileProvider } from '../../shared/profile-provider';
import { createOpenAIClient, openAIErrorInfo } from '../client';
import { ResponsesEventMapper, StreamOrderError } from './events';
import { responsesRequest } from './request';

/**
 * The OpenAI Responses adapter (plan §10.4): one streamed `POST {base_url}/responses` per attempt,
 * mapped to the normalized stream. Never executes tools, never logs keys, and aborts the HTTP
 * request when the attempt is cancelled or its deadline passes.
 */
export function createOpenAIResponsesProvider(
  profile: ProviderProfile,
  apiKey: string,
  client: OpenAI = createOpenAIClient(profile, apiKey),
): ModelProvider {
  const name = profile.name;
  return createProfileProvider({
    profile,
    async *streamAttempt(model, request, names, _attempt, signal) {
      const mapper = new ResponsesEventMapper(name, names);
      const stream = await client.responses.create(responsesRequest(profile, model, request, names), { signal });
      for await (const event of stream) yield* mapper.map(event);
    },
    mapError: (error) =>
      error instanceof StreamOrderError
        ? failed('protocol', `${name}: ${error.message}`, { providerCode: 'stream_order' })
        : failureFromSdkError(name, openAIErrorInfo(error), [apiKey]),
  });
}
