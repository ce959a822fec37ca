/**
 * The demo model: the default when no provider key is configured, so the platform works offline
 * out of the box. Provider name `demo`. It is not a language model: it applies these
 * deterministic rules to the LATEST user message in the conversation (case-insensitive) and to
 * whether a result of the tool it wants is already in the conversation after that message.
 *
 * 0. Consensus messages (ADR 0047; consensus-replies.ts), written by the consensus step, never typed:
 *    "Consensus engine <i> of <n>…Question: <q>" -> "Engine <i> proposes: <what it would compute>."
 *    (" (sample <k>)" for a re-sample); "Consensus synthesis…" -> "Consensus of <k> proposal(s) on
 *    "<q>": engine 1 (<policy>) said "…"; …" quoting every proposal and naming engines without one.
 * 1. Time questions - "what time is it", "what's the time", "what is the current time",
 *    "current time", optionally followed by "in <IANA zone>" ("What time is it in Europe/Paris?"):
 *    - no `system.current_time` result yet: calls `system.current_time` with `{timezone}`
 *      (no arguments when no zone is named; the tool defaults to UTC);
 *    - result present: "The current time in <timezone> is <local_time> (<local_date>, UTC<utc_offset>)."
 *      from the tool output fields; an error result gives "I could not get the current time: <message>".
 * 2. Arithmetic questions - operator words become symbols (multiplied by / times / x -> *,
 *    divided by -> /, plus -> +, minus -> -, to the power of / raised to -> ^, squared -> ^2,
 *    cubed -> ^3, mod / modulo -> %, square root of N -> sqrt(N)) and the longest run of
 *    numbers, operators and parentheses is the expression. It counts when the message is just
 *    the expression, used an operator word, or asks to calculate / compute / evaluate / solve /
 *    "what is" / "how much is":
 *      "What is 17 multiplied by 23?" -> 17 * 23     "calculate (2+3)*4" -> (2+3)*4
 *      "what is 2^10" -> 2^10                        "what's 12 times 9" -> 12 * 9
 *      "100 divided by 4" -> 100 / 4                 "7 plus 5" -> 7 + 5
 *      "10 minus 3" -> 10 - 3                        "2 to the power of 8" -> 2 ^ 8
 *      "square root of 16" -> sqrt(16)
 *    - no `math.calculate` result yet: calls `math.calculate` with `{expression}`;
 *    - result present: "The result is <result>."; an error result gives
 *      "I could not calculate that: <message>" (it never retries, so it cannot loop).
 * 3. Action requests (anchored at the start of the message; see action-requests.ts), each a tool
 *    call first and an answer from its result second:
 *    - "ask me <question>" -> `conversation.ask_user`; then `You answered: "<reply>".`
 *    - "send <text> to <target>" / "publish <text>" -> `demo.external_write` (always needs approval);
 *      then "Sent to <target>." / "Published.", or, told apart by the refusal code, "I did not send
 *      it: the request was denied ..." / "... the approval expired ..." (nothing was sent)
 *    - "write <text> to <path>" -> `workspace.write_text`; then "Wrote N bytes to <path> (sha256 ...)."
 *    - "read <path>" -> `workspace.read_text`; then the content quoted as data (labelled untrusted
 *      when the runtime says so) or "I could not read <path>: <message>"
 *    - "list files" -> `workspace.list_files`; then the file names
 *    - "call <tool> with <JSON object>" -> exactly that tool with those arguments (builtin or MCP);
 *      then its result (labelled when untrusted) or its failure
 * 4. Anything else: `You said: "<message>". I am the offline demo model; ask me to calculate
 *    something or for the time.` (the message is quoted up to 200 characters).
 *
 * A tool is only called when the request offers it; otherwise the answer says the tool is not
 * available. Text streams in chunks of a few words and tool arguments in fragments, like a real
 * provider; usage is estimated at four characters per token so counters are non-zero; tool call
 * ids are `call_<attemptId>`, unique across runs in a session. `latencyMs` behaves as in the fake
 * provider: the total delay of one call, spread across its events, honouring abort and deadline.
 */
import type { ModelAttempt, ModelEvent, ModelRequest } from '../../../domain/model/model-events';
import type { Clock } from '../../../ports/clock';
import type { ModelProvider } from '../../../ports/model-provider';
import { paced } from '../fake/pacing';
import {
  estimateTokens,
  replyEvents,
  replyOutputTokens,
  requestChars,
  type ScriptedReply,
  type ScriptedToolCall,
} from '../fake/scripted-reply';
import { decideDemoReply } from './demo-rules';

export const DEMO_PROVIDER_NAME = 'demo';

export interface DemoProviderOptions {
  readonly clock: Clock;
  /** Total delay of each call (FAKE_MODEL_LATENCY_MS), spread across its events. */
  readonly latencyMs?: number;
}

/** Creates the offline demo model provider. */
export function createDemoProvider(options: DemoProviderOptions): ModelProvider {
  return {
    name: DEMO_PROVIDER_NAME,
    stream: (request, _model, attempt) => streamDemo(options, request, attempt),
    close: () => Promise.resolve(),
  };
}

async function* streamDemo(
  options: DemoProviderOptions,
  request: ModelRequest,
  attempt: ModelAttempt,
): AsyncGenerator<ModelEvent> {
  const reply = demoReply(request, attempt);
  yield* paced(replyEvents(reply, { terminal: true }), {
    clock: options.clock,
    attempt,
    latencyMs: options.latencyMs ?? 0,
  });
}

function demoReply(request: ModelRequest, attempt: ModelAttempt): ScriptedReply {
  const decision = decideDemoReply(request);
  const text = decision.kind === 'text' ? decision.text : '';
  const toolCalls: ScriptedToolCall[] =
    decision.kind === 'tool_call'
      ? [{ callId: `call_${attempt.attemptId}`, name: decision.name, rawArguments: JSON.stringify(decision.arguments) }]
      : [];
  return {
    text,
    toolCalls,
    usage: {
      uncachedInputTokens: estimateTokens(requestChars(request)),
      cachedInputTokens: 0,
      cacheWriteTokens: 0,
      outputTokens: replyOutputTokens(text, toolCalls),
      reasoningTokens: 0,
    },
    stopReason: toolCalls.length > 0 ? 'tool_use' : 'end_turn',
    providerMetadata: { rule: decision.rule },
  };
}
