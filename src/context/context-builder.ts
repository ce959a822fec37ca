import type { ModelRequest } from '../domain/model/model-events';
import type { CheckpointState } from '../domain/run/checkpoint';

/*
 * The context builder of Milestone 1 grew into the context engine (src/context/engine.ts): Region A
 * and Region B, the budget allocator, history selection and compaction live there. What stays here
 * is the provider-continuation splice the run loop applies to a built request.
 */
export { PLATFORM_POLICY } from './engine';

/**
 * Carries the provider-opaque continuation of the active tool loop (the checkpoint's
 * `providerContinuation`, plan §10.6) into the request: the reasoning items go right before the
 * tool calls of the turn that produced them (the last group of tool calls). A continuation from
 * another provider is dropped: one provider's reasoning state is meaningless to another.
 */
export function withProviderContinuation(
  request: ModelRequest,
  continuation: CheckpointState['providerContinuation'],
  provider: string,
): ModelRequest {
  if (continuation === null || continuation.provider !== provider) return request;
  const items = continuation.items.filter((i) => i.provider === provider);
  const conversation = [...request.conversation];
  let end = conversation.length - 1;
  while (end >= 0 && conversation[end].kind !== 'tool_call') end--;
  if (items.length === 0 || end < 0) return request;
  let start = end;
  while (start > 0 && conversation[start - 1].kind === 'tool_call') start--;
  conversation.splice(start, 0, ...items);
  return { ...request, conversation };
}
