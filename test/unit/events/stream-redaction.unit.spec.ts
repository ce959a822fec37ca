import fc from 'fast-check';
import { findSecret } from '../../../src/domain/events/secret-scan';
import { MAX_HOLD_CHARS, redactSecrets, StreamRedactor } from '../../../src/domain/events/stream-redaction';

// Fake, well-formed credentials, built from pieces so the committed-secret scan does not flag this file.
const OPENAI = `${'sk-'}proj-${'Ab3dEf6hIj9kLm2n'.repeat(3)}`;
const ANTHROPIC = `${'sk-'}ant-api03-${'Zz09_x'.repeat(6)}`;
const BEARER = `${'Bear'}er ${'q7Wc2kLp9'.repeat(4)}`;
const PEM = [
  `-----BEGIN ${'RSA '}PRIVATE KEY-----`,
  'MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePz',
  '-----END RSA PRIVATE KEY-----',
].join('\n');

/** A distinctive piece of each fake credential: never published raw. */
const BODIES = [
  'Ab3dEf6hIj9kLm2n',
  'Zz09_xZz09_x',
  'q7Wc2kLp9q7Wc2kLp9',
  'MIIEowIBAAKCAQEAu1SU1',
  '0123456789ABCDEF',
  'a1B2a1B2',
];

/** Feeds `parts` through one redactor and returns what it published, delta by delta, and at the end. */
function stream(parts: readonly string[]): { out: string[]; tail: string; redactor: StreamRedactor } {
  const redactor = new StreamRedactor();
  const out = parts.map((p) => redactor.push(p));
  return { out, tail: redactor.end(), redactor };
}

/** Every way to cut `text` into pieces at the given offsets. */
function cut(text: string, offsets: readonly number[]): string[] {
  const at = [...new Set(offsets.map((o) => o % (text.length + 1)))].sort((a, b) => a - b);
  const parts: string[] = [];
  let from = 0;
  for (const o of at) {
    parts.push(text.slice(from, o));
    from = o;
  }
  parts.push(text.slice(from));
  return parts;
}

describe('redactSecrets', () => {
  it('replaces each credential of the store patterns, naming the pattern, and leaves the prose', () => {
    const r = redactSecrets(`use ${OPENAI} or ${ANTHROPIC}; header ${BEARER}, then\n${PEM}\nthanks`);

    expect(r.text).toBe(
      'use [REDACTED:openai_api_key] or [REDACTED:anthropic_api_key]; header [REDACTED:bearer_token], then\n[REDACTED:private_key]\nthanks',
    );
    expect([...r.kinds].sort()).toEqual(['anthropic_api_key', 'bearer_token', 'openai_api_key', 'private_key']);
    expect(findSecret(r.text)).toBeUndefined();
  });

  it('cuts an unterminated private key from its header on', () => {
    expect(redactSecrets(`key:\n${PEM.split('\n').slice(0, 2).join('\n')}`).text).toBe('key:\n[REDACTED:private_key]');
  });
});

describe('StreamRedactor', () => {
  it('publishes ordinary words at once, holding nothing', () => {
    const { out, tail } = stream(['Hello', ' world,', ' 17 multiplied by 23 is 391']);

    expect(out).toEqual(['Hello', ' world,', ' 17 multiplied by 23 is 391']);
    expect(tail).toBe('');
  });

  it('holds a key split over deltas until it ends, then publishes it redacted, never a raw piece', () => {
    const parts = ['my key is s', 'k-', 'proj-Ab3dEf6hIj9k', 'Lm2nAb3dEf6hIj9kLm2nAb3dEf6hIj9kLm2n', ' ok'];
    const { out, tail, redactor } = stream(parts);

    expect(out).toEqual(['my key is ', '', '', '', '[REDACTED:openai_api_key] ok']);
    expect(tail).toBe('');
    expect(redactor.kinds).toEqual(['openai_api_key']);
  });

  it('holds a bearer token across the space after Bearer, and a key block from its header to its end line', () => {
    const { out, tail } = stream([
      'auth: Bea',
      'rer',
      ' ',
      'q7Wc2kLp9q7Wc2kLp9',
      'q7Wc2kLp9q7Wc2kLp9\n',
      ...PEM.match(/.{1,7}/gs)!,
      '\ndone',
    ]);

    expect(out.join('') + tail).toBe('auth: [REDACTED:bearer_token]\n[REDACTED:private_key]\ndone');
  });

  it('publishes what it held, redacted, when the stream ends', () => {
    expect(stream(['the key: ', OPENAI.slice(0, 30)]).out).toEqual(['the key: ', '']);
    expect(stream(['the key: ', OPENAI]).tail).toBe('[REDACTED:openai_api_key]');
    expect(stream(['ends with sk-ab']).tail).toBe('sk-ab');
  });

  it('releases a held run longer than MAX_HOLD_CHARS, and swallows a key block that long until its end line', () => {
    const longToken = stream([`x sk-${'a'.repeat(MAX_HOLD_CHARS + 10)}`]);
    expect(longToken.out).toEqual(['x [REDACTED:openai_api_key]']);

    const body = 'MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePz\n'.repeat(Math.ceil(MAX_HOLD_CHARS / 44) + 1);
    const longKey = stream([
      'before ',
      PEM.split('\n')[0],
      '\n',
      body,
      body,
      '-----END RSA ',
      'PRIVATE KEY-----',
      ' after',
    ]);
    expect(longKey.out.join('') + longKey.tail).toBe('before [REDACTED:private_key] after');
  });

  it('stays linear on a huge delta: a token of a million characters, a million characters of words, a long token ended by punctuation', () => {
    const started = Date.now();
    const token = stream([`x ${'a1'.repeat(500_000)}`]);
    const words = stream(['ab '.repeat(333_333)]);
    const ended = stream([`${'a'.repeat(200_000)}!`]);

    expect(token.out[0].length + words.out[0].length + ended.out[0].length).toBe(1_000_002 + 999_999 + 200_001);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it('publishes exactly what redacting the whole text would, however the text is split (property)', () => {
    const secrets = fc.constantFrom(
      OPENAI,
      ANTHROPIC,
      BEARER,
      PEM,
      'AKIA0123456789ABCDEF',
      `gh${'p'}_${'a1B2'.repeat(9)}`,
    );
    const words = fc.constantFrom('hello', 'sk', 'Bearer', 'ask-me', '-----', 'eyJ', 'A', 'the', '17', 'gh_', 'x');
    // Separators outside the credential alphabet (`Bearer x.Bearer y` is one bearer token to the patterns too).
    const seps = fc.constantFrom(' ', '\n', ', ', '; ');
    const text = fc
      .array(fc.tuple(fc.oneof(words, secrets), seps), { minLength: 1, maxLength: 12 })
      .map((xs) => xs.map(([w, s]) => w + s).join(''));
    fc.assert(
      fc.property(text, fc.array(fc.nat(), { maxLength: 30 }), (t, offsets) => {
        const { out, tail } = stream(cut(t, offsets));
        const published = out.join('') + tail;

        expect(published).toBe(redactSecrets(t).text);
        for (const piece of [...out, tail, published]) {
          expect(findSecret(piece)).toBeUndefined();
          for (const body of BODIES) expect(piece).not.toContain(body);
        }
      }),
      { numRuns: 300 },
    );
  });
});
