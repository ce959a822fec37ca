import type { ModelAttempt, ModelEvent, ModelRequest, ResolvedModel } from '../domain/model/model-events';

/**
 * A model provider adapter (plan §7, model-gateway signature). The stream ends with exactly one
 * `completed` or `failed` event; adapters never execute tools and never log keys.
 */
export interface ModelProvider {
  readonly name: string;
  stream(request: ModelRequest, model: ResolvedModel, attempt: ModelAttempt): AsyncIterable<ModelEvent>;
  close(): Promise<void>;
}
