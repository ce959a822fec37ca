import * as fs from 'node:fs';
import { pipeline } from 'node:stream/promises';
import type { Command } from 'commander';
import { AtomicLineFile, TrajectoryVerificationError } from '../../composition/trajectory';
import { ValidationError } from '../../domain/errors';
import { LOCAL_PRINCIPAL } from '../../domain/principal';
import type { ConsentChange, ConsentRecord, ExportFilters, ExportStatusFilter } from '../../ports/trajectory';
import type { Platform } from '../../composition/platform';
import { withPlatform } from '../context';
import { EXIT } from '../exit-codes';

interface ExportOpts {
  session?: string;
  run?: string;
  since?: string;
  status: string;
  out?: string;
  cursor?: string;
  limit?: string;
  tenant: string;
}

interface ConsentOpts {
  principal: string;
  tenant: string;
  json?: boolean;
}

/** `agent trajectory …`: redacted, consent-gated trajectory export (plan §31, docs/trajectories.md). */
export function registerTrajectoryCommands(program: Command): void {
  const trajectory = program
    .command('trajectory')
    .description('export finished runs as redacted trajectories; manage export consent');

  trajectory
    .command('export')
    .description('stream finished runs as JSON Lines (one versioned messages-shape document per run)')
    .option('--session <id>', 'only runs of this session')
    .option('--run <id>', 'only this run')
    .option('--since <date>', 'only runs that ended at or after this ISO-8601 date')
    .option('--status <status>', 'completed, failed (failed and cancelled) or all', 'all')
    .option('--out <file>', 'write to this file (atomically; default: stdout)')
    .option('--cursor <cursor>', 'resume after the cursor printed by an earlier export')
    .option('--limit <n>', 'stop after this many exported runs (resume with the printed cursor)')
    .option('--tenant <tenant>', 'the tenant to export (an export covers one tenant)', LOCAL_PRINCIPAL.tenantId)
    .addHelpText(
      'after',
      `
Progress and a summary go to stderr; the documents go to --out (or stdout). Runs whose principal has
not granted consent are skipped and counted. Nothing is written when the export fails: the file
appears only when every document passed the verification scan. The summary's cursor is also
written beside --out as <file>.cursor.
Exit codes: 0 exported · 1 the verification scan found a credential (nothing written) · 2 bad input
· 3 unknown run or session · 5 database unavailable.`,
    )
    .action((opts: ExportOpts) => withPlatform('trajectory-export', (p) => runExport(p, opts)));

  registerConsentCommands(trajectory);
}

/** `agent trajectory consent grant|withdraw|show`. */
function registerConsentCommands(trajectory: Command): void {
  const consent = trajectory
    .command('consent')
    .description("a principal's consent to have its runs exported (granted or withdrawn)");
  const consentCommand = (name: 'grant' | 'withdraw' | 'show', description: string) =>
    consent
      .command(name)
      .description(description)
      .option('--principal <id>', 'the principal', LOCAL_PRINCIPAL.principalId)
      .option('--tenant <tenant>', 'its tenant', LOCAL_PRINCIPAL.tenantId)
      .option('--json', 'print the record as JSON')
      .action((opts: ConsentOpts) =>
        withPlatform('trajectory-consent', async (p) => {
          const registry = p.trajectories.consent;
          const by = `cli:${LOCAL_PRINCIPAL.principalId}`;
          const change: ConsentChange | { record: ConsentRecord; exportsDeleted?: undefined } =
            name === 'grant'
              ? await registry.grant(opts.tenant, opts.principal, by)
              : name === 'withdraw'
                ? await registry.withdraw(opts.tenant, opts.principal, by)
                : { record: await registry.get(opts.tenant, opts.principal) };
          const r = change.record;
          if (opts.json) process.stdout.write(`${JSON.stringify({ ...r, exportsDeleted: change.exportsDeleted })}\n`);
          else {
            process.stdout.write(
              `${r.tenantId}/${r.principalId}: ${r.status}${r.version !== null ? ` (version ${r.version}, ${r.changedAt})` : ''}\n`,
            );
            if (change.exportsDeleted !== undefined && name === 'withdraw')
              process.stdout.write(`deleted ${change.exportsDeleted} stored export(s) containing its runs\n`);
          }
          return EXIT.ok;
        }),
      );
  consentCommand('grant', 'grant consent: runs started from now on may be exported');
  consentCommand(
    'withdraw',
    'withdraw consent: no run of the principal is exported again; stored exports with its runs are deleted',
  );
  consentCommand('show', 'print the current consent record');
}

/** `agent trajectory export`: the documents to --out or stdout, progress and summary to stderr. */
async function runExport(p: Platform, opts: ExportOpts): Promise<number> {
  const filters = parseFilters(opts);
  // Unwritable target: refused before the database is read.
  const file = opts.out !== undefined ? AtomicLineFile.open(opts.out) : AtomicLineFile.temporary();
  let summary;
  try {
    const result = await p.trajectories.exporter.export(opts.tenant, filters, file.write, (pr) =>
      process.stderr.write(
        `  examined ${pr.scanned} · exported ${pr.exported} · skipped without consent ${pr.skippedNoConsent}\n`,
      ),
    );
    summary = result.summary;
    const written = await file.commit();
    if (opts.out === undefined) {
      await pipeline(fs.createReadStream(written), process.stdout, { end: false });
      await fs.promises.rm(written, { force: true });
    } else if (summary.cursor !== null) {
      await fs.promises.writeFile(`${written}.cursor`, `${summary.cursor}\n`);
    }
  } catch (e) {
    await file.discard();
    if (e instanceof TrajectoryVerificationError) {
      process.stderr.write(`error: ${e.message}\n`);
      return EXIT.failed;
    }
    throw e;
  }
  const s = summary;
  process.stderr.write(
    `exported ${s.exported} run(s) (${s.byLabel.succeeded} succeeded, ${s.byLabel.failed} failed) of ${s.scanned} examined; ` +
      `skipped ${s.skippedNoConsent} without consent; ${s.redactions} credential(s) redacted; ${s.bytes} bytes` +
      `${opts.out !== undefined ? ` → ${opts.out}` : ''}\n`,
  );
  if (s.heldBack)
    process.stderr.write('note: a transaction still in progress held the export back; resume later with --cursor\n');
  if (s.cursor !== null) process.stderr.write(`cursor: ${s.cursor}\n`);
  return EXIT.ok;
}

function parseFilters(o: ExportOpts): ExportFilters {
  if (!['completed', 'failed', 'all'].includes(o.status))
    throw new ValidationError(`--status must be completed, failed or all (got ${o.status})`, { field: 'status' });
  let limit: number | undefined;
  if (o.limit !== undefined) {
    limit = Number(o.limit);
    if (!Number.isInteger(limit) || limit < 1)
      throw new ValidationError(`--limit must be a positive integer (got ${o.limit})`, { field: 'limit' });
  }
  return {
    sessionId: o.session,
    runId: o.run,
    since: o.since,
    status: o.status as ExportStatusFilter,
    cursor: o.cursor,
    limit,
  };
}
