import { extractFacts, factOf, formationInvocationId, sentencesOf } from '../../../src/domain/memory/formation';
import { parseProposals } from '../../../src/runtime/memory-formation-model';

/** A user message event of one session, by id. */
const at = (id: number) => ({ id, sessionId: '00000000-0000-4000-8000-00000000aaaa', sequence: id });

describe('extractive formation (ADR 0043)', () => {
  it.each([
    ['My time zone is Europe/Paris', { statement: 'My time zone is Europe/Paris', subject: null }],
    ['remember that our team is called Blue Falcon', { statement: 'our team is called Blue Falcon', subject: null }],
    ['please call me Sam', { statement: 'call me Sam', subject: 'preferred name' }],
    ['I prefer short answers', { statement: 'I prefer short answers', subject: null }],
    ["I'm based in Lyon", { statement: 'I live in Lyon', subject: 'location' }],
    ['I work for Acme Corp', { statement: 'I work at Acme Corp', subject: 'employer' }],
  ])('finds the fact in "%s"', (sentence, fact) => {
    expect(factOf(sentence)).toEqual(fact);
  });

  it.each([
    'my build is broken',
    'my file is attached',
    'fix the tests',
    'my favourite thing in the whole wide world is a very long list of many many words',
    'the sky is blue',
  ])('finds no durable fact in "%s"', (sentence) => {
    expect(factOf(sentence)).toBeNull();
  });

  it('drops questions and splits sentences', () => {
    expect(sentencesOf('Hi. My name is Ana! What is my name? I like tea')).toEqual([
      'Hi',
      'My name is Ana',
      'I like tea',
    ]);
  });

  it('keeps the first mention, skips what memory.remember wrote, cites the message', () => {
    const out = extractFacts(
      [
        { event: at(7), text: 'My name is Ana. I like tea.' },
        { event: at(9), text: 'my name is Ana' },
      ],
      new Set(['i like tea']),
    );
    expect(out).toEqual([{ statement: 'My name is Ana', subject: null, source: at(7) }]);
  });

  it('derives the same invocation id for the same run and statement, another for another run', () => {
    const a = formationInvocationId('run-1', 'My name is Ana.');
    expect(formationInvocationId('run-1', 'my name is ana')).toBe(a);
    expect(formationInvocationId('run-2', 'My name is Ana.')).not.toBe(a);
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});

describe('model proposals are validated', () => {
  it('accepts the schema, fenced or not', () => {
    expect(parseProposals('```json\n{"memories": [{"statement": "I like tea", "subject": "tea"}]}\n```')).toEqual([
      { statement: 'I like tea', subject: 'tea' },
    ]);
  });

  it.each([
    ['not json', 'model output is not JSON'],
    ['{"memories": [{"statement": ""}]}', expect.stringContaining('does not match the schema')],
    ['{"memories": [{"statement": "x", "extra": 1}]}', expect.stringContaining('does not match the schema')],
    ['{"facts": []}', expect.stringContaining('does not match the schema')],
  ])('refuses %s', (text, reason) => {
    expect(parseProposals(text)).toEqual(reason);
  });
});
