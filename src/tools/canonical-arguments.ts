import { createHash } from 'node:crypto';
import { ValidationError } from '../domain/errors';

/**
 * Canonical JSON of tool arguments: object keys sorted by UTF-16 code unit (locale-independent),
 * recursively; arrays keep their order; otherwise JSON.stringify semantics (undefined members
 * dropped, undefined array slots become null). Hand-serialised because JavaScript enumerates
 * integer-like keys ("2", "10") first whatever their insertion order, so re-building an object
 * with sorted keys would not sort them.
 * @throws ValidationError for values JSON cannot represent (bigint, cycles, top-level undefined).
 */
export function normalizeArguments(args: unknown): string {
  const text = serialize(args, new Set<object>());
  if (text === undefined) throw new ValidationError('tool arguments are not representable as JSON');
  return text;
}

/** SHA-256 (hex) of `normalizeArguments(args)`: equal for arguments that differ only in key order. */
export function argumentsHash(args: unknown): string {
  return createHash('sha256').update(normalizeArguments(args), 'utf8').digest('hex');
}

function serialize(value: unknown, ancestors: Set<object>): string | undefined {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return JSON.stringify(value);
    case 'number':
      // JSON.stringify already maps -0 to "0" and NaN/Infinity to "null".
      return JSON.stringify(value);
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
    case 'bigint':
      throw new ValidationError('tool arguments contain a bigint, which JSON cannot represent');
    case 'object':
      return value === null ? 'null' : serializeObject(value, ancestors);
    default:
      // Every `typeof` result is handled above; TypeScript cannot narrow `unknown` to never here.
      throw new ValidationError(`tool arguments contain an unsupported ${typeof value}`);
  }
}

function serializeObject(value: object, ancestors: Set<object>): string {
  if (ancestors.has(value)) throw new ValidationError('tool arguments contain a cycle');
  ancestors.add(value);
  try {
    if (Array.isArray(value)) {
      const items: unknown[] = value;
      return `[${items.map((item) => serialize(item, ancestors) ?? 'null').join(',')}]`;
    }
    const record = value as Record<string, unknown>;
    const members: string[] = [];
    for (const key of Object.keys(record).sort(compareCodeUnits)) {
      const member = serialize(record[key], ancestors);
      if (member !== undefined) members.push(`${JSON.stringify(key)}:${member}`);
    }
    return `{${members.join(',')}}`;
  } finally {
    ancestors.delete(value);
  }
}

/** Plain code-unit comparison: `localeCompare` depends on the ICU locale and would break byte stability. */
export function compareCodeUnits(a: string, b: string): number {
  if (a < b) return -1;
  return a > b ? 1 : 0;
}
