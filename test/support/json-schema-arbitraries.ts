/* eslint-disable @typescript-eslint/no-explicit-any -- generates values for arbitrary JSON Schemas */
import fc from 'fast-check';

/**
 * fast-check arbitraries for the subset of JSON Schema our documents use (the OpenAPI document's
 * components, the tools' input schemas): valid values, and values that are valid most of the time
 * and hostile anywhere inside otherwise. Shared by the API fuzzer and the tool-argument fuzzer.
 */

/** Turns a `$ref` into the schema it names (each document resolves its own way). */
export type Resolve = (schema: any) => any;
export const noRefs: Resolve = (schema) => schema;

export const HOSTILE_STRINGS = [
  '',
  ' ',
  'a\u0000b',
  '\u0000',
  '\ud800',
  'x\udc00',
  '\udf89\ud83c',
  '🎉'.repeat(50),
  '\u202eevil',
  '%00',
  '../../etc/passwd',
  "' OR 1=1 --",
  '<script>alert(1)</script>',
  'x'.repeat(70_000),
  '00000000-0000-0000-0000-000000000000',
];
export const HOSTILE_NUMBERS = [0, -1, -0, 1e308, -1e308, 2 ** 53 + 1, 0.5, 201, Number.MAX_SAFE_INTEGER];

export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(...HOSTILE_STRINGS, ...HOSTILE_NUMBERS, null, true, [], {}),
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.jsonValue({ maxDepth: 3 }),
);

/** Valid values for a schema. */
export function validOf(raw: any, resolve: Resolve, depth = 0): fc.Arbitrary<unknown> {
  const s = resolve(raw) ?? {};
  if (s.enum) return fc.constantFrom(...(s.enum as unknown[]));
  if (s.example !== undefined && depth > 0)
    return fc.oneof(fc.constant(s.example), validOf({ ...s, example: undefined }, resolve, depth));
  switch (s.type) {
    case 'string':
      return fc.string({ minLength: Math.min(s.minLength ?? 1, 40), maxLength: Math.min(s.maxLength ?? 40, 40) });
    case 'integer':
    case 'number':
      return fc.integer({ min: s.minimum ?? -10, max: s.maximum ?? 1000 });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(validOf(s.items, resolve, depth + 1), { minLength: s.minItems ?? 1, maxLength: 3 });
    case 'object': {
      const props = Object.fromEntries(
        Object.entries(s.properties ?? {}).map(([k, v]) => [k, validOf(v, resolve, depth + 1)]),
      );
      if (Object.keys(props).length === 0)
        return fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 3 });
      return fc.record(props, { requiredKeys: s.required ?? [] });
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

/** An object for an object schema, its properties fuzzed, sometimes with unknown hostile keys. */
export function fuzzedObjectOf(s: any, resolve: Resolve, depth = 0): fc.Arbitrary<Record<string, unknown>> {
  const props = Object.fromEntries(
    Object.entries(s.properties ?? {}).map(([k, v]) => [k, fuzzOf(v, resolve, depth + 1)]),
  );
  const rec = fc.record(props, { requiredKeys: [] }) as fc.Arbitrary<Record<string, unknown>>;
  const unknown = fc.dictionary(fc.string({ maxLength: 12 }), hostileValue, { maxKeys: 2 });
  return fc.oneof(
    { weight: 3, arbitrary: rec },
    { weight: 1, arbitrary: fc.tuple(rec, unknown).map(([a, b]) => ({ ...b, ...a })) },
  );
}

/** A value for the schema, valid most of the time, otherwise hostile anywhere inside it. */
export function fuzzOf(raw: any, resolve: Resolve, depth = 0): fc.Arbitrary<unknown> {
  const s = resolve(raw) ?? {};
  if (depth > 4) return validOf(s, resolve, depth);
  if (s.type === 'object' && s.properties) {
    return fc.oneof(
      { weight: 4, arbitrary: fuzzedObjectOf(s, resolve, depth) },
      { weight: 1, arbitrary: hostileValue },
    );
  }
  if (s.type === 'array') {
    return fc.oneof(
      { weight: 3, arbitrary: fc.array(fuzzOf(s.items, resolve, depth + 1), { maxLength: 4 }) },
      { weight: 1, arbitrary: hostileValue },
    );
  }
  return fc.oneof({ weight: 3, arbitrary: validOf(s, resolve, depth) }, { weight: 2, arbitrary: hostileValue });
}
