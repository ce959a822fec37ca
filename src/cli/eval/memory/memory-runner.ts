import * as fs from 'node:fs';
import * as path from 'node:path';
import type { CommandBus } from '@nestjs/cqrs';
import { ResolveApprovalCommand } from '../../../application/approvals/commands';
import { SubmitMessageCommand } from '../../../application/runs/submit-message';
import { CreateSessionCommand } from '../../../application/sessions/create-session';
import type { Platform } from '../../../composition/platform';
import { statementKey } from '../../../domain/memory/memory-record';
import { LOCAL_PRINCIPAL, type Principal } from '../../../domain/principal';
import { sessionWorkspaceDir } from '../../../composition/workspaces';
import type { EvalResult } from '../eval-result';
import type { Actor, MemoryCategory, MemoryStep } from './memory-cases';

/** One recall probe: the right memory's rank among what its run retrieved (null: not retrieved). */
export interface RecallProbe {
  readonly expected: string;
  readonly rank: number | null;
}

export interface MemoryCaseResult extends EvalResult {
  readonly category: MemoryCategory;
  readonly probes: readonly RecallProbe[];
  /** Failed policy checks: a leak, a deleted or untrusted memory retrieved or stored, a credential kept. */
  readonly policyFailures: number;
}

const TERMINAL = ['completed', 'failed', 'cancelled', 'interrupted'];
const TURN_TIMEOUT_MS = 30_000;

/** What one case's script has open: its principals and their sessions. */
class Script {
  readonly principals: Record<Actor, Principal>;
  readonly tenants: string[];
  private readonly sessions = new Map<string, string>();

  constructor(
    private readonly platform: Platform,
    private readonly commands: CommandBus,
    tenant: string,
  ) {
    const as = (tenantId: string, principalId: string): Principal => ({ ...LOCAL_PRINCIPAL, tenantId, principalId });
    this.principals = { me: as(tenant, 'me'), peer: as(tenant, 'peer'), stranger: as(`${tenant}-other`, 'me') };
    this.tenants = [tenant, `${tenant}-other`];
  }

  async session(step: MemoryStep): Promise<string> {
    const key = `${step.as}:${step.session}`;
    let id = this.sessions.get(key);
    if (!id) {
      id = ((await this.commands.execute(new CreateSessionCommand(this.principals[step.as]))) as { id: string }).id;
      this.sessions.set(key, id);
    }
    return id;
  }

  /** Puts a file in the session's workspace, where the workspace tools read it (no run wrote it). */
  async putFile(sessionId: string, principal: Principal, file: { name: string; text: string }): Promise<void> {
    const ws = await sessionWorkspaceDir(this.platform.settings, principal.tenantId, sessionId);
    fs.writeFileSync(path.join(ws, file.name), file.text);
  }
}

/**
 * Drives one turn to its end with a worker restricted to its run, answering the approval the step
 * expects (`forget`). Returns the run and whether an approval was asked.
 */
async function driveTurn(
  platform: Platform,
  commands: CommandBus,
  principal: Principal,
  step: MemoryStep,
  sid: string,
) {
  const overrides = step.model ? { modelPolicy: `fake:${step.model}` } : {};
  const submitted = await commands.execute(new SubmitMessageCommand(principal, sid, step.say ?? '', null, overrides));
  const runId = (submitted as { runId: string }).runId;
  const worker = platform.createWorker({ onlyRunId: runId, concurrency: 1, pollIntervalMs: 50, drainMs: 0 });
  await worker.start();
  let asked = false;
  try {
    const end = Date.now() + TURN_TIMEOUT_MS;
    for (;;) {
      const run = await platform.runs.get(runId, null);
      if (run && TERMINAL.includes(run.status)) return { run, asked };
      if (Date.now() > end) return { run: run ?? null, asked };
      for (const a of await platform.toolRecords.pendingApprovalsOfRun(runId)) {
        asked = true;
        if (step.approve === null) continue;
        const decision = step.approve ? 'approve_once' : 'deny';
        await commands.execute(new ResolveApprovalCommand(principal, a.id, decision, step.approve ? null : 'eval: no'));
      }
      await new Promise((r) => setTimeout(r, 25));
    }
  } finally {
    await worker.stop(0);
  }
}

interface Retrieved {
  readonly id: string;
  readonly rank: number;
  readonly purpose: string;
  readonly statement: string | null;
  readonly subject: string | null;
  readonly status: string;
  /** The memory was deleted before this retrieval (a policy failure: deleted memories are never retrieved). */
  readonly deletedBefore: boolean;
}

/** Every memory the run's `memory.retrieved` traces name, with its current text and status. */
async function retrievedBy(platform: Platform, runId: string): Promise<Retrieved[]> {
  const run = await platform.runs.get(runId, null);
  const events = run ? await platform.store.listRunEvents(runId, { ...LOCAL_PRINCIPAL, tenantId: run.tenantId }) : [];
  const traces = events.flatMap((e) =>
    e.type === 'memory.retrieved'
      ? e.data.items.map((i) => ({ memoryId: i.memoryId, rank: i.rank, purpose: e.data.purpose, at: e.id }))
      : [],
  );
  const deletions = new Map(
    (
      await platform.db.query<{ memory_id: string; id: string }>(
        `SELECT payload->>'memoryId' AS memory_id, min(id) AS id FROM events
          WHERE event_type = 'memory.deleted' AND payload->>'memoryId' = ANY($1::text[]) GROUP BY 1`,
        [traces.map((t) => t.memoryId)],
      )
    ).rows.map((r) => [r.memory_id, Number(r.id)]),
  );
  const rows = (
    await platform.db.query<{ id: string; statement: string | null; subject: string | null; status: string }>(
      `SELECT id, statement, subject, status FROM memory_records WHERE id = ANY($1::uuid[])`,
      [traces.map((t) => t.memoryId)],
    )
  ).rows;
  const byId = new Map(rows.map((r) => [r.id, r]));
  return traces.map((t) => {
    const r = byId.get(t.memoryId);
    const row = { statement: r?.statement ?? null, subject: r?.subject ?? null, status: r?.status ?? 'missing' };
    const deletedAt = deletions.get(t.memoryId);
    const deletedBefore = deletedAt !== undefined && deletedAt < t.at;
    return { id: t.memoryId, rank: t.rank, purpose: t.purpose, ...row, deletedBefore };
  });
}

/** The rank of the right memory: in the run's explicit recall when it made one, else in its snapshot. */
export function rankOf(retrieved: readonly Retrieved[], expected: string): number | null {
  const key = statementKey(expected);
  const recall = retrieved.filter((r) => r.purpose === 'recall');
  const pool = recall.length > 0 ? recall : retrieved.filter((r) => r.purpose === 'snapshot');
  const hit = pool.find((r) => r.statement !== null && statementKey(r.statement) === key);
  return hit ? hit.rank : null;
}

/** The checks of one step's run; failures are labelled `policy:` when they are policy failures. */
export async function checkStep(platform: Platform, step: MemoryStep, runId: string, finalText: string) {
  const failures: string[] = [];
  const probes: RecallProbe[] = [];
  const retrieved = await retrievedBy(platform, runId);
  if (step.recall !== null) {
    const rank = rankOf(retrieved, step.recall);
    probes.push({ expected: step.recall, rank });
    if (rank === null || rank > 3)
      failures.push(`"${step.recall}" not in the top 3 retrieved (rank ${rank ?? 'none'})`);
  }
  // A memory this very run deleted ("forget") was in its snapshot before; one deleted earlier never may be.
  for (const r of retrieved)
    if (r.deletedBefore || r.status === 'missing') failures.push(`policy: retrieved deleted memory ${r.id}`);
  for (const n of step.never) {
    const needle = n.toLowerCase();
    const leaked = retrieved.filter((r) => `${r.subject ?? ''} ${r.statement ?? ''}`.toLowerCase().includes(needle));
    if (leaked.length > 0) failures.push(`policy: retrieved "${n}" (memory ${leaked[0].id})`);
    if (finalText.toLowerCase().includes(needle)) failures.push(`policy: the answer holds "${n}"`);
  }
  for (const want of step.answerContains)
    if (!finalText.includes(want)) failures.push(`the answer does not hold "${want}": ${finalText.slice(0, 200)}`);
  return { failures, probes };
}

export { Script, driveTurn };
