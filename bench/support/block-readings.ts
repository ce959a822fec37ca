/**
 * Reading ratios measured in interleaved blocks on a shared machine: besides the pooled ratio (all
 * operations over all time), the median of the per-block ratios, which a burst of steal time in a
 * few blocks moves far less.
 */

/** The median (the upper one of an even count), without reordering `xs`. */
export function median(xs: readonly number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
}

/** Per-block ratios, ascending, as printed after "blocks". */
export function blocksText(xs: readonly number[]): string {
  return [...xs]
    .sort((a, b) => a - b)
    .map((x) => x.toFixed(2))
    .join(' ');
}

/** Whether a ratio target holds by both readings, by one of them, or by neither. */
export function targetVerdict(pooled: number, blockMedian: number, target: number): string {
  const met = [pooled, blockMedian].filter((r) => r >= target).length;
  return met === 2 ? 'met' : met === 1 ? 'met by one reading' : 'NOT met';
}
