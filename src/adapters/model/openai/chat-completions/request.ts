import type {
  ChatCompletionAssistantMessageParam,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionMessageParam,
  ChatCompletionTool,
} from 'openai/resources/chat/completions/completions';
import type { ModelRequest } from '../../../../domain/model/model-events';
import type { ProfileModel, ProviderProfile } from '../../../../domain/model/provider-profile';
import { contentText, toolResultText } from '../../shared/content';
import { toolCallText, toolsPrompt } from '../../shared/text-tool-calls';
import type { ToolNameCodec } from '../../shared/tool-names';

/**
 * ModelRequest -> OpenAI-compatible chat completions request (plan §10.7), for vLLM, Ollama, LM
 * Studio, llama.cpp, LiteLLM, OpenRouter and other BYO endpoints. Native `tools` / `tool_calls`
 * when the model has them; otherwise (`tool_call_format: xml`) the tools are described in the
 * system prompt and calls and results travel as `<tool_call>` / `<tool_response>` text. Reasoning
 * of this profile is echoed back as `reasoning_content` only when `strip_reasoning` is off.
 */
export function chatRequest(
  profile: ProviderProfile,
  model: ProfileModel,
  request: ModelRequest,
  names: ToolNameCodec,
): ChatCompletionCreateParamsStreaming {
  const xml = model.toolCallFormat === 'xml';
  const system =
    xml && request.tools.length > 0 ? `${request.system}\n\n${toolsPrompt(request.tools, names)}` : request.system;
  const tools: ChatCompletionTool[] = request.tools.map((t) => ({
    type: 'function',
    function: { name: names.encode(t.name), description: t.description, parameters: t.inputSchema },
  }));
  const maxTokens = request.maximumOutputTokens ?? model.maxOutputTokens;
  return {
    model: model.id,
    messages: [{ role: 'system', content: system }, ...messages(profile, request, names, xml)],
    stream: true,
    ...(profile.streamUsage ? { stream_options: { include_usage: true } } : {}),
    ...(!xml && tools.length > 0 ? { tools } : {}),
    ...(maxTokens !== null ? { max_tokens: maxTokens } : {}),
    ...(request.temperature !== null ? { temperature: request.temperature } : {}),
  };
}

type Assistant = ChatCompletionAssistantMessageParam & { reasoning_content?: string };

function messages(
  profile: ProviderProfile,
  request: ModelRequest,
  names: ToolNameCodec,
  xml: boolean,
): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = [];
  let reasoning: string | null = null;
  const assistant = (): Assistant => {
    const last = out[out.length - 1];
    if (last && last.role === 'assistant') return last;
    const m: Assistant = { role: 'assistant', content: null };
    if (reasoning !== null) m.reasoning_content = reasoning;
    reasoning = null;
    out.push(m);
    return m;
  };
  const appendText = (m: Assistant, text: string) => {
    m.content = typeof m.content === 'string' && m.content !== '' ? `${m.content}\n${text}` : text;
  };
  for (const item of request.conversation) {
    switch (item.kind) {
      case 'system':
        out.push({ role: 'system', content: item.text });
        break;
      case 'user':
        out.push({ role: 'user', content: contentText(item.content) });
        break;
      case 'assistant':
        if (item.text !== '') appendText(assistant(), item.text);
        break;
      case 'provider_reasoning':
        if (item.provider === profile.name && !profile.stripReasoning && typeof item.opaquePayload.text === 'string')
          reasoning = item.opaquePayload.text;
        break;
      case 'tool_call': {
        const m = assistant();
        if (xml) appendText(m, toolCallText(names.encode(item.name), item.arguments));
        else
          m.tool_calls = [
            ...(m.tool_calls ?? []),
            {
              id: item.callId,
              type: 'function',
              function: { name: names.encode(item.name), arguments: JSON.stringify(item.arguments) },
            },
          ];
        break;
      }
      case 'tool_result':
        if (xml) out.push({ role: 'user', content: `<tool_response>\n${toolResultText(item)}\n</tool_response>` });
        else out.push({ role: 'tool', tool_call_id: item.callId, content: toolResultText(item) });
        break;
      default: {
        const unknown: never = item;
        throw new Error(`unknown conversation item ${JSON.stringify(unknown)}`);
      }
    }
  }
  return out;
}
