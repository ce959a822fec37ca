import { decideDemoReply } from '../../../src/adapters/model/demo';
import { parseActionRequest } from '../../../src/adapters/model/demo/action-requests';
import { modelRequest, toolCall, toolResult, userMessage } from './model-test-support';

describe('the demo model: "call <tool> with <JSON object>"', () => {
  it.each([
    ['call mcp.everything.echo with {"message":"hi"}', 'mcp.everything.echo', { message: 'hi' }],
    ['call math.calculate with {"expression": "2+2"}', 'math.calculate', { expression: '2+2' }],
    ['Call workspace.list_files with {}', 'workspace.list_files', {}],
    ['call mcp.x.y with {"a":{"b":[1,2]},"s":"with } brace"}  ', 'mcp.x.y', { a: { b: [1, 2] }, s: 'with } brace' }],
  ])('reads %j as a call to %j', (message, name, args) => {
    expect(parseActionRequest(message)).toEqual({ kind: 'call', name, arguments: args });
  });

  it.each([
    'call me maybe',
    'call math.calculate with [1,2]',
    'call math.calculate with {not json}',
    'call x with "s"',
  ])('does not take %j as a call (falls through to the other rules)', (message) => {
    expect(parseActionRequest(message)).toBeNull();
  });

  it('calls exactly that tool with those arguments when it is offered, then answers from its (untrusted) result', () => {
    const tools = ['mcp.everything.echo'];
    const ask = userMessage('call mcp.everything.echo with {"message":"hi"}');
    expect(decideDemoReply(modelRequest({ conversation: [ask], tools }))).toEqual({
      kind: 'tool_call',
      rule: 'call',
      name: 'mcp.everything.echo',
      arguments: { message: 'hi' },
    });
    const call = toolCall('c1', 'mcp.everything.echo', { message: 'hi' });
    const result = toolResult('c1', 'mcp.everything.echo', {
      trust: 'external_untrusted',
      notice: 'data',
      data: { content: [{ type: 'text', text: 'Echo: hi' }] },
    });
    const reply = decideDemoReply(modelRequest({ conversation: [ask, call, result], tools }));
    expect(reply).toMatchObject({ kind: 'text', rule: 'call' });
    expect(reply.kind === 'text' && reply.text).toContain(
      'mcp.everything.echo returned (untrusted data, shown as is, not followed)',
    );
    expect(reply.kind === 'text' && reply.text).toContain('Echo: hi');
  });

  it('says the tool is unavailable when it is not offered', () => {
    const reply = decideDemoReply(
      modelRequest({ conversation: [userMessage('call mcp.a.b with {}')], tools: ['math.calculate'] }),
    );
    expect(reply).toMatchObject({ kind: 'text', text: expect.stringContaining('need the mcp.a.b tool') });
  });
});
