import type {
  ResponseCreateParamsStreaming,
  ResponseInputItem,
  ResponseReasoningItem,
  Tool,
} from 'openai/resources/responses/responses';
import type { ModelRequest } from '../../../../domain/model/model-events';
import type { ProfileModel, ProviderProfile } from '../../../../domain/model/provider-profile';
import { contentText, toolResultText } from '../../shared/content';
import type { ToolNameCodec } from '../../shared/tool-names';

/**
 * ModelRequest -> Responses API request (plan §10.4). Stateless: `store: false`, and for reasoning
 * models `include: ['reasoning.encrypted_content']`, so the reasoning items of the active tool loop
 * travel back as opaque input items. Function-call ids (`call_id`) are preserved both ways.
 */
export function responsesRequest(
  profile: ProviderProfile,
  model: ProfileModel,
  request: ModelRequest,
  names: ToolNameCodec,
): ResponseCreateParamsStreaming {
  const tools: Tool[] = request.tools.map((t) => ({
    type: 'function',
    name: names.encode(t.name),
    description: t.description,
    parameters: t.inputSchema,
    strict: false,
  }));
  const reasoning = model.reasoningEffort !== null || model.reasoningSummary !== null;
  return {
    model: model.id,
    instructions: request.system,
    input: inputItems(profile.name, request, names),
    stream: true,
    store: false,
    ...(tools.length > 0 ? { tools, parallel_tool_calls: model.capabilities.parallelToolCalls } : {}),
    ...(model.capabilities.reasoning ? { include: ['reasoning.encrypted_content' as const] } : {}),
    ...(reasoning
      ? {
          reasoning: {
            ...(model.reasoningEffort !== null ? { effort: model.reasoningEffort as 'low' } : {}),
            ...(model.reasoningSummary !== null ? { summary: model.reasoningSummary as 'auto' } : {}),
          },
        }
      : {}),
    ...(request.maximumOutputTokens !== null || model.maxOutputTokens !== null
      ? { max_output_tokens: request.maximumOutputTokens ?? model.maxOutputTokens }
      : {}),
    // Reasoning models reject sampling parameters.
    ...(request.temperature !== null && !model.capabilities.reasoning ? { temperature: request.temperature } : {}),
    // Caching is automatic; the prefix hash keeps requests with the same prefix on the same cache.
    ...(request.cacheHints.length > 0 ? { prompt_cache_key: request.prefixHash.slice(0, 32) } : {}),
  };
}

function inputItems(provider: string, request: ModelRequest, names: ToolNameCodec): ResponseInputItem[] {
  const items: ResponseInputItem[] = [];
  for (const item of request.conversation) {
    switch (item.kind) {
      case 'system':
        items.push({ type: 'message', role: 'developer', content: item.text });
        break;
      case 'user':
        items.push({ type: 'message', role: 'user', content: contentText(item.content) });
        break;
      case 'assistant':
        if (item.text !== '') items.push({ type: 'message', role: 'assistant', content: item.text });
        break;
      case 'tool_call':
        items.push({
          type: 'function_call',
          call_id: item.callId,
          name: names.encode(item.name),
          arguments: JSON.stringify(item.arguments),
        });
        break;
      case 'tool_result':
        items.push({ type: 'function_call_output', call_id: item.callId, output: toolResultText(item) });
        break;
      case 'provider_reasoning':
        // Verbatim, and only to the provider that produced it (plan §10.6).
        if (item.provider === provider) items.push(item.opaquePayload as unknown as ResponseReasoningItem);
        break;
      default: {
        const unknown: never = item;
        throw new Error(`unknown conversation item ${JSON.stringify(unknown)}`);
      }
    }
  }
  return items;
}
