import { ThinkScrubber } from '../../../src/adapters/model/shared/think-scrubber';
import { TextToolCallParser } from '../../../src/adapters/model/shared/text-tool-calls';
import { ToolNameCodec } from '../../../src/adapters/model/shared/tool-names';

function scrub(chunks: string[]): { text: string; reasoning: string } {
  const s = new ThinkScrubber();
  let text = '';
  let reasoning = '';
  for (const c of [...chunks.map((x) => s.push(x)), s.end()]) {
    text += c.text;
    reasoning += c.reasoning;
  }
  return { text, reasoning };
}

/** Every way of cutting `s` into two chunks, plus one character at a time. */
function splits(s: string): string[][] {
  const out: string[][] = [[s], [...s]];
  for (let i = 1; i < s.length; i++) out.push([s.slice(0, i), s.slice(i)]);
  return out;
}

describe('the boundary-gated <think> scrubber', () => {
  it.each(splits('<think>plan it</think>\n\nAnswer.'))(
    'separates a leading reasoning block however the stream is cut (%j)',
    (...chunks) => {
      expect(scrub(chunks)).toEqual({ text: 'Answer.', reasoning: 'plan it' });
    },
  );

  it.each([
    ['<THINKING>a</THINKING>b', { text: 'b', reasoning: 'a' }],
    ['  \n<reasoning>a</reasoning> b', { text: 'b', reasoning: 'a' }],
    ['<think>a</think><think>b</think>c', { text: 'c', reasoning: 'ab' }],
    ['<think>never closed', { text: '', reasoning: 'never closed' }],
  ])('handles the tag variant %j', (input, expected) => {
    expect(scrub([input])).toEqual(expected);
  });

  it.each(splits('Use a <think> tag.\n<think>x</think> is prose.'))(
    'leaves prose that mentions the tag alone (%j)',
    (...chunks) => {
      expect(scrub(chunks)).toEqual({ text: 'Use a <think> tag.\n<think>x</think> is prose.', reasoning: '' });
    },
  );

  it('releases ordinary text immediately rather than buffering the whole answer', () => {
    const s = new ThinkScrubber();
    expect(s.push('Hello').text).toBe('Hello');
    expect(s.push(' <thi').text).toBe(' <thi');
  });
});

describe('the <tool_call> text parser', () => {
  function parse(chunks: string[]) {
    const p = new TextToolCallParser();
    return [...chunks.flatMap((c) => p.push(c)), ...p.end()];
  }

  it.each(splits('Sure.\n<tool_call>\n{"name": "f", "arguments": {"x": 1}}\n</tool_call>'))(
    'lifts out a complete call however the stream is cut (%j)',
    (...chunks) => {
      const pieces = parse(chunks);
      expect(pieces.filter((p) => p.type === 'call')).toEqual([{ type: 'call', name: 'f', rawArguments: '{"x":1}' }]);
      expect(
        pieces
          .filter((p) => p.type === 'text')
          .map((p) => (p as { text: string }).text)
          .join(''),
      ).toBe('Sure.\n');
    },
  );

  it('reports a call with broken JSON as a call (so the model is told) and leaves non-calls as text', () => {
    expect(parse(['<tool_call>{"name": "f", "arguments": {</tool_call>'])).toEqual([
      { type: 'call', name: 'f', rawArguments: '{"name": "f", "arguments": {' },
    ]);
    expect(parse(['<tool_call>just words</tool_call>'])).toEqual([
      { type: 'text', text: '<tool_call>just words</tool_call>' },
    ]);
  });
});

describe('tool name encoding', () => {
  it('maps dotted names to provider-safe names and back, without collisions', () => {
    const codec = new ToolNameCodec([
      { name: 'math.calculate' },
      { name: 'math_calculate' },
      { name: 'system.current_time' },
    ]);
    expect(codec.encode('math.calculate')).toBe('math_calculate');
    expect(codec.encode('math_calculate')).toBe('math_calculate_2');
    expect(codec.decode('math_calculate')).toBe('math.calculate');
    expect(codec.decode('math_calculate_2')).toBe('math_calculate');
    expect(codec.decode('unknown_tool')).toBe('unknown_tool');
  });
});
