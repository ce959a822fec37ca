import {
  REPLACEMENT_CHARACTER as R,
  findUnstorableText,
  toStorableText,
  unstorableReason,
} from '../../../src/domain/events/storable-text';
import { checkJsonShape } from '../../../src/api/body-parsing';

describe('storable text (ADR 0041)', () => {
  it.each([
    ['plain text', 'hello', null],
    ['an emoji (a well-formed surrogate pair)', 'party \ud83c\udf89', null],
    ['a NUL', 'a\u0000b', 'NUL'],
    ['a lone high surrogate', 'a\ud800b', 'surrogate'],
    ['a lone low surrogate', '\udc00', 'surrogate'],
    ['a reversed pair', '\udf89\ud83c', 'surrogate'],
  ])('%s', (_label, s, problem) => {
    const reason = unstorableReason(s);
    if (problem === null) expect(reason).toBeNull();
    else expect(reason).toContain(problem);
  });

  it('names the first unstorable field as the API does', () => {
    expect(findUnstorableText({ content: [{ type: 'text', text: 'ok' }, { text: 'a\u0000' }] })).toEqual({
      field: 'content[1].text',
      problem: expect.stringContaining('NUL'),
    });
    expect(findUnstorableText({ m: { 'k\ud800': 1 } })?.field).toBe('m.k\ud800');
    expect(findUnstorableText({ a: ['x', { b: 'ok' }] })).toBeNull();
  });

  it('replaces NUL and lone surrogates with U+FFFD, keeps pairs, and reports where', () => {
    const input = { messageId: 'x', text: 'a\u0000b and \ud800 end \ud83c\udf89', n: 1, list: ['ok', '\udc00'] };
    const { value, replaced } = toStorableText(input);
    expect(value).toEqual({ messageId: 'x', text: `a${R}b and ${R} end \ud83c\udf89`, n: 1, list: ['ok', R] });
    expect(replaced).toEqual(['text', 'list[1]']);
    expect(input.text).toContain('\u0000'); // the input is not mutated
    expect(JSON.stringify(value)).not.toMatch(/\\u0000|\\ud[89a-f]/i);
  });

  it('replaces in keys too, and returns the very same object when nothing needs replacing', () => {
    expect(toStorableText({ 'k\u0000': 1 }).value).toEqual({ [`k${R}`]: 1 });
    const clean = { a: [{ b: 'c' }], d: null };
    expect(toStorableText(clean).value).toBe(clean);
  });
});

describe('checkJsonShape', () => {
  const shape = (s: string) => () => checkJsonShape(Buffer.from(s), { maxDepth: 3, maxElements: 5 });
  it('counts depth and elements outside strings only', () => {
    expect(shape('[[[1]]]')).not.toThrow();
    expect(shape('[[[[1]]]]')).toThrow(expect.objectContaining({ type: 'entity.too.deep', limit: 3 }));
    expect(shape('["[[[[[", "\\"[[[["]')).not.toThrow();
    expect(shape('[1,2,3,4,5,6]')).toThrow(expect.objectContaining({ type: 'entity.too.many.elements', limit: 5 }));
  });
});
