/**
 * A JSON value in one canonical form: what `JSON.stringify` would send (members whose value is
 * undefined, a function or a symbol dropped, `toJSON` applied, non-finite numbers and such array
 * slots as null, -0 as 0), with every object's keys inserted in code-unit order, recursively.
 *
 * The context fold takes every event payload through it, so what it folds does not depend on where
 * the events came from: the run's own events as it appended them (keys in the order the run built
 * them) or the same events read back from the log (PostgreSQL's jsonb keeps its own key order). The
 * provider request is serialised from the fold byte for byte, so both must give the same bytes
 * (ADR 0026). Integer-like keys ("2", "10") are enumerated first by every JavaScript object whatever
 * the insertion order; both sources agree on that too.
 */
export function canonicalValue(value: unknown): unknown {
  if (value === null || typeof value !== 'object') {
    if (typeof value === 'number') return Number.isFinite(value) ? value + 0 : null;
    return value;
  }
  const withJson = value as { toJSON?: () => unknown };
  if (typeof withJson.toJSON === 'function') return canonicalValue(withJson.toJSON());
  if (Array.isArray(value)) return value.map((v: unknown) => (isDropped(v) ? null : canonicalValue(v)));
  const obj = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const key of Object.keys(obj).sort()) {
    const v = obj[key];
    if (!isDropped(v)) out[key] = canonicalValue(v);
  }
  return out;
}

/** What JSON.stringify leaves out of an object (and writes as null in an array). */
function isDropped(v: unknown): boolean {
  return v === undefined || typeof v === 'function' || typeof v === 'symbol';
}
