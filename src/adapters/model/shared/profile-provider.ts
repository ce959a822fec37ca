import type { ModelAttempt, ModelEvent, ModelRequest, ResolvedModel } from '../../../domain/model/model-events';
import { findProfileModel, type ProfileModel, type ProviderProfile } from '../../../domain/model/provider-profile';
import type { ModelProvider } from '../../../ports/model-provider';
import { failed } from './failures';
import { guardedStream } from './guarded-stream';
import { ToolNameCodec } from './tool-names';

/** What one SDK adapter supplies: how to stream one attempt, and how to map its errors. */
export interface ProfileProviderParts {
  readonly profile: ProviderProfile;
  /** Streams one attempt as normalized events; the shell guards it (one terminal event, abort, deadline). */
  streamAttempt(
    model: ProfileModel,
    request: ModelRequest,
    names: ToolNameCodec,
    attempt: ModelAttempt,
    signal: AbortSignal,
  ): AsyncIterable<ModelEvent>;
  /** Maps an SDK or stream error to a `failed` event (keys scrubbed). */
  mapError(error: unknown): ModelEvent & { type: 'failed' };
}

/**
 * The shell shared by the profile-driven adapters: resolve the profile's model (an unknown one is a
 * permanent failure event, never a throw), encode tool names for the wire, and run the attempt
 * inside `guardedStream`.
 */
export function createProfileProvider(parts: ProfileProviderParts): ModelProvider {
  const { profile } = parts;
  const name = profile.name;
  return {
    name,
    stream(request: ModelRequest, resolved: ResolvedModel, attempt: ModelAttempt): AsyncIterable<ModelEvent> {
      const model = findProfileModel(profile, resolved.model);
      if (!model) {
        return single(
          failed('permanent', `${name}: profile ${profile.source} has no model "${resolved.model}"`, {
            providerCode: 'unknown_model',
          }),
        );
      }
      return guardedStream(
        name,
        attempt,
        (signal) => parts.streamAttempt(model, request, new ToolNameCodec(request.tools), attempt, signal),
        (error) => parts.mapError(error),
      );
    },
    close: () => Promise.resolve(),
  };
}

async function* single(event: ModelEvent): AsyncGenerator<ModelEvent> {
  yield event;
}
