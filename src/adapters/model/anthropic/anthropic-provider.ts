import type Anthropic from '@anthropic-ai/sdk';
import type { ProviderProfile } from '../../../domain/model/provider-profile';
import type { ModelProvider } from '../../../ports/model-provider';
import { failed, failureFromSdkError } from '../shared/failures';
import { createProfileProvider } from '../shared/profile-provider';
import { anthropicErrorInfo, createAnthropicClient } from './client';
import { MessagesEventMapper, StreamOrderError } from './events';
import { messagesRequest } from './request';

/**
 * The Anthropic Messages adapter (plan §10.4): one streamed `POST {base_url}/v1/messages` per
 * attempt, raw events mapped by MessagesEventMapper (the SDK's MessageStream helper is not used:
 * the adapter validates event order itself and reports violations as protocol failures).
 */
export function createAnthropicProvider(
  profile: ProviderProfile,
  apiKey: string,
  client: Anthropic = createAnthropicClient(profile, apiKey),
): ModelProvider {
  const name = profile.name;
  return createProfileProvider({
    profile,
    async *streamAttempt(model, request, names, _attempt, signal) {
      const mapper = new MessagesEventMapper(name, names);
      const stream = await client.messages.create(messagesRequest(profile, model, request, names), { signal });
      for await (const event of stream) yield* mapper.map(event);
    },
    mapError: (error) =>
      error instanceof StreamOrderError
        ? failed('protocol', `${name}: ${error.message}`, { providerCode: 'stream_order' })
        : failureFromSdkError(name, anthropicErrorInfo(error), [apiKey]),
  });
}
