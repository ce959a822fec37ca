/**
 * A JSON value in the shape PostgreSQL gives it back from a `jsonb` column, computed without the
 * round trip: what `JSON.stringify` sends (so `undefined` members vanish, `toJSON` applies, non-finite
 * numbers become null), with every object's keys in jsonb's storage order — shorter keys first, keys
 * of equal length by their UTF-8 bytes (PostgreSQL's `lengthCompareJsonbStringValue`). Numbers need no
 * care: jsonb keeps the decimal text `JSON.stringify` wrote, and `JSON.parse` of it is the same double.
 *
 * The event store uses it to hand a caller the events it just appended exactly as `listAfter` will
 * return them (the context engine folds them instead of reading them back); key order matters there,
 * because adapters serialise tool arguments and results into the provider request byte for byte.
 */
export function jsonbShape(value: unknown): unknown {
  const text = JSON.stringify(value);
  return text === undefined ? undefined : inJsonbOrder(JSON.parse(text) as unknown);
}

function inJsonbOrder(v: unknown): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) v[i] = inJsonbOrder(v[i]);
    return v;
  }
  const obj = v as Record<string, unknown>;
  const keys = Object.keys(obj);
  const out: Record<string, unknown> = {};
  // Integer-like keys ("0", "12") would be enumerated first by any JS object whatever the insertion
  // order, as they are after JSON.parse of the server's text too: both sides agree without help.
  for (const k of keys.sort(compareJsonbKeys)) out[k] = inJsonbOrder(obj[k]);
  return out;
}

/** A character above U+007F (below it, every code unit is one UTF-8 byte). */
const NON_ASCII = /[\u0080-\uffff]/;

function compareJsonbKeys(a: string, b: string): number {
  if (!NON_ASCII.test(a) && !NON_ASCII.test(b)) {
    // One byte per character: length and code-unit order are the byte length and memcmp order.
    if (a.length !== b.length) return a.length - b.length;
    return a < b ? -1 : a > b ? 1 : 0;
  }
  const x = Buffer.from(a, 'utf8');
  const y = Buffer.from(b, 'utf8');
  return x.length - y.length || Buffer.compare(x, y);
}
