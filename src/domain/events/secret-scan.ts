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

/**
 * One alternation per flag set of SECRET_PATTERNS (today: the case-sensitive ones, and the bearer
 * token's `i`): a string that none of these matches matches no pattern, so most strings cost one or
 * two scans instead of nine. Only a string that matches one is tested pattern by pattern, in list
 * order, to name the first pattern as before. Exact: a non-global alternation matches iff one of
 * its alternatives does, with the same flags.
 */
const PRECHECKS: readonly RegExp[] = (() => {
  const byFlags = new Map<string, string[]>();
  for (const { name, pattern } of SECRET_PATTERNS) {
    // A global or sticky pattern would make `test` stateful, and a backreference would point at the
    // wrong group once combined: neither may be added without changing this.
    if (/[gy]/.test(pattern.flags) || /\\[1-9]|\\k</.test(pattern.source))
      throw new Error(`secret pattern ${name} cannot join the precheck alternation`);
    const sources = byFlags.get(pattern.flags) ?? [];
    sources.push(`(?:${pattern.source})`);
    byFlags.set(pattern.flags, sources);
  }
  return [...byFlags].map(([flags, sources]) => new RegExp(sources.join('|'), flags));
})();

function secretKindOf(s: string): string | undefined {
  if (!PRECHECKS.some((re) => re.test(s))) return undefined;
  for (const { name, pattern } of SECRET_PATTERNS) if (pattern.test(s)) return name;
  return undefined;
}

/** Path segments of a finding, innermost first: an array index or an object key. */
type Segments = (number | string)[];

/** Depth first, in `Object.keys` order (as `Object.entries`); collects the path only on a hit. */
function scan(value: unknown): { kind: string; segments: Segments } | undefined {
  if (typeof value === 'string') {
    const kind = secretKindOf(value);
    return kind === undefined ? undefined : { kind, segments: [] };
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const f = scan(value[i]);
      if (f) {
        f.segments.push(i);
        return f;
      }
    }
    return undefined;
  }
  if (value && typeof value === 'object') {
    const o = value as Record<string, unknown>;
    for (const k of Object.keys(o)) {
      const f = scan(o[k]);
      if (f) {
        f.segments.push(k);
        return f;
      }
    }
  }
  return undefined;
}

/**
 * Walks any JSON value and reports the first string that looks like a credential. Runs on every
 * appended event, so the walk builds no path strings until it finds something (the path of a hit
 * is then spelled exactly as before: `a.b[0].c`, `$` for the value itself).
 */
export function findSecret(value: unknown, path = ''): SecretFinding | undefined {
  const f = scan(value);
  if (!f) return undefined;
  let p = path;
  for (let i = f.segments.length - 1; i >= 0; i--) {
    const seg = f.segments[i];
    p = typeof seg === 'number' ? `${p}[${seg}]` : p ? `${p}.${seg}` : seg;
  }
  return { path: p || '$', kind: f.kind };
}
