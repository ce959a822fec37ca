import { tally, type EvalResult, type EvalStatus } from './eval-result';

const MARK: Record<EvalStatus, string> = { passed: '✓', failed: '✗', pending: '○' };

/** Seconds with one decimal: `0.4 s`. */
export function formatSeconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

/** What follows the time on a result's line: the first failure or the pending reason. */
function detailOf(r: EvalResult): string {
  switch (r.status) {
    case 'passed':
      return '';
    case 'failed':
      return r.failures[0] ?? '';
    case 'pending':
      return `pending: ${r.pendingReason ?? ''}`;
    default: {
      const never: never = r.status;
      return String(never);
    }
  }
}

/**
 * The progress line printed as a case finishes: `✓ 02_calculator_tool  0.4 s`,
 * `✗ 10_step_limit  0.9 s  terminal_status: ...`, `○ 12_approval_requested  pending: ...`.
 */
export function formatProgressLine(r: EvalResult, nameWidth: number): string {
  const name = r.name.padEnd(nameWidth);
  switch (r.status) {
    case 'passed':
      return `${MARK.passed} ${name}  ${formatSeconds(r.durationMs)}`;
    case 'failed':
      return `${MARK.failed} ${name}  ${formatSeconds(r.durationMs)}  ${detailOf(r)}`;
    case 'pending':
      return `${MARK.pending} ${name}  ${detailOf(r)}`;
    default: {
      const never: never = r.status;
      return String(never);
    }
  }
}

/**
 * The summary after the run: a table of every case, every failure of the failed ones, and the
 * final `N passed, N failed, N pending` line.
 */
export function formatSummary(results: readonly EvalResult[], width = 120): string {
  const nameWidth = Math.max(4, ...results.map((r) => r.name.length));
  const header = `${'case'.padEnd(nameWidth)}  status   time    detail`;
  const clip = (s: string, room: number) => (s.length > room ? `${s.slice(0, Math.max(0, room - 1))}…` : s);
  const rows = results.map((r) => {
    const time = r.status === 'pending' ? '-' : formatSeconds(r.durationMs);
    const line = `${r.name.padEnd(nameWidth)}  ${r.status.padEnd(7)}  ${time.padEnd(6)}  `;
    return (line + clip(detailOf(r).replace(/^pending: /, ''), Math.max(20, width - line.length))).trimEnd();
  });
  const lines = [header, '-'.repeat(Math.min(width, header.length + 40)), ...rows];
  const failed = results.filter((r) => r.status === 'failed');
  if (failed.length > 0) {
    lines.push('', 'Failures:');
    for (const r of failed) {
      lines.push(`  ${r.name}${r.runId ? ` (run ${r.runId})` : ''}`);
      for (const f of r.failures) lines.push(`    - ${f}`);
    }
  }
  const t = tally(results);
  lines.push('', `${t.passed} passed, ${t.failed} failed, ${t.pending} pending`);
  return lines.join('\n');
}
