/**
 * True when `actual` contains `subset`: every key of a subset object is present in the actual
 * object with a matching value (recursively); arrays match element by element with equal length;
 * anything else must be strictly equal. `arguments_subset: {}` therefore matches any arguments.
 */
export function containsSubset(actual: unknown, subset: unknown): boolean {
  if (Array.isArray(subset)) {
    return (
      Array.isArray(actual) && actual.length === subset.length && subset.every((s, i) => containsSubset(actual[i], s))
    );
  }
  if (isPlainObject(subset)) {
    return (
      isPlainObject(actual) && Object.entries(subset).every(([k, v]) => k in actual && containsSubset(actual[k], v))
    );
  }
  return Object.is(actual, subset);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
