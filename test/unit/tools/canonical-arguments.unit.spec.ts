import { ValidationError } from '../../../src/domain/errors';
import { argumentsHash, normalizeArguments } from '../../../src/tools/registry';

describe('normalizeArguments', () => {
  it('sorts object keys recursively and keeps array order', () => {
    expect(normalizeArguments({ b: 1, a: { d: [3, { z: 1, y: 2 }], c: 'x' } })).toBe(
      '{"a":{"c":"x","d":[3,{"y":2,"z":1}]},"b":1}',
    );
  });

  it('sorts integer-like keys as strings, not in JavaScript enumeration order', () => {
    expect(normalizeArguments({ 10: 'ten', 9: 'nine', a: 'a' })).toBe('{"10":"ten","9":"nine","a":"a"}');
  });

  it('follows JSON semantics for undefined members and slots', () => {
    expect(normalizeArguments({ a: undefined, b: [undefined, null] })).toBe('{"b":[null,null]}');
  });

  it('escapes strings exactly as JSON.stringify does', () => {
    expect(normalizeArguments({ 'quote"key': 'line\nbreak ü' })).toBe(JSON.stringify({ 'quote"key': 'line\nbreak ü' }));
  });

  it('refuses values JSON cannot represent', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic['self'] = cyclic;
    expect(() => normalizeArguments(cyclic)).toThrow(ValidationError);
    expect(() => normalizeArguments({ big: BigInt(1) })).toThrow(ValidationError);
    expect(() => normalizeArguments(undefined)).toThrow(ValidationError);
  });

  it('accepts the same object twice when it is shared but not cyclic', () => {
    const shared = { x: 1 };
    expect(normalizeArguments({ a: shared, b: shared })).toBe('{"a":{"x":1},"b":{"x":1}}');
  });
});

describe('argumentsHash', () => {
  it('is the same for arguments that differ only in key order', () => {
    const first = argumentsHash({ expression: '1+1', options: { precise: true, digits: 50 } });
    const second = argumentsHash({ options: { digits: 50, precise: true }, expression: '1+1' });
    expect(second).toBe(first);
  });

  it('is a sha256 hex digest of the canonical JSON', () => {
    expect(argumentsHash({})).toBe('44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a');
  });

  it('differs when a value differs', () => {
    expect(argumentsHash({ expression: '1+1' })).not.toBe(argumentsHash({ expression: '1+2' }));
  });
});
