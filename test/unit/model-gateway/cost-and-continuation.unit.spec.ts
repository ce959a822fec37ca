import { withProviderContinuation } from '../../../src/context/context-builder';
import type { ConversationItem } from '../../../src/domain/conversation/items';
import { costOf, priceModelCall } from '../../../src/domain/run/usage';
import { calculatorRequest } from './support/profiles';

const usage = {
  uncachedInputTokens: 214,
  cachedInputTokens: 1792,
  cacheWriteTokens: 0,
  outputTokens: 412,
  reasoningTokens: 384,
};
const prices = {
  uncachedInputPerMillion: '0.25',
  cachedInputPerMillion: '0.025',
  cacheWritePerMillion: '0',
  outputPerMillion: '2.00',
};

describe('model call cost (plan §6.5 precedence)', () => {
  it('prefers the cost the provider reported', () => {
    expect(priceModelCall(usage, '0.0001164', { kind: 'price_table', prices, source: 'catalog_price' })).toEqual({
      cost: '0.0001164',
      costSource: 'provider_response',
    });
  });

  it('falls back to the catalog price of the profile, with decimal math', () => {
    expect(priceModelCall(usage, undefined, { kind: 'price_table', prices, source: 'catalog_price' })).toEqual({
      cost: '0.0009223',
      costSource: 'catalog_price',
    });
  });

  it('ignores a provider cost that is not a decimal', () => {
    expect(priceModelCall(usage, 'NaN', { kind: 'price_table', prices, source: 'catalog_price' }).costSource).toBe(
      'catalog_price',
    );
  });

  it('is free for the offline providers', () => {
    expect(priceModelCall(usage, undefined, { kind: 'free' })).toEqual({ cost: '0', costSource: 'free' });
  });

  it('bills reasoning as output unless a profile prices it separately', () => {
    // 214×0.25 + 1792×0.025 + 28×2 + 384×4 = 53.5 + 44.8 + 56 + 1536 = 1690.3
    expect(costOf(usage, { ...prices, reasoningPerMillion: '4.00' })).toBe('0.0016903');
    // Without a reasoning price all 412 output tokens (reasoning included) cost the output price.
    expect(costOf(usage, prices)).toBe('0.0009223');
  });
});

describe('provider continuation in the request', () => {
  const thinking: ConversationItem = {
    kind: 'provider_reasoning',
    provider: 'anthropic',
    opaquePayload: { type: 'thinking', thinking: 't', signature: 's' },
  };
  const base = calculatorRequest().conversation;
  const call = (id: string): ConversationItem => ({
    kind: 'tool_call',
    callId: id,
    name: 'math.calculate',
    arguments: {},
  });
  const result = (id: string): ConversationItem => ({
    kind: 'tool_result',
    callId: id,
    name: 'math.calculate',
    output: 1,
    isError: false,
    trust: 'tool_untrusted',
  });

  it('places the reasoning items before the tool calls of the last turn', () => {
    const request = calculatorRequest({
      conversation: [...base, call('a'), result('a'), call('b'), call('c'), result('b'), result('c')],
    });
    const out = withProviderContinuation(request, { provider: 'anthropic', items: [thinking] }, 'anthropic');
    expect(
      out.conversation.map((i) =>
        i.kind === 'tool_call' || i.kind === 'tool_result' ? `${i.kind}:${i.callId}` : i.kind,
      ),
    ).toEqual([
      'user',
      'tool_call:a',
      'tool_result:a',
      'provider_reasoning',
      'tool_call:b',
      'tool_call:c',
      'tool_result:b',
      'tool_result:c',
    ]);
  });

  it('drops a continuation that came from another provider', () => {
    const request = calculatorRequest({ conversation: [...base, call('a'), result('a')] });
    expect(withProviderContinuation(request, { provider: 'anthropic', items: [thinking as never] }, 'openai')).toBe(
      request,
    );
  });
});
