import type { Command } from 'commander';
import type { RebuildProgress } from '../../composition/platform';
import { withPlatform } from '../context';
import { EXIT } from '../exit-codes';

function progressPrinter(): (p: RebuildProgress) => void {
  const tty = process.stderr.isTTY;
  let lastLine = 0;
  return (p) => {
    const now = Date.now();
    if (!tty && now - lastLine < 1000 && p.eventsDone < p.eventsTotal) return;
    lastLine = now;
    const pct = p.eventsTotal > 0 ? Math.floor((100 * p.eventsDone) / p.eventsTotal) : 100;
    const eta = p.etaSeconds === null ? '' : ` · ETA ${p.etaSeconds.toFixed(0)}s`;
    const line = `${p.phase}: ${p.eventsDone}/${p.eventsTotal} events (${pct}%) · ${Math.round(p.eventsPerSecond)} events/s${eta}`;
    process.stderr.write(tty ? `\r\x1b[2K${line}` : `${line}\n`);
  };
}

export function registerProjectionCommands(program: Command): void {
  program
    .command('projections')
    .description('read-model maintenance')
    .command('rebuild')
    .description('replay the event log into fresh read models and swap them in (or, with --verify, compare)')
    .option('--verify', 'compare the rebuilt read models with the live ones; exit 1 naming the first differences')
    .option(
      '--projection <name...>',
      'only these projections (sessions, runs, tool_invocations, approvals, model_calls, idempotency_keys)',
    )
    .option('--json', 'print the report as JSON')
    .action((opts: { verify?: boolean; projection?: string[]; json?: boolean }) =>
      withPlatform('cli', async (p) => {
        const report = await p.rebuildProjections({
          projections: opts.projection,
          verify: Boolean(opts.verify),
          onProgress: progressPrinter(),
        });
        if (process.stderr.isTTY) process.stderr.write('\n');
        if (opts.json) {
          process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
        } else {
          process.stdout.write(
            `replayed ${report.eventsReplayed} events in ${report.seconds.toFixed(2)} s (${Math.round(report.eventsPerSecond)} events/s)\n`,
          );
          for (const proj of report.projections) {
            const diffs = proj.differences.length;
            process.stdout.write(
              `  ${proj.name.padEnd(18)} ${String(proj.rows).padStart(8)} rows  ${diffs === 0 ? 'ok' : `${diffs} difference(s)`}\n`,
            );
            for (const d of proj.differences) {
              process.stdout.write(
                `    ${d.kind} ${d.key}${d.column ? ` column ${d.column}: live=${JSON.stringify(d.live)} rebuilt=${JSON.stringify(d.rebuilt)}` : ''}\n`,
              );
            }
          }
          process.stdout.write(opts.verify ? '' : report.swapped ? 'rebuilt read models swapped in\n' : '');
        }
        const differs = report.projections.some((x) => x.differences.length > 0);
        return opts.verify && differs ? EXIT.failed : EXIT.ok;
      }),
    );
}
