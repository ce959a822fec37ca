import { ValidationError } from '../../domain/errors';

/** Opaque keyset cursors: base64url JSON of the last row's sort key. Clients never parse them. */
export function encodeCursor(key: readonly (string | number)[]): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

/** Decodes a cursor made by `encodeCursor` with the given shape, or throws a validation error. */
export function decodeCursor<T extends readonly ('string' | 'number')[]>(
  cursor: string,
  shape: T,
): { [K in keyof T]: T[K] extends 'number' ? number : string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = null;
  }
  if (!Array.isArray(parsed) || parsed.length !== shape.length || !parsed.every((v, i) => typeof v === shape[i])) {
    throw new ValidationError('cursor is not valid', { field: 'cursor' });
  }
  return parsed as { [K in keyof T]: T[K] extends 'number' ? number : string };
}

export const isoOf = (v: unknown): string => (v instanceof Date ? v.toISOString() : String(v));
export const isoOrNull = (v: unknown): string | null => (v === null || v === undefined ? null : isoOf(v));
export const UUID_PATTERN = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
