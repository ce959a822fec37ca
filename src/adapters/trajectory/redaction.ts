import { TrajectoryVerificationError } from '../../domain/errors';
import { SECRET_PATTERNS } from '../../domain/events/secret-scan';
import type { DraftMessage, TrajectoryDocument } from '../../domain/trajectory/document';
import { REDACTED_KEYS } from '../logging';

/**
 * Layers 2 and 3 of trajectory redaction (plan §31, ADR 0016). Layer 1, structural exclusion, is
 * the builder copying only known fields (`src/domain/trajectory/document.ts`).
 *
 * Layer 2 replaces: every match of the event store's credential patterns (the committed-secret
 * scanner's rule families, `secret-scan.ts`) becomes `[REDACTED:<rule>]`, and the value of any key
 * the log redactor treats as a credential (`REDACTED_KEYS` minus the content-bearing keys a
 * trajectory exists to carry) becomes `[REDACTED]`.
 *
 * Layer 3 verifies: a broader, different rule set (high-entropy tokens, credentials in URLs,
 * `password=`-style assignments, short `sk-` keys, HTTP Basic credentials, and the store's patterns
 * again) scans the finished wire document. A hit raises; the export then writes nothing. It never
 * redacts a second time: a hit means the replacer has a gap, which must be fixed, not papered over.
 */

/** Keys the log redactor drops that are the substance of a trajectory (they are redacted by pattern instead). */
const CONTENT_KEYS = new Set(['prompt', 'arguments', 'result']);
export const CREDENTIAL_KEYS: ReadonlySet<string> = new Set(
  [...REDACTED_KEYS.filter((k) => !CONTENT_KEYS.has(k)), 'password', 'passwd', 'client_secret', 'private_key'].map(
    (k) => k.toLowerCase(),
  ),
);

// The more specific prefix first, so `sk-ant-…` is labelled an Anthropic key rather than an OpenAI one.
const REPLACERS = [...SECRET_PATTERNS]
  .sort((x, y) => Number(y.name === 'anthropic_api_key') - Number(x.name === 'anthropic_api_key'))
  .map((p) => ({
    name: p.name,
    pattern: new RegExp(p.pattern.source, p.pattern.flags.includes('g') ? p.pattern.flags : `${p.pattern.flags}g`),
  }));

export interface ReplaceResult {
  readonly replaced: number;
  readonly rules: ReadonlySet<string>;
}

/** Layer 2: replaces credentials in place in the draft messages; returns how many and by which rules. */
export function replaceSecrets(messages: DraftMessage[]): ReplaceResult {
  const rules = new Set<string>();
  let replaced = 0;
  const text = (s: string): string => {
    let out = s;
    for (const r of REPLACERS) {
      r.pattern.lastIndex = 0;
      if (!r.pattern.test(out)) continue;
      r.pattern.lastIndex = 0;
      out = out.replace(r.pattern, () => {
        replaced++;
        rules.add(r.name);
        return `[REDACTED:${r.name}]`;
      });
    }
    return out;
  };
  const walk = (v: unknown, depth: number): unknown => {
    if (typeof v === 'string') return text(v);
    if (depth > 64 || v === null || typeof v !== 'object') return v;
    if (Array.isArray(v)) return v.map((x) => walk(x, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      if (CREDENTIAL_KEYS.has(k.toLowerCase()) && x !== null && x !== '' && typeof x !== 'boolean') {
        replaced++;
        rules.add('credential_key');
        out[k] = '[REDACTED]';
      } else out[k] = walk(x, depth + 1);
    }
    return out;
  };
  for (const m of messages) {
    if (m.role === 'tool') m.content = walk(m.content, 0);
    else if (m.role === 'assistant') {
      if (m.content !== null) m.content = text(m.content);
      for (const c of m.tool_calls ?? []) c.arguments = walk(c.arguments, 0);
    } else m.content = text(m.content);
  }
  return { replaced, rules };
}

/** The verifier's own rules: broader than, and different from, the replacer's. */
const VERIFY_RULES: readonly { readonly name: string; readonly pattern: RegExp }[] = [
  ...SECRET_PATTERNS,
  { name: 'short_sk_key', pattern: /\bsk-[A-Za-z0-9_-]{12,}/ },
  { name: 'credential_in_url', pattern: /\b[a-z][a-z0-9+.-]*:\/\/[^\s:@/"]+:[^\s@/"]+@/i },
  {
    name: 'credential_assignment',
    pattern:
      /\b(?:password|passwd|pwd|secret|api[_-]?key|access[_-]?key|auth[_-]?token|access[_-]?token|client[_-]?secret)\\?"?\s*[:=]\s*\\?"?(?!\[REDACTED)[^\s"\\,}]{6,}/i,
  },
  { name: 'basic_auth', pattern: /\bBasic\s+[A-Za-z0-9+/]{12,}={0,2}/ },
  { name: 'private_key_block', pattern: /PRIVATE KEY/ },
];

const TOKEN = /[A-Za-z0-9+/_=-]{32,}/g;

/** Shannon entropy in bits per character. */
function entropy(s: string): number {
  const counts = new Map<string, number>();
  for (const ch of s) counts.set(ch, (counts.get(ch) ?? 0) + 1);
  let h = 0;
  for (const n of counts.values()) {
    const p = n / s.length;
    h -= p * Math.log2(p);
  }
  return h;
}

/** A random-looking token: long, mixed case and digits, high entropy (UUIDs and hex digests are lower-case). */
export function looksLikeSecretToken(s: string): boolean {
  TOKEN.lastIndex = 0;
  for (let m = TOKEN.exec(s); m !== null; m = TOKEN.exec(s)) {
    const t = m[0];
    if (/[a-z]/.test(t) && /[A-Z]/.test(t) && /[0-9]/.test(t) && entropy(t) >= 4.0) return true;
  }
  return false;
}

export interface VerificationFinding {
  /** JSON path of the string, e.g. `messages[3].content`. Never the value. */
  readonly path: string;
  readonly rule: string;
}

/** Layer 3: the first string in the finished document that still looks like a credential. */
export function verifyDocument(doc: TrajectoryDocument): VerificationFinding | undefined {
  const check = (s: string, path: string): VerificationFinding | undefined => {
    for (const r of VERIFY_RULES) if (r.pattern.test(s)) return { path, rule: r.name };
    if (looksLikeSecretToken(s)) return { path, rule: 'high_entropy_token' };
    return undefined;
  };
  const walk = (v: unknown, path: string): VerificationFinding | undefined => {
    if (typeof v === 'string') return check(v, path);
    if (v === null || typeof v !== 'object') return undefined;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const f = walk(v[i], `${path}[${i}]`);
        if (f) return f;
      }
      return undefined;
    }
    for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
      const f = walk(x, path ? `${path}.${k}` : k);
      if (f) return f;
    }
    return undefined;
  };
  // Only what came from the run is scanned; ids, hashes and timestamps are the platform's own.
  return walk(doc.messages, 'messages') ?? walk(doc.outcome, 'outcome');
}

export { TrajectoryVerificationError };
