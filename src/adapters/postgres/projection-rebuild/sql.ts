/** Quotes an SQL identifier. Table and column names come from code, but quoting keeps `key` & co. unambiguous. */
export function ident(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/** A quoted, comma-separated column list, optionally qualified by a table alias. */
export function columnList(columns: readonly string[], alias?: string): string {
  const prefix = alias ? `${alias}.` : '';
  return columns.map((c) => prefix + ident(c)).join(', ');
}

/** `(a.k1, a.k2) = (b.k1, b.k2)`: equality of a (possibly composite) key between two aliases. */
export function keyEquals(keyColumns: readonly string[], left: string, right: string): string {
  return `(${columnList(keyColumns, left)}) = (${columnList(keyColumns, right)})`;
}
