import { assembleTurn } from '../../../../src/domain/model/assembler';
import { ModelPermanentError, ModelProtocolError, ModelTransientError } from '../../../../src/domain/errors';
import type { ModelAttempt, ModelEvent, ModelRequest, ResolvedModel } from '../../../../src/domain/model/model-events';
import type { TokenUsage } from '../../../../src/domain/run/usage';
import type { ModelProvider } from '../../../../src/ports/model-provider';
import { attempt as defaultAttempt, calculatorRequest, collect } from './profiles';

export type Scenario = 'text' | 'tool_call' | 'parallel_tool_calls' | 'usage' | 'transient' | 'permanent' | 'malformed';

export interface Arranged {
  readonly provider: ModelProvider;
  readonly model: ResolvedModel;
  readonly request?: ModelRequest;
  readonly attempt?: ModelAttempt;
}

/** How one provider is exercised by the contract suite, and what its recordings must produce. */
export interface ContractHarness {
  readonly name: string;
  start?(): Promise<void>;
  stop?(): Promise<void>;
  /** Arranges the provider's response for `scenario` (queues a recording, picks a fixture). */
  arrange(scenario: Scenario): Arranged;
  readonly expect: {
    readonly text: string;
    readonly toolCall: { readonly callId: string; readonly name: string; readonly arguments: Record<string, unknown> };
    readonly parallelCallIds: readonly [string, string];
    readonly usage: TokenUsage;
  };
}

const TERMINAL_SCENARIOS: Scenario[] = ['text', 'tool_call', 'parallel_tool_calls', 'usage', 'transient', 'permanent'];

/**
 * The one model-provider contract suite (plan §20.4), run against the fake provider and every
 * SDK adapter: exactly one terminal event and nothing after it, text and tool-call assembly with
 * provider ids preserved, usage in all five classes, and the three failure classes.
 */
export function describeProviderContract(h: ContractHarness): void {
  describe(`the ${h.name} provider contract`, () => {
    beforeAll(async () => h.start?.());
    afterAll(async () => h.stop?.());

    const stream = (scenario: Scenario): AsyncIterable<ModelEvent> => {
      const a = h.arrange(scenario);
      return a.provider.stream(a.request ?? calculatorRequest(), a.model, a.attempt ?? defaultAttempt());
    };

    it.each(TERMINAL_SCENARIOS)('ends the %s stream with exactly one terminal event, last', async (scenario) => {
      const events = await collect(stream(scenario));
      const terminal = events.filter((e) => e.type === 'completed' || e.type === 'failed');
      expect(terminal).toHaveLength(1);
      expect(events[events.length - 1]).toBe(terminal[0]);
    });

    it('assembles streamed text', async () => {
      const turn = await assembleTurn(stream('text'));
      expect(turn.text).toBe(h.expect.text);
      expect(turn.toolCalls).toEqual([]);
      expect(turn.stopReason).toBe('end_turn');
    });

    it('assembles a tool call with the provider call id and the tool name the platform knows', async () => {
      const turn = await assembleTurn(stream('tool_call'));
      expect(turn.toolCalls).toEqual([{ kind: 'tool_call', ...h.expect.toolCall }]);
      expect(turn.malformedToolCalls).toEqual([]);
      expect(turn.stopReason).toBe('tool_use');
    });

    it('assembles parallel tool calls in order with distinct ids', async () => {
      const turn = await assembleTurn(stream('parallel_tool_calls'));
      expect(turn.toolCalls.map((c) => c.callId)).toEqual(h.expect.parallelCallIds);
      expect(turn.toolCalls.map((c) => c.name)).toEqual(['math.calculate', 'math.calculate']);
    });

    it('reports usage in every token class', async () => {
      const turn = await assembleTurn(stream('usage'));
      expect(turn.usage).toEqual(h.expect.usage);
    });

    it.each([
      ['transient', ModelTransientError],
      ['permanent', ModelPermanentError],
      ['malformed', ModelProtocolError],
    ] as const)('surfaces a %s failure as its error class', async (scenario, errorClass) => {
      await expect(assembleTurn(stream(scenario))).rejects.toBeInstanceOf(errorClass);
    });
  });
}
