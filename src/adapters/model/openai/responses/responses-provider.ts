import type OpenAI from 'openai';
import type { ModelAttempt, ModelEvent, ModelRequest, ResolvedModel } from '../../../../domain/model/model-events';
import { findProfileModel, type ProviderProfile } from '../../../../domain/model/provider-profile';
import type { ModelProvider } from '../../../../ports/model-provider';
import { failed, failureFromSdkError } from '../../shared/failures';
import { guardedStream } from '../../shared/guarded-stream';
import { ToolNameCodec } from '../../shared/tool-names';
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
  const mapError = (error: unknown) =>
    error instanceof StreamOrderError
      ? failed('protocol', `${name}: ${error.message}`, { providerCode: 'stream_order' })
      : failureFromSdkError(name, openAIErrorInfo(error), [apiKey]);
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
          const mapper = new ResponsesEventMapper(name, names);
          const stream = await client.responses.create(responsesRequest(profile, model, request, names), { signal });
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
