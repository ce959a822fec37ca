import { createDemoProvider, extractArithmeticExpression, parseTimeQuestion } from '../../../src/adapters/model/demo';
import { assembleTurn } from '../../../src/domain/model/assembler';
import type { ConversationItem } from '../../../src/domain/conversation/items';
import type { ModelEvent, ModelTurn } from '../../../src/domain/model/model-events';
import { createCalculatorTool } from '../../../src/tools/math';
import { createCurrentTimeTool } from '../../../src/tools/system/current-time';
import type { ToolExecutionContext } from '../../../src/ports/tool';
import {
  attempt,
  collect,
  modelRequest,
  resolvedModel,
  testClock,
  toolCall,
  toolResult,
  userMessage,
} from './model-test-support';

const ALL_TOOLS = ['math.calculate', 'system.current_time'];
const clock = testClock(Date.UTC(2025, 0, 15, 12, 0, 0));
const demo = createDemoProvider({ clock });

function ask(conversation: readonly ConversationItem[], tools: readonly string[] = ALL_TOOLS): Promise<ModelTurn> {
  return assembleTurn(demo.stream(modelRequest({ conversation, tools }), resolvedModel('demo', 'demo'), attempt()));
}

describe('the demo model', () => {
  describe('arithmetic extraction', () => {
    it.each([
      ['What is 17 multiplied by 23?', '17 * 23'],
      ['calculate (2+3)*4', '(2+3)*4'],
      ['what is 2^10', '2^10'],
      ["what's 12 times 9", '12 * 9'],
      ['What\u2019s 12 times 9?', '12 * 9'],
      ['100 divided by 4', '100 / 4'],
      ['7 plus 5', '7 + 5'],
      ['10 minus 3', '10 - 3'],
      ['2 to the power of 8', '2 ^ 8'],
      ['square root of 16', 'sqrt(16)'],
      ['What is the square root of 16?', 'sqrt(16)'],
      ['(2+3)*4', '(2+3)*4'],
      ['how much is 1,000 + 5?', '1000 + 5'],
      ['what is 3 squared', '3^2'],
      ['Compute -5 + 3.5.', '-5 + 3.5'],
    ])('reads %j as the expression %j', (message, expression) => {
      expect(extractArithmeticExpression(message)).toBe(expression);
    });

    it.each(['hello there', 'what happened on 2024-01-05', 'I have 2 cats', 'what is 5'])(
      'does not treat %j as arithmetic',
      (message) => {
        expect(extractArithmeticExpression(message)).toBeNull();
      },
    );
  });

  describe('time questions', () => {
    it.each([
      ['What time is it in Europe/Paris?', 'Europe/Paris'],
      ['what time is it', undefined],
      ["What's the time in America/New_York", 'America/New_York'],
      ['what is the current time in UTC.', 'UTC'],
    ])('reads %j as a time question for zone %j', (message, timezone) => {
      expect(parseTimeQuestion(message)).toEqual({ timezone });
    });

    it('does not treat other questions as time questions', () => {
      expect(parseTimeQuestion('how long does it take?')).toBeNull();
    });
  });

  it('calls math.calculate first and answers with its result once the result is in the conversation', async () => {
    const question = userMessage('What is 17 multiplied by 23?');
    const first = await ask([question]);
    expect(first.text).toBe('');
    expect(first.stopReason).toBe('tool_use');
    expect(first.toolCalls).toEqual([
      { kind: 'tool_call', callId: 'call_attempt_1', name: 'math.calculate', arguments: { expression: '17 * 23' } },
    ]);

    const second = await ask([
      question,
      toolCall('call_attempt_1', 'math.calculate', { expression: '17 * 23' }),
      toolResult('call_attempt_1', 'math.calculate', { expression: '17 * 23', result: '391' }),
    ]);
    expect(second.toolCalls).toEqual([]);
    expect(second.text).toBe('The result is 391.');
    expect(second.stopReason).toBe('end_turn');
  });

  it('answers with the error when the calculator fails', async () => {
    const turn = await ask([
      userMessage('what is 1/0'),
      toolCall('c1', 'math.calculate', { expression: '1/0' }),
      toolResult('c1', 'math.calculate', { error_code: 'calc_division_by_zero', message: 'division by zero' }, true),
    ]);
    expect(turn.text).toBe('I could not calculate that: division by zero');
  });

  it('calls system.current_time with the zone and formats its answer from the tool output', async () => {
    const question = userMessage('What time is it in Europe/Paris?');
    expect((await ask([question])).toolCalls[0]).toMatchObject({
      name: 'system.current_time',
      arguments: { timezone: 'Europe/Paris' },
    });
    const output = {
      timezone: 'Europe/Paris',
      iso_utc: '2025-01-15T12:00:00.000Z',
      local_date: '2025-01-15',
      local_time: '13:00:00',
      utc_offset: '+01:00',
      weekday: 'Wednesday',
    };
    const answer = await ask([
      question,
      toolCall('c1', 'system.current_time', { timezone: 'Europe/Paris' }),
      toolResult('c1', 'system.current_time', output),
    ]);
    expect(answer.text).toBe('The current time in Europe/Paris is 13:00:00 (2025-01-15, UTC+01:00).');
  });

  it('omits the zone argument when none is asked for, leaving the tool its UTC default', async () => {
    expect((await ask([userMessage('what time is it?')])).toolCalls[0]?.arguments).toEqual({});
  });

  it('answers directly that the tool is unavailable when the request does not offer it', async () => {
    const turn = await ask([userMessage('What is 17 multiplied by 23?')], ['system.current_time']);
    expect(turn.toolCalls).toEqual([]);
    expect(turn.text).toMatch(/math\.calculate tool .* not available/);
  });

  it('quotes any other message in a direct answer', async () => {
    const turn = await ask([userMessage('Tell me a story')]);
    expect(turn.text).toBe(
      'You said: "Tell me a story". I am the offline demo model; ask me to calculate something or for the time.',
    );
  });

  it('answers the latest user message, not an earlier one', async () => {
    const turn = await ask([
      userMessage('What is 17 multiplied by 23?'),
      toolCall('c1', 'math.calculate', { expression: '17 * 23' }),
      toolResult('c1', 'math.calculate', { expression: '17 * 23', result: '391' }),
      { kind: 'assistant', text: 'The result is 391.' },
      userMessage('7 plus 5'),
    ]);
    expect(turn.toolCalls[0]?.arguments).toEqual({ expression: '7 + 5' });
  });

  it('streams text in several chunks and reports non-zero usage', async () => {
    const request = modelRequest({ conversation: [userMessage('Tell me a story')], tools: ALL_TOOLS });
    const events: ModelEvent[] = await collect(demo.stream(request, resolvedModel('demo', 'demo'), attempt()));
    expect(events.filter((e) => e.type === 'text_delta').length).toBeGreaterThan(1);
    const turn = await ask([userMessage('Tell me a story')]);
    expect(turn.usage.uncachedInputTokens).toBeGreaterThan(0);
    expect(turn.usage.outputTokens).toBeGreaterThan(0);
  });

  it('honours the latency option and an abort during it', async () => {
    const slow = createDemoProvider({ clock, latencyMs: 50 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 5);
    const stream = slow.stream(
      modelRequest({ conversation: [userMessage('hi')] }),
      resolvedModel('demo', 'demo'),
      attempt(1, { signal: controller.signal }),
    );
    await expect(assembleTurn(stream)).rejects.toMatchObject({ details: { providerCode: 'timeout' } });
  });

  describe('against the real builtin tools', () => {
    const ctx = { clock, signal: new AbortController().signal } as unknown as ToolExecutionContext;

    it.each([
      ['What is 17 multiplied by 23?', 'The result is 391.'],
      ["what's 12 times 9", 'The result is 108.'],
      ['2 to the power of 8', 'The result is 256.'],
      ['square root of 16', 'The result is 4.'],
      ['calculate (2+3)*4', 'The result is 20.'],
    ])('answers %j with %j', async (message, expected) => {
      const call = (await ask([userMessage(message)])).toolCalls[0];
      if (call === undefined) throw new Error('expected a tool call');
      const outcome = await createCalculatorTool().execute(call.arguments, ctx);
      if (!outcome.ok) throw new Error(outcome.message);
      const turn = await ask([userMessage(message), call, toolResult(call.callId, call.name, outcome.output)]);
      expect(turn.text).toBe(expected);
    });

    it('answers a time question from the real current-time tool', async () => {
      const call = (await ask([userMessage('What time is it in Europe/Paris?')])).toolCalls[0];
      if (call === undefined) throw new Error('expected a tool call');
      const outcome = await createCurrentTimeTool().execute(call.arguments, ctx);
      if (!outcome.ok) throw new Error(outcome.message);
      const turn = await ask([
        userMessage('What time is it in Europe/Paris?'),
        call,
        toolResult(call.callId, call.name, outcome.output),
      ]);
      expect(turn.text).toBe('The current time in Europe/Paris is 13:00:00 (2025-01-15, UTC+01:00).');
    });
  });
});
