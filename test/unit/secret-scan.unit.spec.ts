import { findSecret, SECRET_PATTERNS } from '../../src/domain/events/secret-scan';

// Assembled at run time so this file itself holds no credential-shaped literal.
const SAMPLES: Record<string, string> = {
  openai_api_key: 'sk-' + 'a'.repeat(24),
  anthropic_api_key: 'sk-ant-' + 'b'.repeat(22),
  bearer_token: 'bEaReR ' + 'c'.repeat(21) + '==',
  private_key: '-----BEGIN RSA PRIVATE' + ' KEY-----',
  aws_access_key_id: 'AKIA' + 'D'.repeat(16),
  github_token: 'ghp_' + 'e'.repeat(36),
  slack_token: 'xoxb-' + '1'.repeat(12),
  google_api_key: 'AIza' + 'f'.repeat(35),
  jwt: ['eyJ' + 'g'.repeat(12), 'eyJ' + 'h'.repeat(12), 'i'.repeat(12)].join('.'),
};

describe('the event secret scan', () => {
  it('finds every pattern, inside other text too, and names it', () => {
    for (const { name, pattern } of SECRET_PATTERNS) {
      const found = findSecret(`see ${SAMPLES[name]} here`);
      expect(found?.path).toBe('$');
      // The first pattern in list order that matches the sample (the Anthropic key is also
      // shaped like an OpenAI key); every sample matches its own pattern.
      expect(pattern.test(SAMPLES[name])).toBe(true);
      expect(found?.kind).toBe(SECRET_PATTERNS.find((p) => p.pattern.test(SAMPLES[name]))!.name);
    }
  });

  it('reports the first pattern in list order when a string matches several', () => {
    // An Anthropic key is also shaped like an OpenAI key, which comes first in the list.
    expect(findSecret(SAMPLES.anthropic_api_key)?.kind).toBe('openai_api_key');
  });

  it('spells the path of the first finding depth first, as JSON paths', () => {
    const value = {
      a: 'plain',
      '': { b: ['x', { c: SAMPLES.github_token }] },
      d: SAMPLES.jwt,
    };
    expect(findSecret(value)).toEqual({ path: 'b[1].c', kind: 'github_token' });
    expect(findSecret([{ k: ['ok', SAMPLES.slack_token] }])).toEqual({ path: '[0].k[1]', kind: 'slack_token' });
    expect(findSecret({ x: { y: SAMPLES.private_key } }, 'data')).toEqual({ path: 'data.x.y', kind: 'private_key' });
  });

  it('passes ordinary values', () => {
    expect(findSecret({ text: 'sk-short, Bearer abc, AKIA123', n: 42, t: true, z: null, l: [] })).toBeUndefined();
    expect(findSecret('')).toBeUndefined();
  });
});
