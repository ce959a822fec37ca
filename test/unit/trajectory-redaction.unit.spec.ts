import { randomUUID, createHash } from 'node:crypto';
import { looksLikeSecretToken, replaceSecrets, verifyDocument } from '../../src/adapters/trajectory/redaction';
import type { DraftMessage, TrajectoryDocument } from '../../src/domain/trajectory/document';

/** Layers 2 and 3 of trajectory redaction (ADR 0016), without a database. */
function docWith(content: string): TrajectoryDocument {
  return {
    messages: [{ role: 'tool', tool_call_id: 'c1', name: 't', content, is_error: false }],
    outcome: { label: 'succeeded', status: 'completed', reason: null, message: null, error_code: null },
  } as unknown as TrajectoryDocument;
}

describe('trajectory redaction', () => {
  it('replaces credential patterns in text, arguments and results, and credential-named keys', () => {
    const messages: DraftMessage[] = [
      { role: 'user', content: 'my key is sk-ant-' + 'a1B2c3D4e5F6g7H8i9J0k1L2' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', name: 'http.get', arguments: { headers: { Authorization: 'Basic abc' }, url: 'x' } }],
      },
      {
        role: 'tool',
        tool_call_id: 'c1',
        name: 'http.get',
        content: { body: 'token ghp_' + 'A'.repeat(36), nested: [{ password: 'hunter2' }], ok: true },
        is_error: false,
      },
    ];
    const r = replaceSecrets(messages);
    expect(r.replaced).toBe(4);
    expect([...r.rules].sort()).toEqual(['anthropic_api_key', 'credential_key', 'github_token']);
    expect(JSON.stringify(messages)).not.toMatch(/sk-ant-a1|ghp_A|hunter2|Basic abc/);
    expect(messages[0]).toEqual({ role: 'user', content: 'my key is [REDACTED:anthropic_api_key]' });
  });

  it('verifier: catches what the replacer leaves, never names the value', () => {
    const cases: [string, string][] = [
      ['see postgres://svc:pa55word@db:5432/x', 'credential_in_url'],
      ['{"api_key":"live_1234567890"}', 'credential_assignment'],
      ['sk-shortbut12345', 'short_sk_key'],
      ['-----END RSA PRIVATE KEY-----', 'private_key_block'],
      ['x9Qm2Lk7Pz4Rt8Vw1Ys6Bn3Cd5Fg0Hj2Kl', 'high_entropy_token'],
    ];
    for (const [text, rule] of cases)
      expect(verifyDocument(docWith(text))).toEqual({ path: 'messages[0].content', rule });
  });

  it('verifier: passes ordinary content, ids, digests and already-redacted values', () => {
    for (const text of [
      'The result is 391.',
      `run ${randomUUID()} at ${new Date().toISOString()}`,
      createHash('sha256').update('x').digest('hex'),
      '{"password":"[REDACTED]","note":"[REDACTED:openai_api_key]"}',
      'An ordinary sentence about a password reset form with no value in it.',
    ])
      expect(verifyDocument(docWith(text))).toBeUndefined();
    expect(looksLikeSecretToken('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaAAAA1111')).toBe(false);
  });
});
