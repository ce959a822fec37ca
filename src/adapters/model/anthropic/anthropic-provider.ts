import type Anthropic from '@anthropic-ai/sdk';
import type { ModelAttempt, ModelEvent, ModelRequest, ResolvedModel } from '../../../domain/model/model-events';
import { findProfileModel, type ProviderProfile } from '../../../domain/model/provider-profile';
import type { ModelProvider } from '../../../ports/model-provider';
import { failed, failureFromSdkError } from '../shared/failures';
import { guardedStream } from '../shared/guarded-stream';
import { ToolNameCodec } from '../shared/tool-names';
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
  const mapError = (error: unknown) =>
    error instanceof StreamOrderError
      ? failed('protocol', `${name}: ${error.message}`, { providerCode: 'stream_order' })
      : failureFromSdkError(name, anthropicErrorInfo(error), [apiKey]);
  return {
    name,
    stream(request: ModelRequest, resolved: ResolvedModel, attempt: ModelAttempt): AsyncIterable<ModelEvent> {
      const model = findProfileModel(profile, resolved.model);
      if (!model)
        return single(
          failed('permanent', `${name}: profile ${profile.source} has no model "${resolved.model}"`, {
            providerCode: 'unknown_model',
          }),
        );
      return guardedStream(
        name,
        attempt,
        async function* (signal) {
          const names = new ToolNameCodec(request.tools);
          const mapper = new MessagesEventMapper(name, names);
          const stream = await client.messages.create(messagesRequest(profile, model, request, names), { signal });
          for await (const event of stream) yield* mapper.map(event);
        },
        mapError,
      );
    },
    close: () => Promise.resolve(),
  };
}

async function* single(event: ModelEvent): AsyncGenerator<ModelEvent> {
  yield event;
}
