import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFakeProvider, listFixtures, loadFixture } from '../../../src/adapters/model/fake';
import { assembleTurn } from '../../../src/domain/model/assembler';
import {
  ConfigurationError,
  ModelPermanentError,
  ModelProtocolError,
  ModelTransientError,
} from '../../../src/domain/errors';
import type { ModelAttempt, ModelEvent, ModelRequest, ModelTurn } from '../../../src/domain/model/model-events';
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

const FIXTURES_DIR = join(__dirname, '../../../config/model-fixtures');
const clock = testClock();
const provider = createFakeProvider({ fixturesDir: FIXTURES_DIR, clock });

function request(step: number): ModelRequest {
  return modelRequest({ tools: ['math.calculate', 'system.current_time'], metadata: { step: String(step) } });
}

function play(fixture: string, step = 1, at: ModelAttempt = attempt(1), req = request(step)): Promise<ModelTurn> {
  return assembleTurn(provider.stream(req, resolvedModel('fake', fixture), at));
}

describe('the fake provider', () => {
  it('ships a valid fixture for every scripted eval case', async () => {
    const names = await listFixtures(FIXTURES_DIR);
    expect(names).toEqual(
      expect.arrayContaining([
        'direct_answer',
        'calculator_then_answer',
        'two_sequential_tools',
        'invalid_tool_arguments',
        'unknown_tool',
        'tool_recoverable_error',
        'tool_permanent_error',
        'transient_then_answer',
        'permanent_failure',
        'step_limit',
        'repeated_tool_loop',
        'slow_calculator',
        'malformed_output',
        'hanging_model',
        'multiple_tool_calls',
      ]),
    );
    for (const name of names) await expect(loadFixture(FIXTURES_DIR, name)).resolves.toMatchObject({ name });
  });

  it('answers directly without tools', async () => {
    const turn = await play('direct_answer');
    expect(turn.text).toMatch(/^Hello!/);
    expect(turn.toolCalls).toEqual([]);
    expect(turn.stopReason).toBe('end_turn');
  });

  it('plays a tool call on step 1 and the final answer on step 2, with a deterministic call id', async () => {
    const first = await play('calculator_then_answer', 1);
    expect(first.toolCalls).toEqual([
      { kind: 'tool_call', callId: 'call_1_0', name: 'math.calculate', arguments: { expression: '17 * 23' } },
    ]);
    expect(first.stopReason).toBe('tool_use');
    const second = await play('calculator_then_answer', 2);
    expect(second.text).toBe('The result is 391.');
    expect(second.toolCalls).toEqual([]);
  });

  it('streams text as several chunks and arguments as several fragments', async () => {
    const answer = await collect(
      provider.stream(request(2), resolvedModel('fake', 'calculator_then_answer'), attempt()),
    );
    expect(answer.filter((e) => e.type === 'text_delta').length).toBeGreaterThan(1);
    const call = await collect(provider.stream(request(1), resolvedModel('fake', 'calculator_then_answer'), attempt()));
    const fragments = call.filter(
      (e): e is Extract<ModelEvent, { type: 'tool_call_delta' }> => e.type === 'tool_call_delta',
    );
    expect(fragments.length).toBeGreaterThan(1);
    expect(fragments.slice(1).every((f) => f.callId === undefined)).toBe(true);
    expect(call.at(-1)?.type).toBe('completed');
  });

  it('reports estimated usage that is non-zero, with a provisional usage event first', async () => {
    const events = await collect(
      provider.stream(request(2), resolvedModel('fake', 'calculator_then_answer'), attempt()),
    );
    expect(events[0]).toMatchObject({ type: 'usage', provisional: true });
    const turn = await play('calculator_then_answer', 2);
    expect(turn.usage.uncachedInputTokens).toBeGreaterThan(0);
    expect(turn.usage.outputTokens).toBe(Math.ceil('The result is 391.'.length / 4));
  });

  it('emits several tool calls in one turn', async () => {
    const turn = await play('multiple_tool_calls', 1);
    expect(turn.toolCalls.map((c) => [c.callId, c.arguments])).toEqual([
      ['call_1_0', { expression: '17 * 23' }],
      ['call_1_1', { expression: '12 * 9' }],
    ]);
  });

  it('plays two sequential tools on consecutive steps', async () => {
    expect((await play('two_sequential_tools', 1)).toolCalls[0]?.name).toBe('math.calculate');
    expect((await play('two_sequential_tools', 2)).toolCalls[0]?.name).toBe('system.current_time');
    expect((await play('two_sequential_tools', 3)).text).not.toBe('');
  });

  it('passes schema-invalid arguments and unknown tool names through for the runtime to reject', async () => {
    expect((await play('invalid_tool_arguments', 1)).toolCalls[0]?.arguments).toEqual({ expr: 1 });
    expect((await play('unknown_tool', 1)).toolCalls[0]?.name).toBe('weather.lookup');
  });

  it('repeats the last turn once the step passes the end of the script', async () => {
    const turn = await play('repeated_tool_loop', 7);
    expect(turn.toolCalls).toEqual([
      { kind: 'tool_call', callId: 'call_7_0', name: 'math.calculate', arguments: { expression: '2 + 2' } },
    ]);
    expect((await play('calculator_then_answer', 5)).text).toBe('The result is 391.');
  });

  it('substitutes the step into a repeating turn so step-limit calls never repeat exactly', async () => {
    expect((await play('step_limit', 1)).toolCalls[0]?.arguments).toEqual({ expression: '1 + 1' });
    expect((await play('step_limit', 12)).toolCalls[0]?.arguments).toEqual({ expression: '12 + 12' });
  });

  it('derives the step from the conversation when the request carries no step metadata', async () => {
    const conversation = [
      userMessage('What is 17 multiplied by 23?'),
      toolCall('call_1_0', 'math.calculate', { expression: '17 * 23' }),
      toolResult('call_1_0', 'math.calculate', { expression: '17 * 23', result: '391' }),
    ];
    const turn = await play('calculator_then_answer', 0, attempt(), modelRequest({ conversation }));
    expect(turn.text).toBe('The result is 391.');
  });

  it('fails with a permanent error when the step metadata is not a positive integer', async () => {
    await expect(
      play('direct_answer', 0, attempt(), modelRequest({ metadata: { step: 'two' } })),
    ).rejects.toMatchObject({
      constructor: ModelPermanentError,
      details: { providerCode: 'invalid_step' },
    });
  });

  it('fails attempt N with fail_attempts entry N-1 and plays the turn on later attempts', async () => {
    await expect(play('transient_then_answer', 1, attempt(1))).rejects.toMatchObject({
      constructor: ModelTransientError,
      message: 'rate limited, retry later',
      details: { providerCode: 'rate_limited' },
    });
    expect((await play('transient_then_answer', 1, attempt(2))).text).toBe(
      'Recovered after a transient provider error.',
    );
  });

  it('fails every attempt of a permanent failure fixture with a permanent error', async () => {
    for (const n of [1, 2, 3]) {
      await expect(play('permanent_failure', 1, attempt(n))).rejects.toBeInstanceOf(ModelPermanentError);
    }
  });

  it('ends a malformed turn without a terminal event, which the assembler rejects', async () => {
    const events = await collect(provider.stream(request(1), resolvedModel('fake', 'malformed_output'), attempt()));
    expect(events.some((e) => e.type === 'completed' || e.type === 'failed')).toBe(false);
    await expect(play('malformed_output')).rejects.toMatchObject({
      constructor: ModelProtocolError,
      details: { reason: 'missing_terminal_event' },
    });
  });

  it('hangs until the attempt is aborted and then fails with a transient timeout', async () => {
    const controller = new AbortController();
    const pending = play('hanging_model', 1, attempt(1, { signal: controller.signal }));
    let settled = false;
    void pending.catch(() => undefined).finally(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(settled).toBe(false);
    controller.abort();
    await expect(pending).rejects.toMatchObject({
      constructor: ModelTransientError,
      details: { providerCode: 'timeout' },
    });
  });

  it('hangs until the attempt deadline passes and then fails with a transient timeout', async () => {
    const started = Date.now();
    const deadline = attempt(1, { deadlineMs: clock.nowMs() + 40 });
    await expect(play('hanging_model', 1, deadline)).rejects.toMatchObject({
      constructor: ModelTransientError,
      details: { providerCode: 'timeout' },
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(35);
  });

  it('spreads the configured latency across the call and honours an abort during it', async () => {
    const slow = createFakeProvider({ fixturesDir: FIXTURES_DIR, clock, latencyMs: 60 });
    const started = Date.now();
    const turn = await assembleTurn(
      slow.stream(request(2), resolvedModel('fake', 'calculator_then_answer'), attempt()),
    );
    expect(turn.text).toBe('The result is 391.');
    expect(Date.now() - started).toBeGreaterThanOrEqual(50);

    const controller = new AbortController();
    setTimeout(() => controller.abort(), 10);
    const aborted = slow.stream(
      request(2),
      resolvedModel('fake', 'calculator_then_answer'),
      attempt(1, { signal: controller.signal }),
    );
    await expect(assembleTurn(aborted)).rejects.toMatchObject({ details: { providerCode: 'timeout' } });
  });

  it('reports a missing fixture as a permanent failure listing the available fixtures', async () => {
    await expect(play('no_such_fixture')).rejects.toMatchObject({
      constructor: ModelPermanentError,
      details: { providerCode: 'fixture_not_found' },
    });
    await expect(play('no_such_fixture')).rejects.toThrow(/available: .*calculator_then_answer/);
    await expect(loadFixture(FIXTURES_DIR, '../secrets')).rejects.toBeInstanceOf(ConfigurationError);
  });

  describe('with fixtures written by the test', () => {
    let dir: string;
    beforeAll(async () => {
      dir = await mkdtemp(join(tmpdir(), 'fake-fixtures-'));
    });
    afterAll(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    async function fixture(name: string, yaml: string): Promise<ModelTurn> {
      await writeFile(join(dir, `${name}.yaml`), yaml);
      const fake = createFakeProvider({ fixturesDir: dir, clock });
      return assembleTurn(fake.stream(request(1), resolvedModel('fake', name), attempt()));
    }

    it('streams raw_arguments verbatim so invalid JSON reaches the assembler as a malformed call', async () => {
      const turn = await fixture(
        'raw',
        'name: raw\nturns:\n  - tool_calls:\n      - name: math.calculate\n        raw_arguments: \'{"expression": "1 +\'\n',
      );
      expect(turn.toolCalls).toEqual([]);
      expect(turn.malformedToolCalls).toEqual([
        { callId: 'call_1_0', name: 'math.calculate', raw: '{"expression": "1 +' },
      ]);
    });

    it('uses the usage, call id and stop reason a fixture declares', async () => {
      const turn = await fixture(
        'declared',
        [
          'name: declared',
          'turns:',
          '  - text: "cut"',
          '    stop_reason: max_tokens',
          '    usage: { input: 10, output: 3, cached: 4, reasoning: 2 }',
          '    tool_calls: [{ name: a.b, id: my_call }]',
        ].join('\n'),
      );
      expect(turn.usage).toEqual({
        uncachedInputTokens: 10,
        cachedInputTokens: 4,
        cacheWriteTokens: 0,
        outputTokens: 3,
        reasoningTokens: 2,
      });
      expect(turn.stopReason).toBe('max_tokens');
      expect(turn.toolCalls).toEqual([{ kind: 'tool_call', callId: 'my_call', name: 'a.b', arguments: {} }]);
    });

    it('rejects a fixture with an unknown key, naming the field', async () => {
      await writeFile(join(dir, 'typo.yaml'), 'name: typo\nturns:\n  - tool_call: []\n');
      await expect(loadFixture(dir, 'typo')).rejects.toThrow(/turns\[0\] has unknown key\(s\) tool_call/);
      await expect(loadFixture(dir, 'typo')).rejects.toMatchObject({ details: { code: 'fixture_invalid' } });
    });

    it('rejects a fixture that is not valid YAML or whose name differs from its file', async () => {
      await writeFile(join(dir, 'broken.yaml'), 'name: broken\nturns: [\n');
      await expect(loadFixture(dir, 'broken')).rejects.toThrow(/'broken' .* is malformed/);
      await writeFile(join(dir, 'renamed.yaml'), 'name: original\nturns:\n  - text: hi\n');
      await expect(loadFixture(dir, 'renamed')).rejects.toThrow(/does not match the file name/);
    });

    it('applies an edit of a fixture to the very next call of the same provider, and a removal too', async () => {
      const file = join(dir, 'edited.yaml');
      const fake = createFakeProvider({ fixturesDir: dir, clock });
      const reply = async () =>
        (await assembleTurn(fake.stream(request(1), resolvedModel('fake', 'edited'), attempt()))).text;
      await writeFile(file, 'name: edited\nturns:\n  - text: "before"\n');
      expect(await reply()).toBe('before');
      expect(await reply()).toBe('before');
      await writeFile(file, 'name: edited\nturns:\n  - text: "after the edit"\n');
      expect(await reply()).toBe('after the edit');
      await rm(file);
      await expect(loadFixture(dir, 'edited')).rejects.toMatchObject({ details: { code: 'fixture_not_found' } });
    });

    it('lists the available fixtures when one is missing', async () => {
      await expect(loadFixture(dir, 'missing')).rejects.toMatchObject({
        constructor: ConfigurationError,
        details: { code: 'fixture_not_found', available: expect.arrayContaining(['raw', 'declared']) },
      });
    });
  });
});
