import { WORKER } from '../domain/deciders/decider';
import { AgentError } from '../domain/errors';
import {
  EXTRACTED_CONFIDENCE,
  extractFacts,
  formationInvocationId,
  type FormationProposal,
} from '../domain/memory/formation';
import { statementKey } from '../domain/memory/memory-record';
import { provenanceOf, type Provenance, type SeenText, type UntrustedText } from '../domain/memory/provenance';
import type { Principal } from '../domain/principal';
import type { Clock, IdFactory } from '../ports/clock';
import type { EventStore } from '../ports/event-store';
import type { Logger } from '../ports/logger';
import type { FormationDue, FormationLedger, FormationOutcome } from '../ports/memory-formation';
import type { MemoryStore } from '../ports/memory-records';
import { rememberedBy, seenBy } from '../tools/memory-records/memory-tools';
import type { HousekeepingTask } from './housekeeping-worker';
import { proposeWithModel } from './memory-formation-model';
import type { ModelRoute } from './model-router';

export interface MemoryFormationDeps {
  readonly mode: 'extractive' | 'model';
  readonly ledger: FormationLedger;
  readonly memories: MemoryStore;
  readonly events: Pick<EventStore, 'listRunEvents'>;
  readonly clock: Clock;
  readonly ids: IdFactory;
  readonly log: Logger;
  /** The model route of model-assisted formation for a run's own policy (or the fixed one). */
  readonly routeFor?: (runModelPolicy: string) => ModelRoute;
  readonly everyMs?: number;
}

/** Runs completed this long ago are still formed (a worker that was down catches up); older ones are not. */
export const FORMATION_LOOKBACK_MS = 60 * 60 * 1000;
/** A claim older than this belongs to a worker that died: another takes it over. */
export const FORMATION_LEASE_MS = 60 * 1000;
const MODEL_DEADLINE_MS = 30 * 1000;

/** One proposal with the provenance deterministic code decided for it. */
interface Decided {
  readonly statement: string;
  readonly subject: string | null;
  readonly provenance: Provenance;
  readonly confidence: number | null;
}

const fromExtraction = (p: FormationProposal): Decided => ({
  statement: p.statement,
  subject: p.subject,
  provenance: { trust: 'user', attribution: null, sourceEvents: [p.source] },
  confidence: EXTRACTED_CONFIDENCE,
});

/**
 * End-of-run memory formation (MEMORY_FORMATION, ADR 0043), a housekeeping task of every worker:
 * each completed top-level run is claimed in the ledger, its user messages (and, for the model,
 * its untrusted tool output) turned into proposals, and every proposal written through the same
 * store and decider as `memory.remember` — credentials, injections and transient details refused,
 * duplicates reinforced, conflicts recorded. The writes are keyed on the run id (idempotent), and the
 * ledger row is finished last, so a worker that dies mid-way leaves a claim another worker completes.
 */
export class MemoryFormationTask implements HousekeepingTask {
  readonly name = 'memory-formation';
  readonly everyMs: number;

  constructor(private readonly d: MemoryFormationDeps) {
    this.everyMs = d.everyMs ?? 1000;
  }

  async run(): Promise<number> {
    const now = this.d.clock.nowMs();
    const stale = new Date(now - FORMATION_LEASE_MS).toISOString();
    const due = await this.d.ledger.due(new Date(now - FORMATION_LOOKBACK_MS).toISOString(), stale, 20);
    let formed = 0;
    for (const run of due) {
      if (!(await this.d.ledger.claim(run, this.d.clock.nowIso(), stale))) continue;
      const outcome = await this.form(run);
      await this.d.ledger.finish(run, this.d.clock.nowIso(), outcome);
      formed += 1;
    }
    return formed;
  }

  /** Forms one run's memories (the run is claimed). */
  async form(run: FormationDue): Promise<FormationOutcome> {
    const principal: Principal = {
      tenantId: run.tenantId,
      principalId: run.principalId,
      roles: new Set(),
      scopes: new Set(),
    };
    const events = await this.d.events.listRunEvents(run.runId, principal);
    const seen = seenBy(events);
    const remembered = rememberedBy(events);
    let fallback: string | null = null;
    let proposals: Decided[] | null = null;
    if (this.d.mode === 'model') {
      const r = await this.modelProposals(run, seen.user, seen.untrusted, remembered);
      if (typeof r === 'string') fallback = r;
      else proposals = r;
    }
    proposals ??= extractFacts(seen.user, remembered).map(fromExtraction);
    let written = 0;
    let refused = 0;
    for (const p of proposals) {
      if (await this.write(run, principal, p)) written += 1;
      else refused += 1;
    }
    if (fallback) this.d.log.warn('memory formation fell back to extractive', { runId: run.runId, reason: fallback });
    const mode = this.d.mode === 'model' && fallback === null ? 'model' : 'extractive';
    return { mode, proposed: proposals.length, written, refused, fallback };
  }

  private async modelProposals(
    run: FormationDue,
    user: readonly SeenText[],
    untrusted: readonly UntrustedText[],
    remembered: ReadonlySet<string>,
  ): Promise<Decided[] | string> {
    if (!this.d.routeFor) return 'no model route';
    let route: ModelRoute;
    try {
      route = this.d.routeFor(run.modelPolicy);
    } catch (e) {
      return `model policy cannot be routed: ${e instanceof Error ? e.message : String(e)}`.slice(0, 300);
    }
    const deadline = this.d.clock.nowMs() + MODEL_DEADLINE_MS;
    const r = await proposeWithModel(route, user, untrusted, this.d.ids.uuid(), deadline);
    if (typeof r === 'string') return r;
    const fresh = r.filter((p) => !remembered.has(statementKey(p.statement)));
    // The model proposes; deterministic code decides where each statement came from (ADR 0035).
    return fresh.map((p) => ({
      statement: p.statement,
      subject: p.subject,
      provenance: provenanceOf(p.statement, user, untrusted),
      confidence: null,
    }));
  }

  /** Writes one proposal through the memory decider; false when the policy refuses it. */
  private async write(run: FormationDue, principal: Principal, p: Decided): Promise<boolean> {
    try {
      await this.d.memories.remember({
        principal,
        actor: WORKER,
        candidate: {
          statement: p.statement,
          subject: p.subject,
          scope: 'principal',
          agentId: run.agentId,
          sensitivity: 'personal',
          trust: p.provenance.trust,
          attribution: p.provenance.attribution,
          confidence: p.provenance.trust === 'user' ? p.confidence : null,
          sourceEvents: p.provenance.sourceEvents,
          sourceSessionId: run.sessionId,
          sourceRunId: run.runId,
          invocationId: formationInvocationId(run.runId, p.statement),
        },
      });
      return true;
    } catch (e) {
      if (e instanceof AgentError) return false;
      throw e;
    }
  }
}
