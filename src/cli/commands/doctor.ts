import type { Command } from 'commander';
import type { CheckResult } from '../../composition/doctor';
import { loadDotEnv, loadSettings } from '../../config/settings';
import { EXIT } from '../exit-codes';

/** ✓/✗ lines, each ✗ followed by its fix, and a closing count. */
export function formatReport(results: readonly CheckResult[]): string {
  const lines: string[] = [];
  for (const r of results) {
    lines.push(`${r.ok ? '✓' : '✗'} ${r.name}: ${r.detail}`);
    if (!r.ok && r.fix) lines.push(`    fix: ${r.fix}`);
  }
  const failed = results.filter((r) => !r.ok).length;
  lines.push(failed === 0 ? 'all checks passed' : `${failed} check(s) failed`);
  return `${lines.join('\n')}\n`;
}

async function doctor(): Promise<CheckResult[]> {
  loadDotEnv();
  let settings: ReturnType<typeof loadSettings>;
  try {
    settings = loadSettings();
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    return [{ name: 'configuration', ok: false, detail: message, fix: 'fix that variable in .env (see .env.example)' }];
  }
  // Loaded only now: the checks bind the database and sandbox adapters, which `agent --help` never needs.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { runDoctor } = require('../../composition/doctor') as typeof import('../../composition/doctor');
  return runDoctor(settings);
}

/**
 * `agent doctor [--json]`: checks what `agent start` needs on this machine and prints one ✓/✗ line
 * per check with the fix for each ✗; exits 1 when any check fails (ADR 0028).
 */
export function registerDoctorCommand(program: Command): void {
  program
    .command('doctor')
    .description('check this machine: Node, data directory, database, sandbox, provider keys, MCP servers, port')
    .option('--json', 'print {ok, checks: [{name, ok, detail, fix}]} instead of lines')
    .action(async (opts: { json?: boolean }) => {
      const results = await doctor();
      const ok = results.every((r) => r.ok);
      process.stdout.write(opts.json ? `${JSON.stringify({ ok, checks: results }, null, 2)}\n` : formatReport(results));
      process.exit(ok ? EXIT.ok : EXIT.failed);
    });
}
