/**
 * Credential patterns that must never reach the event log (plan §5 rule 12, §22). Deliberately
 * specific: each pattern matches a real credential format, so ordinary prose is not refused.
 */
export const SECRET_PATTERNS: readonly { readonly name: string; readonly pattern: RegExp }[] = [
  { name: 'openai_api_key', pattern: /\bsk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}/ },
  { name: 'anthropic_api_key', pattern: /\bsk-ant-[A-Za-z0-9_-]{20,}/ },
  { name: 'bearer_token', pattern: /\bBearer\s+[A-Za-z0-9._~+/-]{20,}=*/i },
  { name: 'private_key', pattern: /-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----/ },
  { name: 'aws_access_key_id', pattern: /\b(?:AKIA|ASIA)[0-9A-Z]{16}\b/ },
  { name: 'github_token', pattern: /\bgh[pousr]_[A-Za-z0-9]{36,}\b/ },
  { name: 'slack_token', pattern: /\bxox[abposr]-[A-Za-z0-9-]{10,}/ },
  { name: 'google_api_key', pattern: /\bAIza[0-9A-Za-z_-]{35}\b/ },
  { name: 'jwt', pattern: /\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/ },
];

export interface SecretFinding {
  /** JSON path of the offending string, e.g. `content[0].text`. */
  readonly path: string;
  readonly kind: string;
}

/** Walks any JSON value and reports the first string that looks like a credential. */
export function findSecret(value: unknown, path = ''): SecretFinding | undefined {
  if (typeof value === 'string') {
    for (const { name, pattern } of SECRET_PATTERNS) if (pattern.test(value)) return { path: path || '$', kind: name };
    return undefined;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const f = findSecret(value[i], `${path}[${i}]`);
      if (f) return f;
    }
    return undefined;
  }
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const f = findSecret(v, path ? `${path}.${k}` : k);
      if (f) return f;
    }
  }
  return undefined;
}
