import { ConfigurationError } from '../../../domain/errors';
import type {
  ModelAttempt,
  ModelEvent,
  ModelFailedEvent,
  ModelRequest,
  ResolvedModel,
} from '../../../domain/model/model-events';
import type { Clock } from '../../../ports/clock';
import type { ModelProvider } from '../../../ports/model-provider';
import type { FakeFixture, FakeTurn } from './fixture';
import { fixtureContextLimit, loadFixture } from './fixture-loader';
import { hang, paced, type Pacing } from './pacing';
import { runStepOf, STEP_METADATA_KEY } from './run-step';
import {
  estimateTokens,
  replyEvents,
  replyOutputTokens,
  requestChars,
  type ScriptedReply,
  type ScriptedToolCall,
} from './scripted-reply';

/**
 * The scripted fake provider (plan §10.3), mandatory for every runtime test and the default when
 * no provider key is configured for a `fake:<fixture>` model policy. The fixture name is the
 * resolved model name; the turn is chosen by the run step (`request.metadata.step`), the last turn
 * repeating past the end, so loop and step-limit scenarios are two-line fixtures.
 *
 * `{{step}}` in a turn's text or arguments becomes the run step (distinct calls on every step).
 *
 * Fixture problems do not throw: the stream ends with a permanent `failed` event whose message
 * lists the available fixtures, keeping the one-terminal-event contract every adapter follows.
 */

export const FAKE_PROVIDER_NAME = 'fake';

export interface FakeProviderOptions {
  /** Directory of `<name>.yaml` fixtures (normally `config/model-fixtures`). */
  readonly fixturesDir: string;
  readonly clock: Clock;
  /** FAKE_MODEL_LATENCY_MS: total delay of each call, spread across its events. */
  readonly latencyMs?: number;
}

/** Creates the fake provider; fixtures are read on every call so edits apply without a restart. */
export function createFakeProvider(options: FakeProviderOptions): ModelProvider {
  return {
    name: FAKE_PROVIDER_NAME,
    stream: (request, model, attempt) => streamFixture(options, request, model, attempt),
    close: () => Promise.resolve(),
    contextLimitOf: (model) => fixtureContextLimit(options.fixturesDir, model),
  };
}

async function* streamFixture(
  options: FakeProviderOptions,
  request: ModelRequest,
  model: ResolvedModel,
  attempt: ModelAttempt,
): AsyncGenerator<ModelEvent> {
  let fixture: FakeFixture;
  try {
    fixture = await loadFixture(options.fixturesDir, model.model);
  } catch (error) {
    if (!(error instanceof ConfigurationError)) throw error;
    yield permanentFailure(error.message, String(error.details.code));
    return;
  }
  const step = runStepOf(request);
  if (step === null) {
    const declared = request.metadata[STEP_METADATA_KEY] ?? '';
    yield permanentFailure(
      `request.metadata.${STEP_METADATA_KEY} '${declared}' is not a positive integer`,
      'invalid_step',
    );
    return;
  }
  const turnIndex = Math.min(step, fixture.turns.length) - 1;
  const turn = fixture.turns[turnIndex];
  const pacing: Pacing = {
    clock: options.clock,
    attempt,
    latencyMs: Math.max(options.latencyMs ?? 0, fixture.latencyMs),
  };

  const unmet = unmetExpectation(turn, request);
  if (unmet !== null) {
    yield permanentFailure(`fixture ${fixture.name} turn ${turnIndex + 1}: ${unmet}`, 'fixture_expectation_failed');
    return;
  }
  const failure = turn.failAttempts[attempt.attemptNumber - 1];
  if (failure !== undefined) {
    const event: ModelFailedEvent = {
      type: 'failed',
      kind: failure.kind,
      message: failure.message,
      providerCode: failure.code ?? `fake_${failure.kind}`,
    };
    yield* paced([event], pacing);
    return;
  }
  if (turn.hang) {
    yield* hang(pacing);
    return;
  }
  const metadata = { fixture: fixture.name, turn: String(turnIndex + 1), step: String(step) };
  yield* paced(replyEvents(toReply(turn, step, request, metadata), { terminal: !turn.malformed }), pacing);
}

/** Placeholder replaced by the run step in text and arguments, so a repeating turn can vary. */
const STEP_PLACEHOLDER = '{{step}}';

function toReply(turn: FakeTurn, step: number, request: ModelRequest, metadata: Record<string, string>): ScriptedReply {
  const withStep = (s: string): string => s.replaceAll(STEP_PLACEHOLDER, String(step));
  const toolCalls: ScriptedToolCall[] = turn.toolCalls.map((call, index) => ({
    callId: call.id ?? `call_${step}_${index}`,
    name: call.name,
    rawArguments: withStep(call.rawArguments),
  }));
  const text = withStep(turn.text);
  return {
    text,
    toolCalls,
    usage: {
      uncachedInputTokens: turn.usage.input ?? estimateTokens(requestChars(request)),
      cachedInputTokens: turn.usage.cached ?? 0,
      cacheWriteTokens: turn.usage.cacheWrite ?? 0,
      outputTokens: turn.usage.output ?? replyOutputTokens(text, toolCalls),
      reasoningTokens: turn.usage.reasoning ?? 0,
    },
    stopReason: turn.stopReason ?? (toolCalls.length > 0 ? 'tool_use' : 'end_turn'),
    providerMetadata: metadata,
  };
}

/** The first request assertion of the turn that does not hold, or null. */
function unmetExpectation(turn: FakeTurn, request: ModelRequest): string | null {
  if (turn.expectRequestContains.length === 0 && turn.expectRequestExcludes.length === 0) return null;
  const body = JSON.stringify({ system: request.system, tools: request.tools, conversation: request.conversation });
  const lower = body.toLowerCase();
  for (const s of turn.expectRequestContains) {
    if (!lower.includes(s.toLowerCase()) && !lower.includes(JSON.stringify(s).slice(1, -1).toLowerCase()))
      return `the request does not contain "${s}"`;
  }
  for (const s of turn.expectRequestExcludes) {
    if (lower.includes(s.toLowerCase())) return `the request contains "${s}"`;
  }
  return null;
}

function permanentFailure(message: string, providerCode: string): ModelFailedEvent {
  return { type: 'failed', kind: 'permanent', message, providerCode };
}
