/**
 * Text PostgreSQL cannot store (ADR 0041). `jsonb` and `text` refuse the NUL character (U+0000), and
 * a lone UTF-16 surrogate (U+D800–U+DFFF without its pair) has no UTF-8 encoding at all: `jsonb`
 * refuses its `\uD800` escape. A JSON string can carry both, so every string that reaches the store
 * is either refused where it enters (API input, see `findUnstorableText`) or, when it comes from a
 * model, a tool or an MCP server, stored by one rule (`toStorableText`): each such code unit becomes
 * U+FFFD REPLACEMENT CHARACTER, Unicode's own mark for "a character was here that could not be
 * represented", and the places it happened are reported to the caller.
 */

export const REPLACEMENT_CHARACTER = '\uFFFD';

/** NUL, or a surrogate that is not half of a well-formed pair. */
// eslint-disable-next-line no-control-regex -- matching NUL is the point
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Why a string cannot be stored, or null when it can. */
export function unstorableReason(s: string): string | null {
  if (s.includes('\u0000')) return 'must not contain the NUL character (U+0000)';
  if (LONE_SURROGATE.test(s)) return 'must be well-formed Unicode (a lone UTF-16 surrogate was found)';
  return null;
}

const fieldPath = (prefix: string, key: string | number): string =>
  typeof key === 'number' ? `${prefix}[${key}]` : prefix === '' ? key : `${prefix}.${key}`;

/**
 * The first unstorable string in a JSON value — a value or an object key — as the field path the
 * API names (`content[0].text`), or null. The value's depth is already bounded by the body parser.
 */
export function findUnstorableText(value: unknown, prefix = ''): { field: string; problem: string } | null {
  if (typeof value === 'string') {
    const problem = unstorableReason(value);
    return problem ? { field: prefix === '' ? '(root)' : prefix, problem } : null;
  }
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const hit = findUnstorableText(value[i], fieldPath(prefix, i));
      if (hit) return hit;
    }
    return null;
  }
  if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      const keyProblem = unstorableReason(k);
      if (keyProblem) return { field: fieldPath(prefix, k), problem: `key ${keyProblem}` };
      const hit = findUnstorableText(v, fieldPath(prefix, k));
      if (hit) return hit;
    }
  }
  return null;
}

/**
 * `value` with every NUL and lone surrogate (in values and keys) replaced by U+FFFD, and the paths
 * where that happened. Returns the same object when nothing needed replacing (the common case costs
 * one walk and no copy).
 */
export function toStorableText<T>(value: T): { value: T; replaced: string[] } {
  const replaced: string[] = [];
  const walk = (v: unknown, at: string): unknown => {
    if (typeof v === 'string') {
      if (unstorableReason(v) === null) return v;
      replaced.push(at === '' ? '(root)' : at);
      return v.replace(UNSTORABLE, REPLACEMENT_CHARACTER);
    }
    if (Array.isArray(v)) {
      let out: unknown[] | null = null;
      v.forEach((x, i) => {
        const y = walk(x, fieldPath(at, i));
        if (y !== x) (out ??= [...(v as unknown[])])[i] = y;
      });
      return out ?? v;
    }
    // Any object (plain, null-prototype, or a class instance JSON.stringify walks); copied only if changed.
    if (v !== null && typeof v === 'object') {
      let changed = false;
      const entries = Object.entries(v).map(([k, x]) => {
        const key = unstorableReason(k) === null ? k : k.replace(UNSTORABLE, REPLACEMENT_CHARACTER);
        if (key !== k) replaced.push(fieldPath(at, k));
        const y = walk(x, fieldPath(at, key));
        if (key !== k || y !== x) changed = true;
        return [key, y] as const;
      });
      return changed ? Object.fromEntries(entries) : v;
    }
    return v;
  };
  return { value: walk(value, '') as T, replaced };
}
