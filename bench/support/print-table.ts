/** A column of `printTable`: its header and whether its cells are right-aligned (numbers). */
export interface TableColumn {
  readonly header: string;
  readonly right?: boolean;
}

/** Prints rows as an aligned plain-text table, for a terminal or a CI log. */
export function printTable(columns: readonly TableColumn[], rows: readonly (readonly string[])[]): void {
  const widths = columns.map((c, i) => Math.max(c.header.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (columns[i].right ? cell.padStart(widths[i]) : cell.padEnd(widths[i])))
      .join('  ')
      .trimEnd();
  console.log(line(columns.map((c) => c.header)));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const r of rows) console.log(line(r));
}

/** A count or rate with thousands separators and no decimals. */
export function formatCount(n: number): string {
  return Math.round(n).toLocaleString('en-US');
}
