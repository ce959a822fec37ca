import type { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { CommandBus } from '@nestjs/cqrs';
import { AppModule } from '../../../composition/app.module';
import type { Platform } from '../../../composition/platform';
import { statementKey } from '../../../domain/memory/memory-record';
import type { MemoryCase } from './memory-cases';
import { checkStep, driveTurn, Script, type MemoryCaseResult, type RecallProbe } from './memory-runner';

/** The suite's figures: recall@1/@3 over every recall probe, and the policy-failure count. */
export interface MemorySuiteSummary {
  readonly passed: number;
  readonly failed: number;
  readonly probes: number;
  /** Null when no case probed recall. */
  readonly recallAt1: number | null;
  readonly recallAt3: number | null;
  readonly policyFailures: number;
}

export function summarize(results: readonly MemoryCaseResult[]): MemorySuiteSummary {
  const probes = results.flatMap((r) => r.probes);
  const share = (k: number) =>
    probes.length === 0
      ? null
      : Math.round((probes.filter((p) => p.rank !== null && p.rank <= k).length / probes.length) * 1000) / 1000;
  return {
    passed: results.filter((r) => r.status === 'passed').length,
    failed: results.filter((r) => r.status === 'failed').length,
    probes: probes.length,
    recallAt1: share(1),
    recallAt3: share(3),
    policyFailures: results.reduce((n, r) => n + r.policyFailures, 0),
  };
}

/** The owner's memories and the tenants' text at the end of the script, against `expect`. */
async function checkEnd(platform: Platform, c: MemoryCase, script: Script): Promise<string[]> {
  const failures: string[] = [];
  const me = script.principals.me;
  if (c.memories !== null) {
    const rows = (
      await platform.db.query<{ statement: string; status: string; trust: string }>(
        `SELECT statement, status, trust FROM memory_records
          WHERE tenant_id = $1 AND owner_principal_id = $2 AND statement IS NOT NULL ORDER BY created_at`,
        [me.tenantId, me.principalId],
      )
    ).rows;
    const have = rows.map((r) => `${statementKey(r.statement)} [${r.status}]`).sort();
    const want = c.memories.map((m) => `${statementKey(m.statement)} [${m.status}]`).sort();
    if (JSON.stringify(have) !== JSON.stringify(want))
      failures.push(`policy: memories are ${JSON.stringify(have)}, expected ${JSON.stringify(want)}`);
    for (const m of c.memories.filter((x) => x.trust !== null)) {
      const row = rows.find((r) => statementKey(r.statement) === statementKey(m.statement));
      if (row && row.trust !== m.trust)
        failures.push(`policy: "${m.statement}" has trust ${row.trust}, not ${m.trust}`);
    }
  }
  for (const a of c.absent) {
    const found = await platform.db.query(
      `SELECT 1 FROM memory_records WHERE tenant_id = ANY($1) AND (statement ILIKE $2 OR subject ILIKE $2) LIMIT 1`,
      [script.tenants, `%${a.replace(/[\\%_]/g, (x) => `\\${x}`)}%`],
    );
    if (found.rows.length > 0) failures.push(`policy: a memory holds "${a}"`);
  }
  return failures;
}

async function runCase(platform: Platform, commands: CommandBus, c: MemoryCase, nonce: string) {
  const t0 = Date.now();
  const script = new Script(platform, commands, `eval-memory-${nonce}-${c.id}`);
  const failures: string[] = [];
  const probes: RecallProbe[] = [];
  let runId: string | null = null;
  try {
    for (const [i, step] of c.steps.entries()) {
      const principal = script.principals[step.as];
      const sid = await script.session(step);
      if (step.file) await script.putFile(sid, principal, step.file);
      const { run, asked } = await driveTurn(platform, commands, principal, step, sid);
      runId = run?.id ?? runId;
      const where = `step ${i + 1} ("${(step.say ?? '').slice(0, 40)}")`;
      if (!run || run.status !== 'completed') {
        failures.push(`${where}: the run ended ${run?.status ?? 'nowhere'}`);
        break;
      }
      if (step.approve !== null && !asked) failures.push(`${where}: no approval was asked`);
      const r = await checkStep(platform, step, run.id, run.finalText ?? '');
      probes.push(...r.probes);
      failures.push(...r.failures.map((f) => `${where}: ${f}`));
    }
    failures.push(...(await checkEnd(platform, c, script)));
  } catch (e) {
    failures.push(`harness error: ${e instanceof Error ? e.message : String(e)}`);
  }
  const result: MemoryCaseResult = {
    name: c.id,
    status: failures.length === 0 ? 'passed' : 'failed',
    failures,
    durationMs: Date.now() - t0,
    runId,
    pendingReason: null,
    category: c.category,
    probes,
    policyFailures: failures.filter((f) => f.includes('policy: ')).length,
  };
  return result;
}

/**
 * Runs the memory suite: each case in tenants of its own (named with `nonce`, so a second run of
 * the suite on the same database starts from nothing), its turns one after another.
 */
export async function runMemorySuite(
  platform: Platform,
  cases: readonly MemoryCase[],
  opts: { readonly onResult?: (r: MemoryCaseResult) => void; readonly nonce?: string } = {},
): Promise<{ results: MemoryCaseResult[]; summary: MemorySuiteSummary }> {
  const app: INestApplicationContext = await NestFactory.createApplicationContext(
    AppModule.forPlatform(platform, { http: false }),
    { logger: false },
  );
  const nonce = opts.nonce ?? platform.ids.uuid().slice(0, 8);
  try {
    const commands = app.get(CommandBus);
    const results: MemoryCaseResult[] = [];
    for (const c of cases) {
      const r = await runCase(platform, commands, c, nonce);
      results.push(r);
      opts.onResult?.(r);
    }
    return { results, summary: summarize(results) };
  } finally {
    await app.close();
  }
}

export function formatMemorySummary(s: MemorySuiteSummary): string {
  return [
    `memory suite: ${s.passed} passed, ${s.failed} failed`,
    `recall@1 ${s.recallAt1?.toFixed(3) ?? 'n/a'} · recall@3 ${s.recallAt3?.toFixed(3) ?? 'n/a'} (${s.probes} probes) · policy failures ${s.policyFailures}`,
  ].join('\n');
}
